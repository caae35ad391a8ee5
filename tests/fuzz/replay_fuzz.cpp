// libFuzzer target for replay traces (sim/offload/access_trace.h): any bytes must either load, and
// then replay every recorded selection, or raise AccessTraceError. Anything else is a bug.
//
//   build/fuzz/tests/replay_fuzz -max_total_time=60 build/fuzz/corpus-replay tests/fuzz/corpus/replay
// fuzz links: ess_offload  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/offload/access_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    ess::ReplayAccess replay("fuzz-input", std::string(reinterpret_cast<const char*>(data), size));
    std::vector<std::int64_t> out;
    for (const auto& step : replay.steps()) {
      for (int layer = 0; layer < replay.layers(); ++layer) {
        for (int request = 0; request < replay.requests(); ++request) {
          replay.select(step.step, layer, request, step.context, out);
        }
      }
    }
  } catch (const ess::AccessTraceError&) {
    // Bad input, reported properly.
  }
  return 0;
}
