// libFuzzer target for --set overrides: any argument must either apply to the bundled scenario or
// raise ConfigError. Anything else (another exception, a crash, a sanitizer report) is a bug.
// The input is one --set argument per line (at most 8 lines).
//
//   .ci/fuzz runs every target; by hand:
//   build/fuzz/tests/set_fuzz -max_total_time=60 build/fuzz/corpus-set tests/fuzz/corpus/set
// fuzz links: ess_config  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/presets.h"
#include "sim/config/scenario.h"

namespace {
// A small scenario every --set applies to (the presets are embedded in the binary).
constexpr std::string_view kBase = R"({
  "schema": "ess-sim/scenario/v1", "model": "deepseek-v3.2-exp", "hardware": "h200-sxm",
  "parallelism": {"attention_dp": 8, "tensor_parallel": 1, "expert_parallel": 8},
  "workload": {"batch_per_gpu": 4, "context_length": 32768, "decode_steps": 2, "mtp": {"depth": 2, "acceptance": 1.7}},
  "cache": {"mode": "offload", "pool_ratio": 0.2}
})";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<ess::Override> overrides;
    std::size_t start = 0;
    while (start <= text.size() && overrides.size() < 8) {
      const auto end = text.find('\n', start);
      const std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      overrides.push_back(ess::parse_override(line));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    (void)ess::load_scenario_text(kBase, "fuzz-base", overrides);
  } catch (const ess::ConfigError&) {
    // Bad input, reported properly.
  }
  return 0;
}
