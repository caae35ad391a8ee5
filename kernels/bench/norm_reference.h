// The host side of the norm measurements: bf16 conversion and the double-precision reference the
// CUDA kernels are checked against before they are timed.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/bench/norm_launch.h"

namespace ess::bench {

// bf16 is the top half of an IEEE binary32; conversion rounds to nearest, ties to even (what
// __float2bfloat16 does on the device), and keeps NaN a (quiet) NaN.
[[nodiscard]] std::uint16_t float_to_bf16_bits(float value);
[[nodiscard]] float bf16_bits_to_float(std::uint16_t bits);

// Reference norms in double over `tokens` rows of `hidden` values (row-major):
//   rms:   y = x / sqrt(mean(x^2) + eps) * weight
//   layer: y = (x - mean(x)) / sqrt(mean((x - mean)^2) + eps) * weight + bias
// `bias` is read only for layer. Throws std::invalid_argument when a span has the wrong size or
// tokens/hidden < 1.
void norm_reference(NormKind kind, std::int64_t tokens, std::int64_t hidden,
                    std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, double eps, std::span<double> y);

// The check applied before timing: element i passes when
//   |got[i] - expected[i]| <= rel_tol x |expected[i]| + abs_tol.
// rel_tol 1e-2 is the bf16 threshold (bf16 rounding alone is at most 2^-9 = 0.2%);
// abs_tol 1e-3 keeps LayerNorm outputs near zero (x close to the row mean) from failing on an
// error that is tiny against the row's unit scale.
inline constexpr double kNormRelTol = 1e-2;
inline constexpr double kNormAbsTol = 1e-3;

struct Comparison {
  bool ok = true;
  std::int64_t worst_index = -1;  // the element closest to (or furthest past) its bound
  double got = 0.0;
  double expected = 0.0;
  double worst_ratio = 0.0;  // |got - expected| / bound at worst_index; ok iff <= 1
};

// Throws std::invalid_argument when the spans differ in size. A NaN in `got` always fails.
[[nodiscard]] Comparison compare_outputs(std::span<const float> got,
                                         std::span<const double> expected, double rel_tol,
                                         double abs_tol);

}  // namespace ess::bench
