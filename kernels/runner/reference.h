// CPU references for ess-runner's own kernels, which its start-up self-test compares the GPU
// against: number formats (fp8 e4m3, bf16), RMSNorm, top-k, the latent row format, the indexer
// score, sparse MLA attention over selected rows and the log-sum-exp merge of two partial
// attentions. Plain loops in double precision where it matters; slow and obviously right.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/base/fp8.h"

namespace ess::runner {

// OCP FP8 E4M3 ("e4m3fn", as cuda_fp8.h's __nv_fp8_e4m3): 1 sign, 4 exponent (bias 7), 3 mantissa
// bits; no infinities; S.1111.111 is NaN; largest finite 448; subnormals m x 2^-9.
[[nodiscard]] float fp8_e4m3_to_float(std::uint8_t bits);

// bfloat16: the high half of an IEEE float.
[[nodiscard]] float bf16_to_float(std::uint16_t bits);
// Round to nearest, ties to even (NaN stays a quiet NaN).
[[nodiscard]] std::uint16_t float_to_bf16(float value);
// value rounded to bf16 and back.
[[nodiscard]] float round_bf16(float value);

// y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) x weight[c], in double; rows x cols, row-major.
[[nodiscard]] std::vector<float> rmsnorm_reference(const std::vector<float>& x, const std::vector<float>& weight,
                                                   int rows, int cols, double eps);

// Indices of the min(k, n) largest of `scores` (ties: the lower index wins), in ascending order.
[[nodiscard]] std::vector<std::int32_t> topk_reference(const std::vector<float>& scores, int k);

// A latent row (FlashMLA's fp8 KV cache layout): kv_lora fp8 e4m3 values, kv_lora / 128 fp32
// scales (one per 128 values), rope bf16 values. 512 + 16 + 128 = 656 bytes for DeepSeek-V3.2.
inline constexpr int kLatentScaleGroup = kFp8ScaleGroup;
[[nodiscard]] constexpr int latent_row_bytes(int kv_lora, int rope) {
  return kv_lora + kFp8ScaleBytes * (kv_lora / kLatentScaleGroup) + 2 * rope;
}
// The row's kv_lora + rope values: fp8 x its group's scale, then the rope values.
[[nodiscard]] std::vector<float> decode_latent_row(const std::uint8_t* row, int kv_lora, int rope);

// Lightning indexer score of one query token over n keys:
//   score[j] = sum_h weight[h] x relu(key_scale[j] x dot(q[h], key[j]))
// q: heads x dim, key: n x dim (already decoded from fp8), all row-major.
[[nodiscard]] std::vector<float> indexer_score_reference(const std::vector<float>& q, const std::vector<float>& weight,
                                                         const std::vector<float>& key,
                                                         const std::vector<float>& key_scale, int heads, int dim);

// Absorbed MLA of one query token over n selected rows (each kv_lora + rope values, as
// decode_latent_row gives them), for every head:
//   s[h][j] = softmax_scale x (dot(q_latent[h], row[j][0:kv_lora]) + dot(q_rope[h], row[j][kv_lora:]))
//   out[h]  = sum_j softmax_j(s[h]) x row[j][0:kv_lora],   lse[h] = log(sum_j exp(s[h][j]))
// With n = 0, out is zero and lse is -infinity.
struct AttentionOut {
  std::vector<float> out;  // heads x kv_lora
  std::vector<float> lse;  // heads
};
[[nodiscard]] AttentionOut sparse_mla_reference(const std::vector<float>& q_latent, const std::vector<float>& q_rope,
                                                const std::vector<std::vector<float>>& rows, int heads, int kv_lora,
                                                int rope, double softmax_scale);

// The attention over the union of two disjoint row sets from the two partial attentions:
// out = (e^{lse_a} out_a + e^{lse_b} out_b) / (e^{lse_a} + e^{lse_b}), computed stably.
[[nodiscard]] AttentionOut merge_reference(const AttentionOut& a, const AttentionOut& b, int heads, int kv_lora);

}  // namespace ess::runner
