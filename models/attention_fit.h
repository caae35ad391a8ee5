// Calibrating the MLA attention kernel classes (models/attention.h) from FlashMLA's published
// figures (calibration/data/public/deepseek/flashmla_h800.csv).
//
//   dense (hardware.kernels.attention): the README gives peak rates without shapes, "up to 3000
//     GB/s" memory-bound and "up to 660 TFLOPS" compute-bound; they set the two efficiencies as
//     rate / datasheet peak (HBM bandwidth, BF16 tensor peak). One figure per parameter: nothing is
//     left to cross-validate.
//   sparse (hardware.kernels.sparse_attention): kernel times of whole shapes, compute-bound at
//     the published sizes, so time = kernel_overhead + (flops + compute_ramp) / (peak x
//     compute_efficiency); relative non-negative least squares on [1, (flops + ramp) / peak]. Two
//     points or more fit both; one point fits the efficiency with `base`'s overhead.
#pragma once

#include <cstdint>
#include <span>

#include "models/attention.h"
#include "models/hardware.h"

namespace ess {

struct SparseMlaPoint {
  MlaShape shape;
  std::int64_t selected = 0;  // top-k entries per query token
  double seconds = 0.0;       // measured, > 0
};

[[nodiscard]] RooflineParams fit_sparse_attention(std::span<const SparseMlaPoint> points,
                                                  std::span<const std::size_t> use, const Hardware& hw);

// A dense MLA decode kernel time of a whole shape (FlashMLA's dense test on H100 and H20,
// calibration/data/public/deepseek/flashmla_h100_h20_dense.csv): every request attends to
// `context` entries.
struct DenseMlaPoint {
  MlaShape shape;  // row_tile 64: FlashMLA's tiles
  std::int64_t context = 0;
  double seconds = 0.0;  // measured, > 0
};

// kernels.attention from dense MLA kernel times: time = kernel_overhead + max(C / compute_efficiency,
// M / memory_efficiency), C = the executed (tile-padded) FLOP / peak_compute.bf16 and M = bytes /
// hbm_bandwidth. Each point is bound by one roof; which one is found by iterating: bind each point
// to the roof the current parameters say (base's to start), fit relative NNLS on [1, C | 0, 0 | M],
// until no point changes roof (at most 16 rounds). An efficiency with no point bound by its roof
// keeps base's value; the overhead is fitted with two points or more. Throws FitError when an
// efficiency comes out above 1 or no point is given.
[[nodiscard]] RooflineParams fit_dense_attention(std::span<const DenseMlaPoint> points,
                                                 std::span<const std::size_t> use, const Hardware& hw);

// A causal (or full) prefill attention kernel time of a whole shape: FlashAttention-3's published
// forward rates on H100 SXM5 (calibration/data/public/flashattention/fa3_h100_forward.csv).
struct PrefillAttentionPoint {
  PrefillAttentionShape shape;
  double seconds = 0.0;  // measured, > 0
};

// kernels.prefill_attention and its row_keys from prefill attention kernel times, compute-bound at
// the published sizes: time - kernel_overhead = C / compute_efficiency + R row_keys /
// compute_efficiency, C = 2 heads key_pairs (qk + v) / peak and R = 2 heads queries (qk + v) / peak;
// relative NNLS on [C, R] (base's overhead kept). Two points or more fit both; one point fits the
// efficiency with base's row_keys. Returns the parameters and writes row_keys; throws FitError when
// the efficiency comes out above 1 or no point is given.
[[nodiscard]] RooflineParams fit_prefill_attention(std::span<const PrefillAttentionPoint> points,
                                                   std::span<const std::size_t> use, const Hardware& hw,
                                                   double& row_keys);

// A published peak rate of a kernel: FLOP/s (compute) or B/s (memory).
struct KernelRatePoint {
  bool compute = false;
  double rate = 0.0;  // > 0
};

// kernels.attention with compute_efficiency = the compute rate / peak_compute.bf16 and
// memory_efficiency = the memory rate / hbm_bandwidth (the last point of each kind wins: points
// are given oldest first); every other parameter is base's. Throws FitError if a ratio exceeds 1.
[[nodiscard]] RooflineParams attention_from_rates(std::span<const KernelRatePoint> points,
                                                  std::span<const std::size_t> use, const Hardware& hw);

}  // namespace ess
