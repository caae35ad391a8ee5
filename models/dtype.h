// Numeric formats of tensors, weights and caches.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace ess {

enum class DType { fp32, bf16, fp16, fp8 };

// Bytes of one element. fp8 means e4m3/e5m2 (1 byte); block scales are counted by the models.
[[nodiscard]] constexpr double bytes_per_element(DType t) {
  switch (t) {
    case DType::fp32: return 4.0;
    case DType::bf16: return 2.0;
    case DType::fp16: return 2.0;
    case DType::fp8: return 1.0;
  }
  return 0.0;  // unreachable: every enumerator is handled above
}

[[nodiscard]] constexpr std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
  }
  return "?";
}

// Every dtype name, in a fixed order (for error messages and "did you mean").
[[nodiscard]] std::span<const std::string_view> dtype_names();

// Parses "fp32", "bf16", "fp16" or "fp8"; nullopt for anything else.
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view name);

}  // namespace ess
