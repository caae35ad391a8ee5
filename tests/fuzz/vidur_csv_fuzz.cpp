// libFuzzer target for the Vidur compute and network CSV readers (calibration/measurements.h):
// any input must either load or raise MeasurementError. Anything else (another exception, a
// crash, a sanitizer report) is a bug. Vidur records the GPU only in the file name, so each
// input is read under a compute and a network file name, and with the GPU filter on and off.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target vidur_csv_fuzz
//   UBSAN_OPTIONS=halt_on_error=1 build/fuzz/tests/vidur_csv_fuzz -max_total_time=60 build/fuzz/corpus-vidur \
//     tests/fuzz/corpus/vidur_csv
// fuzz links: ess_calibration  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "calibration/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* origin : {"compute_a100_fuzz.csv", "network_a100_dgx_fuzz.csv"}) {
    for (const char* gpu : {"", "A100"}) {
      ess::ReadOptions options;
      options.gpu = gpu;
      try {
        (void)ess::read_measurement_text(text, origin, options);
      } catch (const ess::MeasurementError&) {
        // Bad input, reported properly.
      }
    }
  }
  return 0;
}
