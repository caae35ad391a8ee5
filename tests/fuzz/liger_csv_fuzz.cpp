// libFuzzer target for the Liger-Kernel benchmark CSV reader (calibration/measurements.h),
// including the JSON inside its extra_benchmark_config_str cells: any input must either load or
// raise MeasurementError. Anything else (another exception, a crash, a sanitizer report) is a
// bug. Each input is read with and without a GPU filter (the table holds several GPUs).
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target liger_csv_fuzz
//   UBSAN_OPTIONS=halt_on_error=1 build/fuzz/tests/liger_csv_fuzz -max_total_time=60 build/fuzz/corpus-liger \
//     tests/fuzz/corpus/liger_csv
// fuzz links: ess_calibration  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calibration/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* gpu : {"", "A100"}) {
    ess::ReadOptions options;
    options.gpu = gpu;
    try {
      (void)ess::read_measurement_text(text, "liger_norm_benchmarks.csv", options);
    } catch (const ess::MeasurementError&) {
      // Bad input, reported properly.
    }
  }
  return 0;
}
