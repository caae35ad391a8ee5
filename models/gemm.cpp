#include "models/gemm.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

#include "models/check.h"
#include "models/roofline.h"
#include "sim/base/error.h"

namespace ess {

namespace {

// a, b >= 1; written without a + b - 1 so that it cannot overflow.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

namespace {

// Bytes and FLOP of `groups` GEMMs over `weights` distinct weights and `m_rows` rows (padded rows
// for a grouped GEMM), priced with `params`; gemm() is the one-group case.
KernelCost grouped_cost(double weights, double m_rows, std::int64_t n_in, std::int64_t k_in, DType dtype,
                        const RooflineParams& params, std::string_view where, const Hardware& hw) {
  validate_roofline_params(params, where);
  // Products in double: int64 products of large shapes could overflow; double is exact to 2^53.
  const double g = weights;
  const double m = m_rows;
  const auto n = static_cast<double>(n_in);
  const auto k = static_cast<double>(k_in);
  const bool fp8 = dtype == DType::fp8;
  // fp8 GEMMs write bf16 outputs (DeepGEMM's fp8 GEMM output type).
  const DType out = fp8 ? DType::bf16 : dtype;

  const Flops flops(2.0 * m * n * k);
  double bytes = (m * k + g * k * n) * bytes_per_element(dtype) + m * n * bytes_per_element(out);
  if (fp8) {
    const auto k_blocks = static_cast<double>(ceil_div(k_in, std::int64_t{kFp8ScaleGroup}));
    const auto n_blocks = static_cast<double>(ceil_div(n_in, std::int64_t{kFp8ScaleGroup}));
    bytes += kFp8ScaleBytes * g * k_blocks * n_blocks;  // weight scales
    bytes += kFp8ScaleBytes * m * k_blocks;             // activation scales
  }
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(dtype, hw.gpu.kind);
  return with_params(roofline(flops, peak, Bytes(bytes), hw.gpu.hbm_bandwidth, params), param_set_of_field(where));
}

KernelCost dense_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const Hardware& hw) {
  return grouped_cost(1.0, static_cast<double>(m), n, k, dtype, hw.kernels.gemm, "hardware.kernels.gemm", hw);
}

}  // namespace

std::int64_t grouped_gemm_padded_rows(std::int64_t rows) {
  if (rows < 0) throw InternalError("grouped_gemm: rows of a group must be >= 0 (got " + std::to_string(rows) + ")");
  return ceil_div(rows, kGroupedGemmBlockM) * kGroupedGemmBlockM;
}

KernelCost grouped_gemm(const GroupedGemmShape& shape, const Hardware& hw) {
  check::at_least("grouped_gemm", "groups", shape.groups, 1);
  check::at_least("grouped_gemm", "m_total", shape.m_total, 1);
  check::at_least("grouped_gemm", "n", shape.n, 1);
  check::at_least("grouped_gemm", "k", shape.k, 1);
  if (shape.m_total < shape.groups) {
    throw InputError("grouped_gemm: m_total (" + std::to_string(shape.m_total) + ") must be >= groups (" +
                     std::to_string(shape.groups) + "): a group with no rows reads no weights");
  }
  // Even split: `extra` groups have one row more than the others.
  const std::int64_t base = shape.m_total / shape.groups;
  const std::int64_t extra = shape.m_total % shape.groups;
  const double padded = static_cast<double>(extra) * static_cast<double>(grouped_gemm_padded_rows(base + 1)) +
                        static_cast<double>(shape.groups - extra) * static_cast<double>(grouped_gemm_padded_rows(base));
  return grouped_cost(static_cast<double>(shape.groups), padded, shape.n, shape.k, shape.dtype, hw.kernels.grouped_gemm,
                      "hardware.kernels.grouped_gemm", hw);
}

KernelCost grouped_gemm(const GroupedGemmShape& shape, std::span<const std::int64_t> rows_per_group, const Hardware& hw) {
  check::at_least("grouped_gemm", "n", shape.n, 1);
  check::at_least("grouped_gemm", "k", shape.k, 1);
  double groups = 0.0;
  double padded = 0.0;
  for (const std::int64_t r : rows_per_group) {
    padded += static_cast<double>(grouped_gemm_padded_rows(r));
    groups += r > 0 ? 1.0 : 0.0;
  }
  if (groups < 1.0) throw InternalError("grouped_gemm: at least one group must have rows");
  return grouped_cost(groups, padded, shape.n, shape.k, shape.dtype, hw.kernels.grouped_gemm,
                      "hardware.kernels.grouped_gemm", hw);
}

KernelCost gemm(const GemmShape& shape, const Hardware& hw) {
  check::at_least("gemm", "m", shape.m, 1);
  check::at_least("gemm", "n", shape.n, 1);
  check::at_least("gemm", "k", shape.k, 1);
  KernelCost cost = dense_cost(shape.m, shape.n, shape.k, shape.dtype, hw);
  if (!hw.kernels.gemm_measured) return cost;
  const auto hit = gemm_table_lookup(*hw.kernels.gemm_measured, shape.m, shape.n, shape.k, shape.dtype);
  if (!hit) return cost;
  cost.measured = true;
  cost.params = ParamSet::gemm_measured;
  const auto [m_lo, t_lo] = hit->lower;
  const auto [m_hi, t_hi] = hit->upper;
  if (m_lo == m_hi) {
    // Measured exactly, or outside the measured range: the roofline's shape anchored at the
    // nearest measurement (a ratio of two roofline times, so the efficiencies largely cancel).
    const double anchor = dense_cost(m_lo, shape.n, shape.k, shape.dtype, hw).time.value();
    cost.time = Seconds(m_lo == shape.m ? t_lo : t_lo * cost.time.value() / anchor);
  } else {
    const double f = std::log(static_cast<double>(shape.m) / static_cast<double>(m_lo)) /
                     std::log(static_cast<double>(m_hi) / static_cast<double>(m_lo));
    cost.time = Seconds(std::exp(std::log(t_lo) + f * (std::log(t_hi) - std::log(t_lo))));
  }
  return cost;
}

}  // namespace ess
