// RowGather: a kernel that moves rows from one layout to another, reading `rows_in` rows of
// `row_bytes_in` each and writing `rows_out` rows of `row_bytes_out` each (the MoE permutations
// around a contiguous grouped GEMM: received tokens copied into expert-major rows, and the expert
// rows summed back into one row per token with their routing weights).
//
//   bytes = rows_in row_bytes_in + rows_out row_bytes_out
//   time  = memory_bound_kernel(bytes, hbm_bandwidth, hardware.kernels.memory_bound)
//
// The routing indices and weights it also reads (a few bytes per row) are left out.
#pragma once

#include <cstdint>

#include "models/cost.h"
#include "models/hardware.h"

namespace ess {

// rows_in, rows_out >= 0 (a GPU that received nothing moves nothing: zero bytes, the kernel's
// fixed cost); row bytes > 0.
struct RowGatherShape {
  std::int64_t rows_in = 0;
  std::int64_t rows_out = 0;
  double row_bytes_in = 0.0;
  double row_bytes_out = 0.0;
};

// Throws InputError on a shape outside the ranges above or invalid
// hardware.kernels.memory_bound.
[[nodiscard]] KernelCost row_gather(const RowGatherShape& shape, const Hardware& hw);

}  // namespace ess
