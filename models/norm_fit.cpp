#include "models/norm_fit.h"

#include <algorithm>
#include <vector>

#include "models/check.h"
#include "models/fit.h"

namespace ess {

RooflineParams fit_memory_bound(std::span<const NormPoint> points, std::span<const std::size_t> use,
                                const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_memory_bound");
  if (idx.size() < 2) throw FitError("the norm model has 2 parameters; need at least 2 norm points, got " + std::to_string(idx.size()));
  const auto n = static_cast<Eigen::Index>(idx.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const NormPoint& pt = points[idx[static_cast<std::size_t>(r)]];
    const KernelCost c = norm(pt.shape, hw);
    a(r, 0) = 1.0;
    a(r, 1) = c.bytes.value() / hw.gpu.hbm_bandwidth.value();
    y[r] = pt.seconds;
  }
  const Eigen::VectorXd x = relative_nonnegative_least_squares(a, y);
  RooflineParams p = hw.kernels.memory_bound;
  // 1 / efficiency; exactly 1 (the datasheet bandwidth) may come out a rounding error below.
  if (!(x[1] >= 1.0 - 1e-9)) {
    throw FitError("the norm points imply " + check::number(100.0 / x[1]) +
                   "% of the datasheet HBM bandwidth (more than 100%): check hardware.gpu.hbm_bandwidth and the "
                   "bytes the norm model counts (models/norm.h)");
  }
  p.memory_efficiency = std::min(1.0, 1.0 / x[1]);
  p.memory_ramp = Bytes(0.0);
  p.kernel_overhead = Seconds(zero_below(x[0], kTimeFloorSeconds));  // below 1 ns: no overhead (models/fit.h)
  return p;
}

}  // namespace ess
