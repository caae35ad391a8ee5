#include "models/attention_fit.h"

#include <cmath>
#include <string>
#include <vector>

#include "models/check.h"
#include "models/fit.h"
#include "models/roofline.h"
#include "sim/base/error.h"

namespace ess {

RooflineParams fit_sparse_attention(std::span<const SparseMlaPoint> points, std::span<const std::size_t> use,
                                    const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_sparse_attention");
  if (idx.empty()) throw FitError("sparse attention: no points");
  RooflineParams p = hw.kernels.sparse_attention;
  const double peak = hw.gpu.peak_compute.at(DType::bf16, hw.gpu.kind).value();
  const auto n = static_cast<Eigen::Index>(idx.size());
  const bool with_overhead = n >= 2;
  Eigen::MatrixXd a(n, with_overhead ? 2 : 1);
  Eigen::VectorXd y(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const SparseMlaPoint& pt = points[idx[static_cast<std::size_t>(r)]];
    if (!(pt.seconds > 0.0)) throw InputError("fit_sparse_attention: a measured time must be > 0");
    const KernelCost c = sparse_mla_attention(pt.shape, pt.selected, hw);  // validates; FLOP as the model counts them
    const double compute = (c.flops.value() + p.compute_ramp.value()) / peak;
    if (with_overhead) {
      a(r, 0) = 1.0;
      a(r, 1) = compute;
      y[r] = pt.seconds;
    } else {
      // One point: the overhead stays base's, the efficiency takes the rest of the time.
      a(r, 0) = compute;
      y[r] = pt.seconds - p.kernel_overhead.value();
      if (!(y[r] > 0.0)) throw FitError("sparse attention: the point is shorter than the base kernel_overhead");
    }
  }
  const Eigen::VectorXd x = relative_nonnegative_least_squares(a, y);
  const double inverse_efficiency = x[with_overhead ? 1 : 0];
  if (!(inverse_efficiency >= 1.0) || !std::isfinite(inverse_efficiency)) {
    throw FitError("sparse attention: the points imply " + check::number(100.0 / inverse_efficiency) +
                   "% of the BF16 peak (outside (0, 100%])");
  }
  p.compute_efficiency = 1.0 / inverse_efficiency;
  if (with_overhead) p.kernel_overhead = Seconds(zero_below(x[0], kTimeFloorSeconds));
  return p;
}

RooflineParams fit_prefill_attention(std::span<const PrefillAttentionPoint> points, std::span<const std::size_t> use,
                                     const Hardware& hw, double& row_keys) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_prefill_attention");
  if (idx.empty()) throw FitError("prefill attention: no points");
  RooflineParams p = hw.kernels.prefill_attention;
  Hardware causal_only = hw;
  causal_only.kernels.prefill_attention_row_keys = 0.0;
  const auto n = static_cast<Eigen::Index>(idx.size());
  const bool with_row_keys = n >= 2;
  Eigen::MatrixXd a(n, with_row_keys ? 2 : 1);
  Eigen::VectorXd y(n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const PrefillAttentionPoint& pt = points[idx[static_cast<std::size_t>(r)]];
    if (!(pt.seconds > 0.0)) throw InputError("fit_prefill_attention: a measured time must be > 0");
    // FLOP as the model counts them (it validates the shape): the causal key pairs alone, and one key
    // per query row (a shape whose key pairs are its queries).
    const double peak = hw.gpu.peak_compute.at(pt.shape.compute_dtype, hw.gpu.kind).value();
    PrefillAttentionShape one_key = pt.shape;
    one_key.key_pairs = static_cast<double>(pt.shape.queries);
    const double causal = prefill_attention(pt.shape, causal_only).flops.value() / peak;
    const double rows = prefill_attention(one_key, causal_only).flops.value() / peak;
    y[r] = pt.seconds - p.kernel_overhead.value();
    if (!(y[r] > 0.0)) throw FitError("prefill attention: a point is shorter than the base kernel_overhead");
    a(r, 0) = with_row_keys ? causal : causal + rows * hw.kernels.prefill_attention_row_keys;
    if (with_row_keys) a(r, 1) = rows;
  }
  const Eigen::VectorXd x = relative_nonnegative_least_squares(a, y);
  const double inverse_efficiency = x[0];
  if (!(inverse_efficiency >= 1.0) || !std::isfinite(inverse_efficiency)) {
    throw FitError("prefill attention: the points imply " + check::number(100.0 / inverse_efficiency) +
                   "% of the peak (outside (0, 100%])");
  }
  p.compute_efficiency = 1.0 / inverse_efficiency;
  row_keys = with_row_keys ? x[1] / inverse_efficiency : hw.kernels.prefill_attention_row_keys;
  return p;
}

