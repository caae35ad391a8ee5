// Calibrating the GEMM model (models/gemm.h) from measured GEMM times.
//
// The roofline is not linear in its parameters (a max of two terms), so the five parameters of
// hardware.kernels.gemm are fitted by Levenberg-Marquardt on log(predicted / measured), from
// several starting points; efficiencies stay in (0, 1) and ramps and overhead >= 0 by
// construction (logistic and exponential parametrisations). The peaks and HBM bandwidth come from
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
// Throws FitError with fewer than 5 points, std::invalid_argument on a bad shape, and
// UnsupportedError if the GPU has no peak for a point's dtype.
[[nodiscard]] RooflineParams fit_gemm(std::span<const GemmPoint> points, std::span<const std::size_t> use,
                                      const Hardware& hw);

}  // namespace ess
