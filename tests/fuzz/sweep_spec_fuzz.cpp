// libFuzzer target for the sweep spec reader (sim/sweep/spec.h): any input must either parse, and
// then expand to its points, or raise ConfigError. Anything else is a bug.
//
//   build/fuzz/tests/sweep_spec_fuzz -max_total_time=60 build/fuzz/corpus-sweep tests/fuzz/corpus/sweep_spec
// fuzz links: ess_sweep  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/sweep/points.h"
#include "sim/sweep/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const ess::SweepSpec spec = ess::parse_sweep_spec(text, "fuzz-input", ".");
    // Expanding is linear in the points; the reader caps them at a million, which is slow to build
    // under the sanitizers, so only small specs are expanded.
    double points = 1.0;
    for (const auto& d : spec.dimensions) points *= static_cast<double>(spec.axes[d.front()].values.size());
    if (points <= 20000) {
      for (const auto& p : ess::expand_points(spec)) (void)p.overrides();
    }
  } catch (const ess::ConfigError&) {
    // Bad input, reported properly.
  }
  return 0;
}
