// libFuzzer target for the DeepSeek table readers (calibration/measurements.h: DeepGEMM, FlashMLA,
// DeepEP low-latency and normal, the PCIe block sweep), including the comment lines before their
// header: any input must either load or raise MeasurementError. Anything else (another exception,
// a crash, a sanitizer report) is a bug. Each input is read with and without a GPU filter and with
// nodes of 8 and of 1 GPU (the DeepEP reader checks EP against the node).
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target deepseek_csv_fuzz
//   UBSAN_OPTIONS=halt_on_error=1 build/fuzz/tests/deepseek_csv_fuzz -max_total_time=60 build/fuzz/corpus-deepseek \
//     tests/fuzz/corpus/deepseek_csv
// fuzz links: ess_calibration  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calibration/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* gpu : {"", "H800"}) {
    for (const int per_node : {8, 1}) {
      ess::ReadOptions options;
      options.gpu = gpu;
      options.gpus_per_node = per_node;
      try {
        (void)ess::read_measurement_text(text, "deepseek.csv", options);
      } catch (const ess::MeasurementError&) {
        // Bad input, reported properly.
      }
    }
  }
  return 0;
}
