// libFuzzer target for the PyTorch profiler (Kineto) trace reader with the built-in kernel-name
// mapping: any input must either load or raise TraceError. Anything else (another exception, a
// crash, a sanitizer report, a hang) is a bug.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target kineto_trace_fuzz
//   build/fuzz/tests/kineto_trace_fuzz -max_total_time=60 build/fuzz/corpus-kineto tests/fuzz/corpus/kineto_trace
// fuzz links: ess_validate  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "validate/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ess::CategoryMap map = ess::CategoryMap::builtin();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ess::parse_trace_text(text, "fuzz-input", &map);
  } catch (const ess::TraceError&) {
    // Bad input, reported properly.
  }
  return 0;
}
