#include "models/gemm_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "models/fit.h"
#include "models/roofline.h"
#include "sim/base/error.h"

namespace ess {

namespace {


// Scales that keep the five unknowns near 1 in size (the LM step sizes are relative).
constexpr double kFlopScale = 1e9;    // compute_ramp = exp(x) GFLOP
constexpr double kByteScale = 1e6;    // memory_ramp = exp(x) MB
constexpr double kTimeScale = 1e-6;   // kernel_overhead = exp(x) us

RooflineParams decode(const Eigen::VectorXd& x) {
  RooflineParams p;
  p.compute_efficiency = logistic(x[0]);
  p.compute_ramp = Flops(std::exp(x[1]) * kFlopScale);
  p.memory_efficiency = logistic(x[2]);
  p.memory_ramp = Bytes(std::exp(x[3]) * kByteScale);
  p.kernel_overhead = Seconds(std::exp(x[4]) * kTimeScale);
  // The transition exponent p = 1 + 63 logistic(x): anywhere in (1, 64).
  p.transition = 1.0 + 63.0 * logistic(x[5]);
  return p;
}

struct Work {
  double flops, peak, bytes, bandwidth, seconds;
};

}  // namespace

namespace {

RooflineParams fit_roofline(const std::vector<Work>& work, const char* what);

}  // namespace

RooflineParams fit_gemm(std::span<const GemmPoint> points, std::span<const std::size_t> use, const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_gemm");
  if (idx.size() < 6) throw FitError("the GEMM model has 6 parameters; need at least 6 GEMM points, got " + std::to_string(idx.size()));
  std::vector<Work> work;
  work.reserve(idx.size());
  for (const std::size_t i : idx) {
    const GemmPoint& pt = points[i];
    if (!(pt.seconds > 0.0)) throw InputError("fit_gemm: a measured time must be > 0");
    const KernelCost c = gemm(pt.shape, hw);  // validates the shape; flops and bytes as the model counts them
    work.push_back({c.flops.value(), hw.gpu.peak_compute.at(pt.shape.dtype, hw.gpu.kind).value(), c.bytes.value(),
                    hw.gpu.hbm_bandwidth.value(), pt.seconds});
  }
  return fit_roofline(work, "GEMM");
}

RooflineParams fit_grouped_gemm(std::span<const GroupedGemmPoint> points, std::span<const std::size_t> use,
                                const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_grouped_gemm");
  if (idx.size() < 6) {
    throw FitError("the grouped GEMM model has 6 parameters; need at least 6 grouped GEMM points, got " +
                   std::to_string(idx.size()));
  }
  std::vector<Work> work;
  work.reserve(idx.size());
  for (const std::size_t i : idx) {
    const GroupedGemmPoint& pt = points[i];
    if (!(pt.seconds > 0.0)) throw InputError("fit_grouped_gemm: a measured time must be > 0");
    const KernelCost c = grouped_gemm(pt.shape, hw);
    work.push_back({c.flops.value(), hw.gpu.peak_compute.at(pt.shape.dtype, hw.gpu.kind).value(), c.bytes.value(),
                    hw.gpu.hbm_bandwidth.value(), pt.seconds});
  }
  return fit_roofline(work, "grouped GEMM");
}

namespace {

RooflineParams fit_roofline(const std::vector<Work>& work, const char* what) {
  // The same formula as roofline() (models/roofline.cpp), evaluated without its validation for speed;
  // the calibration driver re-checks every prediction through gemm() itself.
  const auto residuals = [&work](const Eigen::VectorXd& x) {
    const RooflineParams p = decode(x);
    Eigen::VectorXd r(static_cast<Eigen::Index>(work.size()));
    for (std::size_t i = 0; i < work.size(); ++i) {
      const Work& w = work[i];
      const double compute = (w.flops + p.compute_ramp.value()) / (w.peak * p.compute_efficiency);
      const double memory = (w.bytes + p.memory_ramp.value()) / (w.bandwidth * p.memory_efficiency);
      r[static_cast<Eigen::Index>(i)] =
          std::log((combine_roofs(compute, memory, p.transition) + p.kernel_overhead.value()) / w.seconds);
    }
    return r;
  };
  // Starting points spanning compute-efficient and memory-efficient regimes, small and large
  // ramps. The lowest minimum wins; minima whose costs differ only in their last digits are the
  // same minimum, and the earliest start among them is taken (first_near_best), so that the
  // choice is the same on every CPU.
  std::vector<LmResult> results;
  std::vector<double> costs;
  for (const double ec : {0.5, 0.85}) {
    for (const double em : {0.6, 0.9}) {
      for (const double ramp : {0.1, 10.0}) {
        for (const double transition : {2.0, 16.0}) {
          Eigen::VectorXd x0(6);
          x0 << logit(ec), std::log(ramp), logit(em), std::log(ramp), std::log(3.0), logit((transition - 1.0) / 63.0);
          results.push_back(levenberg_marquardt(residuals, x0, 300));
          costs.push_back(results.back().cost);
        }
      }
    }
  }
  const int best = first_near_best(costs);
  if (best < 0) throw FitError(std::string("the ") + what + " fit did not converge (every start gave a non-finite error)");
  RooflineParams p = decode(results[static_cast<std::size_t>(best)].x);
  // Parameters the data do not determine drift towards 0 and stop where the CPU's libm decides:
  // below their physical floors they are exactly 0 (models/fit.h).
  p.compute_ramp = Flops(zero_below(p.compute_ramp.value(), kRampFloorFlops));
  p.memory_ramp = Bytes(zero_below(p.memory_ramp.value(), kRampFloorBytes));
  p.kernel_overhead = Seconds(zero_below(p.kernel_overhead.value(), kTimeFloorSeconds));
  const double values[] = {p.compute_efficiency, p.compute_ramp.value(), p.memory_efficiency, p.memory_ramp.value(),
                           p.kernel_overhead.value(), p.transition};
  for (const double v : values) {
    if (!std::isfinite(v)) {
      throw FitError(std::string("the ") + what + " fit ended at a non-finite parameter: the points cannot be fitted");
    }
  }
  return p;
}

}  // namespace

}  // namespace ess
