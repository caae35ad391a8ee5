#include "models/norm.h"

#include <array>
#include <stdexcept>
#include <string>

#include "models/check.h"
#include "models/roofline.h"
#include "sim/base/error.h"

namespace ess {

namespace {

constexpr std::array<std::string_view, 2> kNormKindNames = {"rms", "layer"};
constexpr std::array<NormKind, 2> kKinds = {NormKind::rms, NormKind::layer};

// Parameter vectors of length `hidden`: RMSNorm has a weight; LayerNorm a weight and a bias.
double parameter_vectors(NormKind kind) {
  switch (kind) {
    case NormKind::rms: return 1.0;
    case NormKind::layer: return 2.0;
  }
  throw InternalError("norm: unknown NormKind");
}

}  // namespace

std::span<const std::string_view> norm_kind_names() { return kNormKindNames; }

std::optional<NormKind> parse_norm_kind(std::string_view name) {
  for (std::size_t i = 0; i < kNormKindNames.size(); ++i) {
    if (kNormKindNames[i] == name) return kKinds[i];
  }
  return std::nullopt;
}

KernelCost norm(const NormShape& shape, const Hardware& hw) {
  check::at_least("norm", "tokens", shape.tokens, 1);
  check::at_least("norm", "hidden", shape.hidden, 1);
  validate_roofline_params(hw.kernels.memory_bound, "hardware.kernels.memory_bound");

  const auto tokens = static_cast<double>(shape.tokens);
  const auto hidden = static_cast<double>(shape.hidden);
  const double b = bytes_per_element(shape.dtype);
  const Bytes bytes(2.0 * tokens * hidden * b + parameter_vectors(shape.kind) * hidden * b);
  return with_params(memory_bound_kernel(bytes, hw.gpu.hbm_bandwidth, hw.kernels.memory_bound), ParamSet::memory_bound);
}

}  // namespace ess
