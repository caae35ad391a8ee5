#include "models/collective_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/fit.h"
#include "sim/base/error.h"

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
    if (p.gpus < 2) throw InputError(std::string(what) + ": a collective point needs gpus >= 2");
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

namespace {

struct AlltoallSplit {
  double intranode = 0.0;
  double internode = 0.0;
};

AlltoallSplit split(const ExpertAlltoallPoint& p) {
  const int e = p.expert_parallel;
  const int l = p.gpus_per_node;
  if (e < 2 || l < 1 || !(p.bytes > 0.0) || (e % l != 0 && l % e != 0)) {
    throw InputError("expert all-to-all: need EP >= 2, GPUs per node >= 1, bytes > 0 and EP dividing or a "
                     "multiple of the GPUs per node (got EP " + std::to_string(e) + ", " + std::to_string(l) +
                     " per node)");
  }
  const double local = std::min(e, l);
  return {p.bytes * (local - 1.0) / e, p.bytes * (e - local) / e};
}

double alltoall_seconds(const AlltoallSplit& s, double intra_latency, double intra_bw, double inter_latency,
                        double inter_bw) {
  const double intra = s.intranode > 0.0 ? intra_latency + s.intranode / intra_bw : 0.0;
  const double inter = s.internode > 0.0 ? inter_latency + s.internode / inter_bw : 0.0;
  return std::max(intra, inter);
}

constexpr double kLatencyScale = 1e-6;  // latency = exp(x) us

}  // namespace

Seconds expert_alltoall_time(const ExpertAlltoallPoint& point, const Hardware& hw) {
  const AlltoallSplit s = split(point);
  const BytesPerSecond intra = alltoall_intranode_bandwidth(hw);
  const BytesPerSecond inter = alltoall_internode_bandwidth(hw);
  if ((s.intranode > 0.0 && !(intra.value() > 0.0)) || (s.internode > 0.0 && !(inter.value() > 0.0))) {
    throw InputError("expert all-to-all: the port bandwidths must be > 0");
  }
  return Seconds(alltoall_seconds(s, alltoall_intranode_latency(hw).value(), intra.value(),
                                  alltoall_internode_latency(hw).value(), inter.value()));
}

AlltoallFit fit_expert_alltoall(std::span<const ExpertAlltoallPoint> points, std::span<const std::size_t> use,
                                const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "expert all-to-all fit");
  if (idx.size() < 3) {
    throw FitError("the all-to-all model has 3 parameters; need at least 3 points, got " + std::to_string(idx.size()));
  }
  struct Row {
    AlltoallSplit split;
    double seconds;
  };
  std::vector<Row> rows;
  bool intra = false;
  bool inter = false;
  for (const std::size_t i : idx) {
    const ExpertAlltoallPoint& p = points[i];
    if (!(p.seconds > 0.0)) throw InputError("expert all-to-all fit: a measured time must be > 0");
    rows.push_back({split(p), p.seconds});
    intra = intra || rows.back().split.intranode > 0.0;
    inter = inter || rows.back().split.internode > 0.0;
  }
  const CollectiveParams& base = hw.collectives;
  const double nv_bw = hw.nvlink.bandwidth.value();
  const double net_bw = hw.network.bandwidth_per_gpu.value();
  const double net_lat = hw.network.latency.value();
  const auto decode = [&](const Eigen::VectorXd& x) {
    return AlltoallFit{intra ? logistic(x[0]) : base.alltoall_nvlink_efficiency,
                       inter ? logistic(x[1]) : base.alltoall_network_efficiency, Seconds(std::exp(x[2]) * kLatencyScale)};
  };
  const auto residuals = [&](const Eigen::VectorXd& x) {
    const AlltoallFit f = decode(x);
    Eigen::VectorXd r(static_cast<Eigen::Index>(rows.size()));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double t = alltoall_seconds(rows[i].split, f.latency.value(), f.nvlink_efficiency * nv_bw,
                                        net_lat + f.latency.value(), f.network_efficiency * net_bw);
      r[static_cast<Eigen::Index>(i)] = std::log(t / rows[i].seconds);
    }
    return r;
  };
  std::vector<LmResult> results;
  std::vector<double> costs;
  for (const double e_nv : {0.5, 0.9}) {
    for (const double e_net : {0.5, 0.9}) {
      for (const double latency_us : {5.0, 30.0}) {
        Eigen::VectorXd x0(3);
        x0 << logit(e_nv), logit(e_net), std::log(latency_us);
        results.push_back(levenberg_marquardt(residuals, x0, 300));
        costs.push_back(results.back().cost);
      }
    }
  }
  const int best = first_near_best(costs);
  if (best < 0) throw FitError("the all-to-all fit did not converge (every start gave a non-finite error)");
  AlltoallFit f = decode(results[static_cast<std::size_t>(best)].x);
  f.latency = Seconds(zero_below(f.latency.value(), kTimeFloorSeconds));
  if (!std::isfinite(f.nvlink_efficiency) || !std::isfinite(f.network_efficiency) || !std::isfinite(f.latency.value())) {
    throw FitError("the all-to-all fit ended at a non-finite parameter");
  }
  return f;
}

}  // namespace ess