RooflineParams fit_dense_attention(std::span<const DenseMlaPoint> points, std::span<const std::size_t> use,
                                   const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "fit_dense_attention");
  if (idx.empty()) throw FitError("dense attention: no points");
  RooflineParams p = hw.kernels.attention;
  validate_roofline_params(p, "hardware.kernels.attention");
  const double peak = hw.gpu.peak_compute.at(DType::bf16, hw.gpu.kind).value();
  const double bandwidth = hw.gpu.hbm_bandwidth.value();
  const auto n = idx.size();
  // Each point's compute and memory roofs at efficiency 1 (seconds), from the model itself.
  std::vector<double> compute(n), memory(n), y(n);
  for (std::size_t r = 0; r < n; ++r) {
    const DenseMlaPoint& pt = points[idx[r]];
    if (!(pt.seconds > 0.0)) throw InputError("fit_dense_attention: a measured time must be > 0");
    const KernelCost c = dense_mla_attention(pt.shape, pt.context, hw);  // validates; executed FLOP
    compute[r] = c.flops.value() / peak;
    memory[r] = c.bytes.value() / bandwidth;
    y[r] = pt.seconds;
  }
  std::vector<bool> bound_by_compute(n);
  const auto assign = [&](const RooflineParams& q) {
    bool changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      const bool c = compute[r] / q.compute_efficiency >= memory[r] / q.memory_efficiency;
      changed = changed || c != bound_by_compute[r];
      bound_by_compute[r] = c;
    }
    return changed;
  };
  (void)assign(p);
  for (int round = 0; round < 16; ++round) {
    bool any_compute = false;
    bool any_memory = false;
    for (std::size_t r = 0; r < n; ++r) (bound_by_compute[r] ? any_compute : any_memory) = true;
    const bool with_overhead = n >= 2;
    // Columns: [1 (overhead)], [C of compute-bound points], [M of memory-bound points].
    std::vector<int> column_of;  // 0 overhead, 1 compute, 2 memory
    if (with_overhead) column_of.push_back(0);
    if (any_compute) column_of.push_back(1);
    if (any_memory) column_of.push_back(2);
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(column_of.size()));
    Eigen::VectorXd target(static_cast<Eigen::Index>(n));
    for (std::size_t r = 0; r < n; ++r) {
      const auto row = static_cast<Eigen::Index>(r);
      target[row] = with_overhead ? y[r] : y[r] - p.kernel_overhead.value();
      if (!(target[row] > 0.0)) throw FitError("dense attention: a point is shorter than the base kernel_overhead");
      for (std::size_t c = 0; c < column_of.size(); ++c) {
        const auto col = static_cast<Eigen::Index>(c);
        if (column_of[c] == 0) a(row, col) = 1.0;
        if (column_of[c] == 1 && bound_by_compute[r]) a(row, col) = compute[r];
        if (column_of[c] == 2 && !bound_by_compute[r]) a(row, col) = memory[r];
      }
    }
    const Eigen::VectorXd x = relative_nonnegative_least_squares(a, target);
    RooflineParams next = p;
    for (std::size_t c = 0; c < column_of.size(); ++c) {
      const double v = x[static_cast<Eigen::Index>(c)];
      if (column_of[c] == 0) next.kernel_overhead = Seconds(zero_below(v, kTimeFloorSeconds));
      if (column_of[c] == 0) continue;
      if (!(v >= 1.0) || !std::isfinite(v)) {
        throw FitError(std::string("dense attention: the points imply ") + check::number(100.0 / v) + "% of the " +
                       (column_of[c] == 1 ? "BF16 peak" : "HBM bandwidth") + " (outside (0, 100%])");
      }
      (column_of[c] == 1 ? next.compute_efficiency : next.memory_efficiency) = 1.0 / v;
    }
    p = next;
    if (!assign(p)) break;
  }
  return p;
}

RooflineParams attention_from_rates(std::span<const KernelRatePoint> points, std::span<const std::size_t> use,
                                    const Hardware& hw) {
  const std::vector<std::size_t> idx = selected_points(use, points.size(), "attention_from_rates");
  RooflineParams p = hw.kernels.attention;
  for (const std::size_t i : idx) {
    const KernelRatePoint& pt = points[i];
    if (!(pt.rate > 0.0)) throw InputError("attention_from_rates: a rate must be > 0");
    const double roof = pt.compute ? hw.gpu.peak_compute.at(DType::bf16, hw.gpu.kind).value() : hw.gpu.hbm_bandwidth.value();
    const double e = pt.rate / roof;
    if (!(e > 0.0 && e <= 1.0)) {
      throw FitError(std::string("attention: a published ") + (pt.compute ? "compute" : "memory") + " rate of " +
                     check::number(pt.rate) + " is " + check::number(e * 100.0) + "% of the datasheet peak (over 100%)");
    }
    (pt.compute ? p.compute_efficiency : p.memory_efficiency) = e;
  }
  return p;
}

}  // namespace ess
