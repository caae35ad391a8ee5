#include "kernels/bench/norm_reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ess::bench {

std::uint16_t float_to_bf16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) {
    // Keep the sign and force a quiet-NaN mantissa bit, so truncation cannot make it infinity.
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040U);
  }
  // Round to nearest even: add 0x7FFF plus the lowest kept bit, then truncate.
  const std::uint32_t lsb = (bits >> 16) & 1U;
  return static_cast<std::uint16_t>((bits + 0x7FFFU + lsb) >> 16);
}

float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

void norm_reference(NormKind kind, std::int64_t tokens, std::int64_t hidden,
                    std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, double eps, std::span<double> y) {
  if (tokens < 1 || hidden < 1) {
    throw std::invalid_argument("norm_reference: tokens and hidden must be >= 1");
  }
  const auto h = static_cast<std::size_t>(hidden);
  const std::size_t total = static_cast<std::size_t>(tokens) * h;
  if (x.size() != total || y.size() != total || weight.size() != h ||
      (kind == NormKind::layer && bias.size() != h)) {
    throw std::invalid_argument("norm_reference: x and y need tokens x hidden values, weight (and "
                                "for layer, bias) hidden values");
  }
  for (std::size_t row = 0; row < static_cast<std::size_t>(tokens); ++row) {
    const std::span<const float> xr = x.subspan(row * h, h);
    const std::span<double> yr = y.subspan(row * h, h);
    double mean = 0.0;
    if (kind == NormKind::layer) {
      for (const float v : xr) mean += v;
      mean /= static_cast<double>(h);
    }
    double squares = 0.0;
    for (const float v : xr) squares += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(h) + eps);
    for (std::size_t i = 0; i < h; ++i) {
      yr[i] = (xr[i] - mean) * inv * weight[i] + (kind == NormKind::layer ? bias[i] : 0.0);
    }
  }
}

Comparison compare_outputs(std::span<const float> got, std::span<const double> expected,
                           double rel_tol, double abs_tol) {
  if (got.size() != expected.size()) {
    throw std::invalid_argument("compare_outputs: " + std::to_string(got.size()) +
                                " values against " + std::to_string(expected.size()));
  }
  Comparison c;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = rel_tol * std::fabs(expected[i]) + abs_tol;
    const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
    // A NaN error compares false everywhere, so test for it explicitly.
    const double ratio = std::isnan(error) ? std::numeric_limits<double>::infinity() : error / bound;
    if (c.worst_index < 0 || ratio > c.worst_ratio) {
      c.worst_index = static_cast<std::int64_t>(i);
      c.got = got[i];
      c.expected = expected[i];
      c.worst_ratio = ratio;
    }
  }
  c.ok = c.worst_index < 0 || c.worst_ratio <= 1.0;
  return c;
}

}  // namespace ess::bench

