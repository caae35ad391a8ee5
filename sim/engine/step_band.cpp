#include "sim/engine/step_band.h"

#include <algorithm>
#include <cmath>

namespace ess {

StepBand step_band(const RunResult& r, const CalibrationBands& bands) {
  StepBand b;
  for (const auto& band : bands) b.calibrated = b.calibrated || band.has_value();
  double samples = 0.0;
  for (const auto& step : r.gpu_steps) {
    for (const auto& g : step) {
      for (std::size_t s = 0; s < kParamSetCount; ++s) b.time[s] += g.by_params[s];
      samples += 1.0;
    }
  }
  if (samples > 0) {
    for (double& t : b.time) t /= samples;
  }
  for (const double t : r.step_time) b.step_time += t;
  if (!r.step_time.empty()) b.step_time /= static_cast<double>(r.step_time.size());
  double variance = 0.0;
  double unbanded = 0.0;
  for (std::size_t s = 1; s < kParamSetCount; ++s) {  // 0 is ParamSet::none: no model priced it
    if (bands[s]) {
      variance += std::pow(bands[s]->sigma * b.time[s], 2);
    } else {
      unbanded += b.time[s];
    }
  }
  b.sigma = std::sqrt(variance);
  b.unbanded_fraction = b.step_time > 0 ? std::min(1.0, unbanded / b.step_time) : 0.0;
  return b;
}

}  // namespace ess
