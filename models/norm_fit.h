// Calibrating the memory-bound kernel model (hardware.kernels.memory_bound) from measured
// RMSNorm/LayerNorm times (models/norm.h).
//
// A memory-bound kernel costs  overhead + (bytes + memory_ramp) / (hbm_bandwidth x efficiency),
// which is affine in the bytes: the intercept cannot tell memory_ramp from kernel_overhead, so the
// fit sets memory_ramp = 0 and reads the intercept as kernel_overhead. Relative non-negative least
// squares over the columns [1, bytes / hbm_bandwidth]. The compute side of the parameters is kept
// from `hw` (norms count no FLOP).
#pragma once

#include <span>

#include "models/hardware.h"
#include "models/norm.h"

namespace ess {

struct NormPoint {
  NormShape shape;
  double seconds = 0.0;  // measured kernel time, > 0
};

// Fits hardware.kernels.memory_bound to points[use[...]] (every point when `use` is empty).
// Throws FitError with fewer than 2 points, when the points imply a bandwidth above the datasheet
// HBM bandwidth (efficiency > 1: the byte count or the datasheet figure is wrong), or when every
// point has the same size.
[[nodiscard]] RooflineParams fit_memory_bound(std::span<const NormPoint> points, std::span<const std::size_t> use,
                                              const Hardware& hw);

}  // namespace ess
