#include "models/collective_fit.h"

#include <cmath>
#include <string>
#include <vector>

#include "models/fit.h"

namespace ess {

namespace {

// Bytes crossing each GPU's links per buffer byte, as the model counts them.
using TrafficFactor = double (*)(int gpus);

AlphaBeta fit_alpha_beta(std::span<const CollectivePoint> points, std::span<const std::size_t> use,
                         TrafficFactor factor, const char* what) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "alpha-beta fit");
  const auto n = static_cast<Eigen::Index>(idx.size());
  if (n < 2) throw FitError(std::string(what) + ": need at least 2 points, got " + std::to_string(n));
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const CollectivePoint& p = points[idx[static_cast<std::size_t>(r)]];
    if (p.gpus < 2) throw std::invalid_argument(std::string(what) + ": a collective point needs gpus >= 2");
    a(r, 0) = 1.0;
    a(r, 1) = factor(p.gpus) * p.bytes;
    y[r] = p.seconds;
  }
  const Eigen::VectorXd x = relative_nonnegative_least_squares(a, y);
  if (!(x[1] > 0.0)) throw FitError(std::string(what) + ": the fit found no per-byte cost; measure larger buffers");
  const double bandwidth = 1.0 / x[1];
  if (!std::isfinite(bandwidth)) throw FitError(std::string(what) + ": the fit found no per-byte cost; measure larger buffers");
  return {Seconds(zero_below(x[0], kTimeFloorSeconds)), BytesPerSecond(bandwidth)};
}

}  // namespace

AlphaBeta fit_allreduce(std::span<const CollectivePoint> points, std::span<const std::size_t> use) {
  return fit_alpha_beta(points, use, [](int g) { return 2.0 * (g - 1) / g; }, "all-reduce");
}

AlphaBeta fit_alltoall(std::span<const CollectivePoint> points, std::span<const std::size_t> use) {
  return fit_alpha_beta(points, use, [](int g) { return static_cast<double>(g - 1) / g; }, "all-to-all");
}

AlphaBeta fit_p2p(std::span<const CollectivePoint> points, std::span<const std::size_t> use) {
  return fit_alpha_beta(points, use, [](int) { return 1.0; }, "P2P");
}

}  // namespace ess
