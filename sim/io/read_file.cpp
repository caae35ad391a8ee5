#include "sim/io/read_file.h"

#include <fstream>
#include <system_error>

namespace ess {

ReadProblem read_whole_file(const std::filesystem::path& path, std::string& text, std::uint64_t max_bytes) {
  text.clear();
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);  // follows symbolic links
  if (ec || status.type() == std::filesystem::file_type::not_found) {
    return ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory
               ? ReadProblem::unreadable
               : ReadProblem::missing;
  }
  if (status.type() == std::filesystem::file_type::directory) return ReadProblem::directory;
  if (status.type() != std::filesystem::file_type::regular) return ReadProblem::not_regular;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return ReadProblem::unreadable;
  if (size > max_bytes) return ReadProblem::too_large;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ReadProblem::unreadable;
  // Read at most one byte past the cap, in case the file grows while it is read.
  std::string buffer(static_cast<std::size_t>(size), '\0');
  in.read(buffer.data(), static_cast<std::streamsize>(size));
  if (in.bad() || in.gcount() != static_cast<std::streamsize>(size)) return ReadProblem::unreadable;
  char extra = 0;
  while (in.read(&extra, 1)) {
    if (buffer.size() >= max_bytes) return ReadProblem::too_large;
    buffer.push_back(extra);
  }
  if (in.bad()) return ReadProblem::unreadable;
  text = std::move(buffer);
  return ReadProblem::none;
}

std::string describe(ReadProblem problem, std::uint64_t max_bytes) {
  switch (problem) {
    case ReadProblem::none: return "";
    case ReadProblem::missing: return "no such file";
    case ReadProblem::directory: return "is a directory, not a file";
    case ReadProblem::not_regular: return "is not a regular file (a FIFO, socket or device cannot be read as input)";
    case ReadProblem::too_large:
      return "is larger than the " + std::to_string(max_bytes >> 20) + " MiB limit for an input file";
    case ReadProblem::unreadable: return "cannot be read";
  }
  return "cannot be read";
}

}  // namespace ess
