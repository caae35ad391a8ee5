// libFuzzer target for the measurement readers (calibration/measurements.h), whatever the text:
// any input must either load or raise MeasurementError. Anything else (another exception, a
// crash, a sanitizer report) is a bug. The readers recognise the format from the content, so this
// target reaches the ess-bench JSON reader and, from CSV-looking inputs, the table readers.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target measurements_fuzz
//   UBSAN_OPTIONS=halt_on_error=1 build/fuzz/tests/measurements_fuzz -max_total_time=60 build/fuzz/corpus-measurements \
//     tests/fuzz/corpus/measurements
// fuzz links: ess_calibration  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calibration/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ess::read_measurement_text(text, "fuzz-input.json", ess::ReadOptions{});
  } catch (const ess::MeasurementError&) {
    // Bad input, reported properly.
  }
  return 0;
}
