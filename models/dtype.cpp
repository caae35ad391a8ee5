#include "models/dtype.h"

#include <array>

namespace ess {

namespace {
constexpr std::array<std::string_view, 4> kNames = {"fp32", "bf16", "fp16", "fp8"};
constexpr std::array<DType, 4> kTypes = {DType::fp32, DType::bf16, DType::fp16, DType::fp8};
}  // namespace

std::span<const std::string_view> dtype_names() { return kNames; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return kTypes[i];
  }
  return std::nullopt;
}

}  // namespace ess
