#include "models/gemm.h"

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

KernelCost gemm(const GemmShape& shape, const Hardware& hw) {
  check::at_least("gemm", "m", shape.m, 1);
  check::at_least("gemm", "n", shape.n, 1);
  check::at_least("gemm", "k", shape.k, 1);
  validate_roofline_params(hw.kernels.gemm, "hardware.kernels.gemm");

  // Products in double: int64 products of large shapes could overflow; double is exact to 2^53.
  const auto m = static_cast<double>(shape.m);
  const auto n = static_cast<double>(shape.n);
  const auto k = static_cast<double>(shape.k);
  const bool fp8 = shape.dtype == DType::fp8;
  // fp8 GEMMs write bf16 outputs (DeepGEMM's fp8 GEMM output type).
  const DType out = fp8 ? DType::bf16 : shape.dtype;

  const Flops flops(2.0 * m * n * k);
  double bytes = (m * k + k * n) * bytes_per_element(shape.dtype) + m * n * bytes_per_element(out);
  if (fp8) {
    const auto k_blocks = static_cast<double>(ceil_div(shape.k, kFp8ScaleBlock));
    const auto n_blocks = static_cast<double>(ceil_div(shape.n, kFp8ScaleBlock));
    bytes += kFp8ScaleBytes * k_blocks * n_blocks;  // weight scales
    bytes += kFp8ScaleBytes * m * k_blocks;         // activation scales
  }
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(shape.dtype, hw.gpu.kind);
  return roofline(flops, peak, Bytes(bytes), hw.gpu.hbm_bandwidth, hw.kernels.gemm);
}

}  // namespace ess
