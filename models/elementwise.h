// MemoryBoundElementwise: a kernel that reads `inputs` tensors and writes `outputs` tensors of
// `elements` elements each (activation functions, residual adds, SwiGLU, casts of one dtype).
//
//   bytes = elements (inputs + outputs) B(dtype)
//   time  = memory_bound_kernel(bytes, hbm_bandwidth, hardware.kernels.memory_bound)
#pragma once

#include <cstdint>

#include "models/cost.h"
#include "models/dtype.h"
#include "models/hardware.h"

namespace ess {

// elements >= 1, inputs >= 0 (0 for a fill), outputs >= 1. All tensors share `dtype`.
struct ElementwiseShape {
  std::int64_t elements = 0;
  int inputs = 1;
  int outputs = 1;
  DType dtype = DType::bf16;
};

// Throws InputError on a shape outside the ranges above or invalid
// hardware.kernels.memory_bound.
[[nodiscard]] KernelCost elementwise(const ElementwiseShape& shape, const Hardware& hw);

}  // namespace ess
