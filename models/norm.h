// MemoryBoundNorm: RMSNorm or LayerNorm over `tokens` rows of `hidden` elements on one GPU.
//
//   bytes = 2 tokens hidden B(dtype)        read x, write y
//         + params hidden B(dtype)          params = 1 (RMSNorm weight) or 2 (LayerNorm weight,
//         bias)
//   time  = memory_bound_kernel(bytes, hbm_bandwidth, hardware.kernels.memory_bound)
//
// The FLOP (a few per element) are not counted: a norm is far below the ridge point of any GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/cost.h"
#include "models/dtype.h"
#include "models/hardware.h"

namespace ess {

enum class NormKind { rms, layer };

[[nodiscard]] constexpr std::string_view to_string(NormKind k) {
  switch (k) {
    case NormKind::rms: return "rms";
    case NormKind::layer: return "layer";
  }
  return "?";
}

// Every NormKind name, in a fixed order (for error messages and "did you mean").
[[nodiscard]] std::span<const std::string_view> norm_kind_names();

// Parses "rms" or "layer"; nullopt for anything else.
[[nodiscard]] std::optional<NormKind> parse_norm_kind(std::string_view name);

// tokens >= 1 and hidden >= 1; `dtype` is the format of x, y and the parameters.
struct NormShape {
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  DType dtype = DType::bf16;
  NormKind kind = NormKind::rms;
};

// Throws InputError if tokens or hidden < 1 or hardware.kernels.memory_bound is invalid.
[[nodiscard]] KernelCost norm(const NormShape& shape, const Hardware& hw);

}  // namespace ess
