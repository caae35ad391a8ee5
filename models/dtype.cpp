#include "models/dtype.h"

#include <array>

namespace ess {

namespace {
constexpr std::array<std::string_view, 4> kDTypeNames = {"fp32", "bf16", "fp16", "fp8"};
constexpr std::array<DType, 4> kTypes = {DType::fp32, DType::bf16, DType::fp16, DType::fp8};
}  // namespace

std::span<const std::string_view> dtype_names() { return kDTypeNames; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (std::size_t i = 0; i < kDTypeNames.size(); ++i) {
    if (kDTypeNames[i] == name) return kTypes[i];
  }
  return std::nullopt;
}

}  // namespace ess
