// The band of a serving run's TTFT, TPOT and output throughput: one sigma of ln(simulated /
// measured), two parts added in quadrature:
//  - calibration: the hardware's calibration band carried through the step tables (each point's
//    step_band, sim/engine/step_band.h, interpolated like its time): TPOT and throughput move with
//    the decode steps, sum of the steps' sigmas over the sum of their times (one parameter set's
//    error moves every step alike); TTFT with the prefill steps of a disaggregated run, else with
//    the same steps (colocated chunks share them; without prefill TTFT is a decode step). First
//    order: a step moved by its band moves each metric in proportion, queueing that would grow
//    or shrink with it is not re-simulated;
//  - engine: the engine model's own error on its release's serving benchmarks
//    (engine.serving_error_*: cross-validated by validate/fit-engine-host.sh), unknown (null) for a
//    release no benchmark measured, whose band is then the calibration band alone and too narrow.
// results.json's serving.band holds both parts, their sum and the metrics' low and high ends.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/serving/serving_loop.h"

namespace ess {

struct MetricBand {
  double calibration = 0.0;       // one sigma of ln(metric), from the calibration band
  std::optional<double> engine;   // one sigma of ln(metric), the engine model's own error
  [[nodiscard]] double sigma() const;  // the two in quadrature
};

struct ServingBand {
  bool calibrated = false;  // the hardware has a calibration band
  MetricBand ttft, tpot, throughput;
};

[[nodiscard]] ServingBand serving_band(const Scenario& s, const ServingRun& run);

// results.json's serving.band: per metric its parts, sigma and the metric's one-sigma range
// (mean x e^-sigma to mean x e^sigma).
[[nodiscard]] nlohmann::ordered_json serving_band_json(const ServingBand& b, double ttft_mean_s, double tpot_mean_s,
                                                       double output_tokens_per_s);
// The summary's line: each metric's one-sigma range ("TPOT -41%/+70%"), then the parts as sigmas
// of ln (calibration, engine model; TTFT / TPOT / throughput).
[[nodiscard]] std::string serving_band_text(const nlohmann::ordered_json& band);

}  // namespace ess
