#include "kernels/runner/reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ess::runner {

float fp8_e4m3_to_float(std::uint8_t bits) {
  const bool negative = (bits & 0x80U) != 0;
  const int exponent = (bits >> 3) & 0x0F;
  const int mantissa = bits & 0x07;
  if (exponent == 0x0F && mantissa == 0x07) return std::numeric_limits<float>::quiet_NaN();
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9)                     // subnormal: m/8 x 2^-6
                                         : std::ldexp(8 + mantissa, exponent - 7 - 3);  // (1 + m/8) x 2^(e-7)
  return static_cast<float>(negative ? -magnitude : magnitude);
}

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040U);
  const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float round_bf16(float value) { return bf16_to_float(float_to_bf16(value)); }

std::vector<float> rmsnorm_reference(const std::vector<float>& x, const std::vector<float>& weight, int rows, int cols,
                                     double eps) {
  if (x.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) ||
      weight.size() != static_cast<std::size_t>(cols)) {
    throw std::invalid_argument("rmsnorm_reference: sizes do not match rows x cols");
  }
  std::vector<float> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const std::size_t base = static_cast<std::size_t>(r) * static_cast<std::size_t>(cols);
    double squares = 0.0;
    for (int c = 0; c < cols; ++c) squares += static_cast<double>(x[base + c]) * x[base + c];
    const double inverse = 1.0 / std::sqrt(squares / cols + eps);
    for (int c = 0; c < cols; ++c) y[base + c] = static_cast<float>(x[base + c] * inverse * weight[c]);
  }
  return y;
}

std::vector<std::int32_t> topk_reference(const std::vector<float>& scores, int k) {
  std::vector<std::int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const std::size_t take = std::min(scores.size(), static_cast<std::size_t>(std::max(k, 0)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take), order.end(),
                    [&](std::int32_t a, std::int32_t b) {
                      const float x = scores[static_cast<std::size_t>(a)];
                      const float y = scores[static_cast<std::size_t>(b)];
                      return x != y ? x > y : a < b;
                    });
  order.resize(take);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<float> decode_latent_row(const std::uint8_t* row, int kv_lora, int rope) {
  std::vector<float> values(static_cast<std::size_t>(kv_lora + rope));
  const std::uint8_t* scales = row + kv_lora;
  const std::uint8_t* rope_bits = scales + 4 * (kv_lora / kLatentScaleGroup);
  for (int i = 0; i < kv_lora; ++i) {
    float scale = 0.0F;
    std::memcpy(&scale, scales + 4 * (i / kLatentScaleGroup), sizeof scale);
    values[static_cast<std::size_t>(i)] = fp8_e4m3_to_float(row[i]) * scale;
  }
  for (int i = 0; i < rope; ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, rope_bits + 2 * i, sizeof bits);
    values[static_cast<std::size_t>(kv_lora + i)] = bf16_to_float(bits);
  }
  return values;
}

std::vector<float> indexer_score_reference(const std::vector<float>& q, const std::vector<float>& weight,
                                           const std::vector<float>& key, const std::vector<float>& key_scale,
                                           int heads, int dim) {
  const std::size_t n = key_scale.size();
  if (q.size() != static_cast<std::size_t>(heads * dim) || weight.size() != static_cast<std::size_t>(heads) ||
      key.size() != n * static_cast<std::size_t>(dim)) {
    throw std::invalid_argument("indexer_score_reference: sizes do not match heads x dim and n keys");
  }
  std::vector<float> scores(n);
  for (std::size_t j = 0; j < n; ++j) {
    double total = 0.0;
    for (int h = 0; h < heads; ++h) {
      double dot = 0.0;
      for (int d = 0; d < dim; ++d) {
        dot += static_cast<double>(q[static_cast<std::size_t>(h * dim + d)]) * key[j * static_cast<std::size_t>(dim) + d];
      }
      total += weight[static_cast<std::size_t>(h)] * std::max(0.0, key_scale[j] * dot);
    }
    scores[j] = static_cast<float>(total);
  }
  return scores;
}

AttentionOut sparse_mla_reference(const std::vector<float>& q_latent, const std::vector<float>& q_rope,
                                  const std::vector<std::vector<float>>& rows, int heads, int kv_lora, int rope,
                                  double softmax_scale) {
  const auto H = static_cast<std::size_t>(heads);
  const auto D = static_cast<std::size_t>(kv_lora);
  const auto R = static_cast<std::size_t>(rope);
  if (q_latent.size() != H * D || q_rope.size() != H * R) {
    throw std::invalid_argument("sparse_mla_reference: query sizes do not match heads x dims");
  }
  for (const auto& row : rows) {
    if (row.size() != D + R) throw std::invalid_argument("sparse_mla_reference: a row is not kv_lora + rope values");
  }
  AttentionOut result{std::vector<float>(H * D, 0.0F), std::vector<float>(H, -std::numeric_limits<float>::infinity())};
  if (rows.empty()) return result;
  std::vector<double> s(rows.size());
  std::vector<double> o(D);
  for (std::size_t h = 0; h < H; ++h) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < rows.size(); ++j) {
      double dot = 0.0;
      for (std::size_t d = 0; d < D; ++d) dot += static_cast<double>(q_latent[h * D + d]) * rows[j][d];
      for (std::size_t d = 0; d < R; ++d) dot += static_cast<double>(q_rope[h * R + d]) * rows[j][D + d];
      s[j] = softmax_scale * dot;
      top = std::max(top, s[j]);
    }
    double sum = 0.0;
    std::fill(o.begin(), o.end(), 0.0);
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const double p = std::exp(s[j] - top);
      sum += p;
      for (std::size_t d = 0; d < D; ++d) o[d] += p * rows[j][d];
    }
    for (std::size_t d = 0; d < D; ++d) result.out[h * D + d] = static_cast<float>(o[d] / sum);
    result.lse[h] = static_cast<float>(top + std::log(sum));
  }
  return result;
}

AttentionOut merge_reference(const AttentionOut& a, const AttentionOut& b, int heads, int kv_lora) {
  const auto H = static_cast<std::size_t>(heads);
  const auto D = static_cast<std::size_t>(kv_lora);
  AttentionOut result{std::vector<float>(H * D, 0.0F), std::vector<float>(H, -std::numeric_limits<float>::infinity())};
  for (std::size_t h = 0; h < H; ++h) {
    const double la = a.lse[h];
    const double lb = b.lse[h];
    const double top = std::max(la, lb);
    if (std::isinf(top) && top < 0) continue;  // both empty
    const double wa = std::isinf(la) ? 0.0 : std::exp(la - top);
    const double wb = std::isinf(lb) ? 0.0 : std::exp(lb - top);
    for (std::size_t d = 0; d < D; ++d) {
      result.out[h * D + d] = static_cast<float>((wa * a.out[h * D + d] + wb * b.out[h * D + d]) / (wa + wb));
    }
    result.lse[h] = static_cast<float>(top + std::log(wa + wb));
  }
  return result;
}

}  // namespace ess::runner
