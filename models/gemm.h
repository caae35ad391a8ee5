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
#include <span>

#include "models/cost.h"
#include "models/dtype.h"
#include "models/hardware.h"
#include "sim/base/fp8.h"

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

// The fp8 scale blocks and groups: kFp8ScaleGroup and kFp8ScaleBytes (sim/base/fp8.h).

// Throws InputError if m, n or k < 1 or hardware.kernels.gemm is invalid, and
// UnsupportedError if the GPU has no peak for `shape.dtype`.
[[nodiscard]] KernelCost gemm(const GemmShape& shape, const Hardware& hw);

}  // namespace ess

namespace ess {

// GroupedGemm: a grouped GEMM (MoE experts, DeepGEMM "m-grouped" masked layout): `groups`
// independent weights of k x n, each multiplied by the rows routed to it, in one kernel whose
// parameters are hardware.kernels.grouped_gemm.
//
// The kernel computes whole tiles of kGroupedGemmBlockM rows per group: a group of r rows costs
// the compute of ceil(r / block) x block rows (the masked layout's padding). With r_g rows in group
// g and R_g = ceil(r_g / block) block:
//
//   flops = 2 sum_g R_g n k                                  padded rows
//   bytes = G k n B(dtype)                                   the weights of the groups with rows
//         + sum_g R_g (k B(dtype) + n B(out))                activations in, outputs out, padded
//         + fp8 only: G 4 ceil(k/128) ceil(n/128) + sum_g R_g 4 ceil(k/128)      scales
//   time  = roofline(flops, peak[dtype], bytes, hbm_bandwidth, hardware.kernels.grouped_gemm)
//
// G = the groups with at least one row: a group with no rows is not launched and its weights are
// not read. The padded rows' traffic is counted because the kernel's TMA loads and stores whole
// tiles (at most block - 1 rows per group; for a decode-sized expert of 4096 x 7168 that is under
// 2% of its weight bytes).
struct GroupedGemmShape {
  std::int64_t groups = 0;   // groups with rows (the experts whose weights are read)
  std::int64_t m_total = 0;  // rows over all groups
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType dtype = DType::bf16;
};

// Rows per tile of DeepGEMM's m-grouped masked kernel in decode: its get_best_configs
// (deep_gemm/jit_kernels/gemm.py, 2025-04) tries BLOCK_M 64, 128 and 256 for the masked layout and,
// when they need the same number of waves and reach the same last-wave use (always so for groups of
// at most 64 rows, the decode case), prefers the smallest ("same block_n, smaller block_m"). The
// contiguous layout aligns each expert to 128 rows instead (get_m_alignment_for_contiguous_layout()
// = 128); groups of more than 64 rows may get BLOCK_M 128 or 256, which this model does not follow.
inline constexpr std::int64_t kGroupedGemmBlockM = 64;

// Rows of a group as the kernel computes them: ceil(rows / kGroupedGemmBlockM) x kGroupedGemmBlockM
// (0 for 0 rows). Throws InternalError on rows < 0 (callers count rows).
[[nodiscard]] std::int64_t grouped_gemm_padded_rows(std::int64_t rows);

// `shape.m_total` rows spread as evenly as routing allows: each of the `groups` groups gets
// floor(m_total / groups) or one more row. Throws InputError if groups, m_total, n or
// k < 1 or m_total < groups (a group with no rows must not be counted).
[[nodiscard]] KernelCost grouped_gemm(const GroupedGemmShape& shape, const Hardware& hw);

// The same with each group's rows given: rows_per_group[g] >= 0 (groups with 0 rows are skipped),
// at least one row in all. shape.groups and shape.m_total are ignored (taken from the rows).
[[nodiscard]] KernelCost grouped_gemm(const GroupedGemmShape& shape, std::span<const std::int64_t> rows_per_group,
                                      const Hardware& hw);

}  // namespace ess
