#include "kernels/runner/environment.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <limits.h>

namespace ess::runner {

namespace {

bool is_dotted_number(std::string_view token) {
  if (token.empty() || !std::isdigit(static_cast<unsigned char>(token.front())) ||
      !std::isdigit(static_cast<unsigned char>(token.back()))) {
    return false;
  }
  bool dot = false;
  for (std::size_t i = 0; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '.') {
      if (token[i - 1] == '.') return false;
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot;
}

}  // namespace

std::string parse_driver_version(std::string_view proc_text) {
  const std::string_view line = proc_text.substr(0, proc_text.find('\n'));
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::string_view token = line.substr(start, i - start);
    if (is_dotted_number(token)) return std::string(token);
  }
  return "unknown";
}

std::string read_driver_version(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return "unknown";
  std::string first;
  std::getline(in, first);
  return parse_driver_version(first);
}

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string format_cublas_version(int version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

std::string utc_iso8601(std::time_t time) {
  std::tm parts{};
  gmtime_r(&time, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

std::string host_name() {
  char buffer[HOST_NAME_MAX + 1] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0') return "unknown";
  return buffer;
}

}  // namespace ess::runner
