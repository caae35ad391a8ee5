#include "sim/io/read_file.h"

#include <fstream>
#include <sstream>
#include <system_error>

namespace ess {

ReadProblem read_whole_file(const std::filesystem::path& path, std::string& text) {
  text.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ReadProblem::missing;
  if (std::filesystem::is_directory(path, ec)) return ReadProblem::directory;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ReadProblem::unreadable;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return ReadProblem::unreadable;
  text = buffer.str();
  return ReadProblem::none;
}

}  // namespace ess
