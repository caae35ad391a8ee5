// Calibrating the GEMM model (models/gemm.h) from measured GEMM times.
//
// The roofline is not linear in its parameters, so the six parameters of hardware.kernels.gemm
// (efficiencies, ramps, overhead, and the transition exponent of a smooth roofline: measured
// GEMMs near the ridge point are slower than either roof alone) are fitted by
// Levenberg-Marquardt on log(predicted / measured), from 16 starting points; efficiencies stay in
// (0, 1), ramps and overhead >= 0 and the transition in (1, 64) by construction (logistic and
// exponential parametrisations). The peaks and HBM bandwidth come from
// the hardware being calibrated (datasheet values) and are not fitted: the efficiencies absorb them.
#pragma once

#include <span>

#include "models/gemm.h"
#include "models/hardware.h"

namespace ess {

struct GemmPoint {
  GemmShape shape;
  double seconds = 0.0;  // measured kernel time, > 0
};

// Fits hardware.kernels.gemm to points[use[...]] (every point when `use` is empty).
// Throws FitError with fewer than 6 points, InputError on a bad shape, and
// UnsupportedError if the GPU has no peak for a point's dtype.
[[nodiscard]] RooflineParams fit_gemm(std::span<const GemmPoint> points, std::span<const std::size_t> use,
                                      const Hardware& hw);

// One grouped (MoE expert) GEMM measured: shape.m_total rows spread evenly over shape.groups groups
// (DeepGEMM's benchmarks give every group the same rows).
struct GroupedGemmPoint {
  GroupedGemmShape shape;
  double seconds = 0.0;  // measured kernel time, > 0
};

// Fits hardware.kernels.grouped_gemm the same way (the FLOP and bytes of grouped_gemm(), padding
// included). Same errors.
[[nodiscard]] RooflineParams fit_grouped_gemm(std::span<const GroupedGemmPoint> points,
                                              std::span<const std::size_t> use, const Hardware& hw);

}  // namespace ess
