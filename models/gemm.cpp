#include "models/gemm.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

#include "models/check.h"
#include "models/roofline.h"

namespace ess {

namespace {

// a, b >= 1; written without a + b - 1 so that it cannot overflow.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

namespace {

// Bytes and FLOP of `groups` GEMMs sharing the row count m_total; gemm() is the one-group case.
KernelCost grouped_cost(std::int64_t groups, std::int64_t m_total, std::int64_t n_in, std::int64_t k_in, DType dtype,
                        const Hardware& hw) {
  validate_roofline_params(hw.kernels.gemm, "hardware.kernels.gemm");
  // Products in double: int64 products of large shapes could overflow; double is exact to 2^53.
  const auto g = static_cast<double>(groups);
  const auto m = static_cast<double>(m_total);
  const auto n = static_cast<double>(n_in);
  const auto k = static_cast<double>(k_in);
  const bool fp8 = dtype == DType::fp8;
  // fp8 GEMMs write bf16 outputs (DeepGEMM's fp8 GEMM output type).
  const DType out = fp8 ? DType::bf16 : dtype;

  const Flops flops(2.0 * m * n * k);
  double bytes = (m * k + g * k * n) * bytes_per_element(dtype) + m * n * bytes_per_element(out);
  if (fp8) {
    const auto k_blocks = static_cast<double>(ceil_div(k_in, kFp8ScaleBlock));
    const auto n_blocks = static_cast<double>(ceil_div(n_in, kFp8ScaleBlock));
    bytes += kFp8ScaleBytes * g * k_blocks * n_blocks;  // weight scales
    bytes += kFp8ScaleBytes * m * k_blocks;             // activation scales
  }
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(dtype, hw.gpu.kind);
  return roofline(flops, peak, Bytes(bytes), hw.gpu.hbm_bandwidth, hw.kernels.gemm);
}

}  // namespace

KernelCost grouped_gemm(const GroupedGemmShape& shape, const Hardware& hw) {
  check::at_least("grouped_gemm", "groups", shape.groups, 1);
  check::at_least("grouped_gemm", "m_total", shape.m_total, 1);
  check::at_least("grouped_gemm", "n", shape.n, 1);
  check::at_least("grouped_gemm", "k", shape.k, 1);
  return grouped_cost(shape.groups, shape.m_total, shape.n, shape.k, shape.dtype, hw);
}

KernelCost gemm(const GemmShape& shape, const Hardware& hw) {
  check::at_least("gemm", "m", shape.m, 1);
  check::at_least("gemm", "n", shape.n, 1);
  check::at_least("gemm", "k", shape.k, 1);
  KernelCost cost = grouped_cost(1, shape.m, shape.n, shape.k, shape.dtype, hw);
  if (!hw.kernels.gemm_measured) return cost;
  const auto hit = gemm_table_lookup(*hw.kernels.gemm_measured, shape.m, shape.n, shape.k, shape.dtype);
  if (!hit) return cost;
  cost.measured = true;
  const auto [m_lo, t_lo] = hit->lower;
  const auto [m_hi, t_hi] = hit->upper;
  if (m_lo == m_hi) {
    // Measured exactly, or outside the measured range: the roofline's shape anchored at the
    // nearest measurement (a ratio of two roofline times, so the efficiencies largely cancel).
    const double anchor = grouped_cost(1, m_lo, shape.n, shape.k, shape.dtype, hw).time.value();
    cost.time = Seconds(m_lo == shape.m ? t_lo : t_lo * cost.time.value() / anchor);
  } else {
    const double f = std::log(static_cast<double>(shape.m) / static_cast<double>(m_lo)) /
                     std::log(static_cast<double>(m_hi) / static_cast<double>(m_lo));
    cost.time = Seconds(std::exp(std::log(t_lo) + f * (std::log(t_hi) - std::log(t_lo))));
  }
  return cost;
}

}  // namespace ess
