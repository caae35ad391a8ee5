#include "models/transfer_fit.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "models/check.h"
#include "models/fit.h"
#include "sim/base/error.h"

namespace ess {

bool copy_fit_sets_latency(std::span<const CopyPoint> points, std::span<const std::size_t> use) {
  const auto idx = selected_points(use, points.size(), "PCIe fit");
  std::int64_t first[2] = {-1, -1};
  for (const std::size_t i : idx) {
    const auto d = static_cast<int>(points[i].direction);
    if (first[d] < 0) {
      first[d] = points[i].calls;
    } else if (first[d] != points[i].calls) {
      return true;
    }
  }
  return false;
}

PcieSpec fit_pcie_copies(std::span<const CopyPoint> points, std::span<const std::size_t> use, const PcieSpec& base) {
  const auto idx = selected_points(use, points.size(), "PCIe fit");
  bool has[2] = {false, false};
  for (const std::size_t i : idx) has[static_cast<int>(points[i].direction)] = true;
  const bool fit_latency = copy_fit_sets_latency(points, use);
  // Columns: latency (when fitted), then (call overhead, seconds per byte) for each direction present.
  int col_of[2] = {-1, -1};
  Eigen::Index cols = fit_latency ? 1 : 0;
  for (int d = 0; d < 2; ++d) {
    if (has[d]) {
      col_of[d] = static_cast<int>(cols);
      cols += 2;
    }
  }
  const auto n = static_cast<Eigen::Index>(idx.size());
  if (n < cols) throw FitError("the copy model needs at least " + std::to_string(cols) + " copy points, got " + std::to_string(n));
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, cols);
  Eigen::VectorXd y(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const CopyPoint& p = points[idx[static_cast<std::size_t>(r)]];
    if (p.calls < 1 || !(p.bytes >= 0.0)) throw InputError("fit_pcie_copies: calls >= 1 and bytes >= 0");
    const int c = col_of[static_cast<int>(p.direction)];
    if (fit_latency) a(r, 0) = 1.0;
    a(r, c) = static_cast<double>(p.calls);
    a(r, c + 1) = p.bytes;
    // A latency not fitted is base's: the other terms fit what remains of the time.
    y[r] = fit_latency ? p.seconds : p.seconds - base.latency.value();
    if (!(y[r] > 0.0)) throw FitError("a copy is shorter than the base PCIe latency; fit the latency with copies of several call counts");
  }
  const Eigen::VectorXd x = relative_nonnegative_least_squares(a, y);
  PcieSpec out = base;
  if (fit_latency) out.latency = Seconds(zero_below(x[0], kTimeFloorSeconds));  // below 1 ns: none (models/fit.h)
  for (int d = 0; d < 2; ++d) {
    if (col_of[d] < 0) continue;
    const double per_byte = x[col_of[d] + 1];
    if (!(per_byte > 0.0)) {
      throw FitError(std::string(to_string(static_cast<CopyDirection>(d))) +
                     " copies: the fit found no per-byte cost; measure copies large enough to reach the link bandwidth");
    }
    const BytesPerSecond bw(1.0 / per_byte);
    if (!std::isfinite(bw.value())) {
      throw FitError(std::string(to_string(static_cast<CopyDirection>(d))) +
                     " copies: the per-byte cost is too small to give a finite bandwidth");
    }
    const Seconds overhead(zero_below(x[col_of[d]], kTimeFloorSeconds));
    if (d == 0) {
      out.h2d_bandwidth = bw;
      out.h2d_call_overhead = overhead;
    } else {
      out.d2h_bandwidth = bw;
      out.d2h_call_overhead = overhead;
    }
  }
  return out;
}

PcieSpec fit_gather_efficiency(std::span<const GatherPoint> points, std::span<const std::size_t> use,
                               const PcieSpec& base) {
  const auto idx = selected_points(use, points.size(), "PCIe fit");
  PcieSpec out = base;
  for (int d = 0; d < 2; ++d) {
    const auto dir = static_cast<CopyDirection>(d);
    // min sum ((lat + b_i z) / t_i - 1)^2 over z  =>  z = sum (b_i/t_i)(1 - lat/t_i) / sum (b_i/t_i)^2
    double num = 0.0;
    double den = 0.0;
    std::size_t count = 0;
    for (const std::size_t i : idx) {
      const GatherPoint& p = points[i];
      if (p.direction != dir) continue;
      if (!(p.seconds > 0.0) || !(p.bytes > 0.0)) throw InputError("fit_gather_efficiency: bytes and seconds must be > 0");
      const double u = p.bytes / p.seconds;
      num += u * (1.0 - base.latency.value() / p.seconds);
      den += u * u;
      ++count;
    }
    if (count == 0) continue;
    const double z = num / den;  // seconds per byte of the gather
    const double bandwidth = (dir == CopyDirection::h2d ? base.h2d_bandwidth : base.d2h_bandwidth).value();
    const double efficiency = 1.0 / (z * bandwidth);
    if (!(efficiency > 0.0 && efficiency <= 1.0)) {
      throw FitError(std::string(to_string(dir)) + " UVA gather: the points imply " + check::number(efficiency * 100.0) +
                     "% of the copy-engine bandwidth (outside (0, 100%])");
    }
    (dir == CopyDirection::h2d ? out.gather_h2d_efficiency : out.gather_d2h_efficiency) = efficiency;
  }
  return out;
}

double fit_gather_sm_fraction(std::span<const InterferencePoint> points, std::span<const std::size_t> use) {
  const auto idx = selected_points(use, points.size(), "PCIe fit");
  if (idx.empty()) throw FitError("no gather-interference points");
  std::vector<double> f;
  for (const std::size_t i : idx) {
    const InterferencePoint& p = points[i];
    if (!(p.alone_seconds > 0.0) || !(p.with_gather_seconds > 0.0)) {
      throw InputError("fit_gather_sm_fraction: times must be > 0");
    }
    f.push_back(1.0 - p.alone_seconds / p.with_gather_seconds);
  }
  return std::clamp(median(std::move(f)), 0.0, 0.95);
}

}  // namespace ess
