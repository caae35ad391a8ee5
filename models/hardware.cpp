#include "models/hardware.h"

namespace ess {

FlopsPerSecond PeakCompute::at(DType t, const std::string& gpu_kind) const {
  const std::optional<FlopsPerSecond>* peak = nullptr;
  switch (t) {
    case DType::fp32: peak = &fp32; break;
    case DType::bf16: peak = &bf16; break;
    case DType::fp16: peak = &fp16; break;
    case DType::fp8: peak = &fp8; break;
  }
  if (peak == nullptr || !peak->has_value()) {
    const std::string name(to_string(t));
    throw UnsupportedError(gpu_kind + " has no " + name +
                           " peak compute (hardware.gpu.peak_compute." + name + " is not set)");
  }
  return **peak;
}

}  // namespace ess
