#include "sim/metrics/bands.h"

#include <cmath>
#include <string>

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
