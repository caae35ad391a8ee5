#include "sim/metrics/bands.h"

#include <cmath>
#include <string>

namespace ess {

nlohmann::ordered_json band_json(const StepBand& b, double tokens_per_s_per_gpu) {
  if (!b.calibrated) return nullptr;
  nlohmann::ordered_json j;
  j["sigma_s"] = b.sigma;
  j["relative"] = b.relative();
  j["step_time_low_s"] = b.step_time - b.sigma;
  j["step_time_high_s"] = b.step_time + b.sigma;
  // Throughput is tokens / step time: its band follows (first order, the same relative width).
  j["tokens_per_s_per_gpu_low"] = tokens_per_s_per_gpu / (1.0 + b.relative());
  if (b.relative() < 1.0) {
    j["tokens_per_s_per_gpu_high"] = tokens_per_s_per_gpu / (1.0 - b.relative());
  } else {
    j["tokens_per_s_per_gpu_high"] = nullptr;  // a band as wide as the step: no upper bound
  }
  j["unbanded_fraction"] = b.unbanded_fraction;
  return j;
}

nlohmann::ordered_json band_breakdown_json(const StepBand& b, const CalibrationBands& bands) {
  nlohmann::ordered_json sets = nlohmann::ordered_json::array();
  for (std::size_t s = 1; s < kParamSetCount; ++s) {
    if (!(b.time[s] > 0)) continue;
    nlohmann::ordered_json e = {{"params", std::string(to_string(static_cast<ParamSet>(s)))}, {"time_s", b.time[s]}};
    if (bands[s]) {
      e["sigma"] = bands[s]->sigma;
      e["contribution_s"] = bands[s]->sigma * b.time[s];
      e["source"] = bands[s]->source;
    } else {
      e["sigma"] = nullptr;
      e["source"] = "no band: not validated by a measurement on this or a donor GPU";
    }
    sets.push_back(e);
  }
  return sets;
}

}  // namespace ess
