// libFuzzer target for `ess-sim launch`: any pair of launch and benchmark commands must either
// translate into a scenario that loads or raise ConfigError. Anything else (another exception, a
// crash, a sanitizer report) is a bug. The input is the launch command, a newline, the client's.
//
//   .ci/fuzz runs every target; by hand:
//   build/fuzz/tests/launch_fuzz -max_total_time=60 build/fuzz/corpus-launch tests/fuzz/corpus/launch
// fuzz links: ess_config  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/launch_command.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto newline = text.find('\n');
  ess::LaunchRequest q;
  q.serve = std::string(text.substr(0, newline));
  q.bench = newline == std::string_view::npos ? std::string() : std::string(text.substr(newline + 1));
  q.hardware = "h200-sxm";
  try {
    (void)ess::translate_launch(q);
  } catch (const ess::ConfigError&) {
    // Bad input, reported properly.
  }
  return 0;
}
