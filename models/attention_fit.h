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
