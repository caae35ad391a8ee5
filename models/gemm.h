// RooflineGemm: one dense GEMM  Y[m x n] = X[m x k] * W[k x n]  on one GPU (cuBLAS / DeepGEMM).
//
//   flops = 2 m n k
//   bytes = (m k + k n) B(dtype) + m n B(out)           out = bf16 if dtype is fp8, else dtype
//         + fp8 only: 4 ceil(k/128) ceil(n/128)         fp32 scale per 128x128 weight block
//                   + 4 m ceil(k/128)                   fp32 scale per 1x128 activation group
//   time  = roofline(flops, peak[dtype], bytes, hbm_bandwidth, hardware.kernels.gemm)
//
// Every operand is read from and the output written to HBM exactly once (no L2 reuse across
// kernels, no split-K partials). See models/README.md.
//
// Where hardware.kernels.gemm_measured covers the weight shape (n, k, dtype), `time` comes from
// those measurements instead (models/gemm_table.h); flops, bytes and the roofline terms are still
// reported, so the bound classification stays the roofline's.
#pragma once

#include <cstdint>

#include "models/cost.h"
#include "models/dtype.h"
#include "models/hardware.h"

namespace ess {

// Shape of one GEMM. m = tokens (rows of the activation), n = output features, k = input
// features; the weight is k x n. All three must be >= 1 (a caller with no tokens skips the kernel).
// `dtype` is the format of both inputs (fp8 GEMMs take fp8 activations and fp8 weights).
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
};

// Side of the square weight block and of the activation group that share one fp8 scale.
// Source: DeepSeek-V3 config.json quantization_config.weight_block_size = [128, 128]; activations
// are quantized per 1 x 128 tile (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.3.2).
inline constexpr std::int64_t kFp8ScaleBlock = 128;
// Bytes of one fp8 scale: scales are fp32 (same sources).
inline constexpr double kFp8ScaleBytes = 4.0;

// Throws std::invalid_argument if m, n or k < 1 or hardware.kernels.gemm is invalid, and
// UnsupportedError if the GPU has no peak for `shape.dtype`.
[[nodiscard]] KernelCost gemm(const GemmShape& shape, const Hardware& hw);

}  // namespace ess

namespace ess {

// A grouped GEMM (MoE experts, DeepGEMM "m-grouped"): `groups` independent weights of k x n, and
// `m_total` rows spread over them (each row multiplies exactly one group's weight).
//
//   flops = 2 m_total n k
//   bytes = groups k n B(dtype) + m_total k B(dtype) + m_total n B(out) [+ fp8 scales: per group
//           4 ceil(k/128) ceil(n/128), per row 4 ceil(k/128)]
//
// Every group's weight is read once (groups with no rows must not be counted by the caller).
struct GroupedGemmShape {
  std::int64_t groups = 0;
  std::int64_t m_total = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
};

// Throws std::invalid_argument if groups, m_total, n or k < 1.
[[nodiscard]] KernelCost grouped_gemm(const GroupedGemmShape& shape, const Hardware& hw);

}  // namespace ess
