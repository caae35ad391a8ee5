#include "kernels/bench/environment_text.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ess::bench {

namespace {

bool is_version_word(std::string_view w) {
  bool dot = false;
  bool digit = false;
  for (const char c : w) {
    if (c == '.') {
      dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      digit = true;
    } else {
      return false;
    }
  }
  return dot && digit && w.front() != '.' && w.back() != '.';
}

}  // namespace

std::string format_cuda_version(int encoded) {
  if (encoded < 1000) {
    throw std::invalid_argument("not a CUDA version number: " + std::to_string(encoded));
  }
  return std::to_string(encoded / 1000) + "." + std::to_string(encoded % 1000 / 10);
}

std::string format_nccl_version(int encoded) {
  if (encoded < 1000) {
    throw std::invalid_argument("not an NCCL version number: " + std::to_string(encoded));
  }
  // From 2.9 on the code has five digits; every older release (2.0-2.8) is below 10000.
  const int major = encoded >= 10000 ? encoded / 10000 : encoded / 1000;
  const int minor = encoded >= 10000 ? encoded % 10000 / 100 : encoded % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(encoded % 100);
}

std::string parse_driver_version(std::string_view proc_text) {
  const std::string_view first_line = proc_text.substr(0, proc_text.find('\n'));
  const std::size_t module = first_line.find("Kernel Module");
  if (module == std::string_view::npos) return "unknown";
  std::string_view rest = first_line.substr(module);
  while (!rest.empty()) {
    const std::size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \t"), rest.size());
    const std::string_view word = rest.substr(0, end);
    if (is_version_word(word)) return std::string(word);
    rest.remove_prefix(end);
  }
  return "unknown";
}

std::string iso8601_utc(std::time_t t) {
  const auto seconds = static_cast<std::int64_t>(t);
  std::int64_t days = seconds / 86400;
  std::int64_t second_of_day = seconds % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --days;
  }
  // civil_from_days (Hinnant): shift the epoch to 0000-03-01 so leap days end each 400-year era.
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);

  char buffer[96];  // room for any int64 year, so snprintf can never truncate
  std::snprintf(buffer, sizeof buffer, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                static_cast<long long>(year), static_cast<long long>(month),
                static_cast<long long>(day), static_cast<long long>(second_of_day / 3600),
                static_cast<long long>(second_of_day / 60 % 60),
                static_cast<long long>(second_of_day % 60));
  return buffer;
}

std::string read_driver_version(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return "unknown";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_driver_version(text);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

}  // namespace ess::bench
