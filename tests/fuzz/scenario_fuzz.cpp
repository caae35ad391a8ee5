// libFuzzer target for the scenario loader: any input must either load or raise ConfigError.
// Anything else (another exception, a crash, a sanitizer report) is a bug.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target scenario_fuzz
//   build/fuzz/tests/scenario_fuzz -max_total_time=60 build/fuzz/corpus scenarios
// fuzz links: ess_config  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ess::load_scenario_text(text, "fuzz-input");
  } catch (const ess::ConfigError&) {
    // Bad input, reported properly.
  }
  return 0;
}
