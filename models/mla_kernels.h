// The MLA decode kernels ess-sim prices: one registry line each (mla_kernels.cpp), chosen by name
// from a scenario's engine (engine.mla_kernel, scenarios/engines/). A kernel is what changes the
// attention model's arithmetic (models/attention.h): the tile its query rows are computed in and
// the input type of its MMAs. Its efficiencies are the hardware's (kernels.attention for dense MLA,
// kernels.sparse_attention for sparse), fitted to FlashMLA's measurements (calibration/README.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/dtype.h"

namespace ess {

struct MlaKernel {
  std::string_view name;
  std::string_view summary;
  std::int64_t row_tile;  // query rows are computed in multiples of this (MlaShape::row_tile)
  DType mma;              // input type of the MMAs (MlaShape::compute_dtype)
  std::string_view source;
};

// Every registered kernel, in registry order; the first is the default.
[[nodiscard]] std::span<const MlaKernel> mla_kernels();
// Their names, in registry order (the choices of engine.mla_kernel and `cost attention --mla-kernel`).
[[nodiscard]] std::vector<std::string> mla_kernel_names();
// The kernel called `name`, or nullptr.
[[nodiscard]] const MlaKernel* find_mla_kernel(std::string_view name);

}  // namespace ess
