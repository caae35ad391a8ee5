// libFuzzer target for the ess-runner trace reader: any input must either load or raise
// TraceError. Anything else (another exception, a crash, a sanitizer report, a hang) is a bug.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target runner_trace_fuzz
//   build/fuzz/tests/runner_trace_fuzz -max_total_time=60 build/fuzz/corpus-runner tests/fuzz/corpus/runner_trace
// fuzz links: ess_validate  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "validate/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    // No category map: a Kineto-looking input is a TraceError too, so the runner reader is what runs.
    (void)ess::parse_trace_text(text, "fuzz-input", nullptr);
  } catch (const ess::TraceError&) {
    // Bad input, reported properly.
  }
  return 0;
}
