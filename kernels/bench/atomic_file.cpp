#include "kernels/bench/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ess::bench {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  const auto fail = [&](const std::string& what, int error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error("cannot " + what + ": " + std::strerror(error));
  };

  // stdio rather than ofstream: fclose reports a failed final flush (e.g. ENOSPC) with errno.
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  if (f == nullptr) fail("create " + temporary.string(), errno);
  const std::size_t written = std::fwrite(content.data(), 1, content.size(), f);
  const int write_error = written == content.size() ? 0 : errno;
  const bool flushed = std::fflush(f) == 0;
  const int flush_error = flushed ? 0 : errno;
  const bool closed = std::fclose(f) == 0;
  const int close_error = closed ? 0 : errno;
  if (write_error != 0 || written != content.size()) {
    fail("write " + temporary.string(), write_error != 0 ? write_error : EIO);
  }
  if (!flushed) fail("write " + temporary.string(), flush_error);
  if (!closed) fail("close " + temporary.string(), close_error);

  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) fail("rename " + temporary.string() + " to " + path.string(), ec.value());
}

void check_writable(const std::filesystem::path& path) {
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  if (f == nullptr) {
    const int error = errno;
    throw std::runtime_error("cannot create " + temporary.string() + ": " + std::strerror(error));
  }
  std::fclose(f);
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
}

}  // namespace ess::bench
