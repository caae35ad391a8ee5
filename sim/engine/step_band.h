// The calibration band of a run's step time: each calibrated parameter set's relative error
// (sim/config/profile.h, one sigma from k-fold cross-validation, transfers widened by the
// leave-one-GPU-out error) times the step time it priced (GpuStepTimes::by_params, mean per GPU
// and step), added in quadrature across sets. Within a set the error is taken as fully
// correlated (one wrong efficiency moves every kernel it prices), across sets as independent.
// First order: a set's time is moved by its error and nothing else moves with it (overlap that
// would hide or expose more is not re-simulated). Computed here, beside the run it reads, so that
// what prints a run (sim/metrics) and what tabulates runs (sim/serving's step tables) share it.
#pragma once

#include <array>

#include "sim/config/profile.h"
#include "sim/engine/simulation.h"

namespace ess {

struct StepBand {
  bool calibrated = false;  // the hardware has a band for some parameter set
  double step_time = 0.0;   // mean step time (s)
  double sigma = 0.0;       // one sigma of the step time (s)
  // Of the mean GPU step: time priced by parameter sets that have no band (datasheet values, or
  // models no measurement validated); the band says nothing about it.
  double unbanded_fraction = 0.0;
  std::array<double, kParamSetCount> time{};  // per set, mean per GPU and step (s)
  [[nodiscard]] double relative() const { return step_time > 0 ? sigma / step_time : 0.0; }
};

[[nodiscard]] StepBand step_band(const RunResult& r, const CalibrationBands& bands);

}  // namespace ess
