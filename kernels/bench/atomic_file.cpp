#include "kernels/bench/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ess::bench {

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
