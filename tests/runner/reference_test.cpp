#include "kernels/runner/reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace ess::runner;

TEST_CASE("fp8 e4m3 decodes as OCP e4m3fn") {
  CHECK(fp8_e4m3_to_float(0x38) == 1.0F);            // exponent 7 (bias 7), mantissa 0
  CHECK(fp8_e4m3_to_float(0x3C) == 1.5F);            // mantissa 4/8
  CHECK(fp8_e4m3_to_float(0x40) == 2.0F);            // exponent 8
  CHECK(fp8_e4m3_to_float(0xB8) == -1.0F);           // sign
  CHECK(fp8_e4m3_to_float(0x7E) == 448.0F);          // largest finite: 1.75 x 2^8
  CHECK(fp8_e4m3_to_float(0x08) == std::ldexp(1.0F, -6));  // smallest normal
  CHECK(fp8_e4m3_to_float(0x01) == std::ldexp(1.0F, -9));  // smallest subnormal: 1/8 x 2^-6
  CHECK(fp8_e4m3_to_float(0x07) == 7.0F * std::ldexp(1.0F, -9));
  CHECK(fp8_e4m3_to_float(0x00) == 0.0F);
  CHECK(std::isnan(fp8_e4m3_to_float(0x7F)));
  CHECK(std::isnan(fp8_e4m3_to_float(0xFF)));
  CHECK(fp8_e4m3_to_float(0x78) == 256.0F);          // exponent 15 is finite in e4m3fn
}

TEST_CASE("bf16 rounds to nearest even") {
  CHECK(float_to_bf16(1.0F) == 0x3F80);
  CHECK(bf16_to_float(0x3F80) == 1.0F);
  CHECK(bf16_to_float(0xC000) == -2.0F);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 0x3F80.
  CHECK(float_to_bf16(1.0F + std::ldexp(1.0F, -8)) == 0x3F80);
  // 1 + 3 x 2^-8 is halfway between 0x3F81 and 0x3F82: ties to the even 0x3F82.
  CHECK(float_to_bf16(1.0F + 3.0F * std::ldexp(1.0F, -8)) == 0x3F82);
  // Just above the first tie: rounds up.
  CHECK(float_to_bf16(1.0F + std::ldexp(1.0F, -8) + std::ldexp(1.0F, -20)) == 0x3F81);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(round_bf16(1.0F + std::ldexp(1.0F, -10)) == 1.0F);
}

TEST_CASE("rmsnorm divides by the root mean square and scales by the weight") {
  // Row [3, 4]: mean square (9 + 16) / 2 = 12.5, rms = 5 / sqrt(2); y = [3, 8] x sqrt(2) / 5.
  const auto y = rmsnorm_reference({3.0F, 4.0F, 1.0F, 1.0F}, {1.0F, 2.0F}, 2, 2, 0.0);
  CHECK(y[0] == Approx(3.0 * std::sqrt(2.0) / 5.0));
  CHECK(y[1] == Approx(8.0 * std::sqrt(2.0) / 5.0));
  // Row [1, 1]: rms 1.
  CHECK(y[2] == Approx(1.0));
  CHECK(y[3] == Approx(2.0));
  // eps enters under the root: [1, 1] with eps 3 -> 1 / 2.
  CHECK(rmsnorm_reference({1.0F, 1.0F}, {1.0F, 1.0F}, 1, 2, 3.0)[0] == Approx(0.5));
}

TEST_CASE("top-k takes the largest, lower index first on ties, listed ascending") {
  const std::vector<float> s{0.5F, 3.0F, -1.0F, 3.0F, 2.0F};
  CHECK(topk_reference(s, 3) == std::vector<std::int32_t>{1, 3, 4});
  CHECK(topk_reference(s, 1) == std::vector<std::int32_t>{1});
  CHECK(topk_reference({1.0F, 1.0F, 1.0F}, 2) == std::vector<std::int32_t>{0, 1});
  CHECK(topk_reference(s, 9) == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  CHECK(topk_reference({-5.0F, -1.0F, -3.0F}, 1) == std::vector<std::int32_t>{1});
}

TEST_CASE("a latent row is fp8 values times their group's scale, then bf16 rope") {
  static_assert(latent_row_bytes(512, 64) == 656);  // FlashMLA: 512 + 4 x 4 + 64 x 2
  std::vector<std::uint8_t> row(656, 0);
  row[0] = 0x38;    // 1.0, group 0
  row[130] = 0x40;  // 2.0, group 1
  row[511] = 0xB8;  // -1.0, group 3
  const float scales[4] = {0.5F, 0.25F, 1.0F, 4.0F};
  std::memcpy(row.data() + 512, scales, sizeof scales);
  const std::uint16_t rope_first = 0x3F80;  // 1.0
  const std::uint16_t rope_last = 0xC000;   // -2.0
  std::memcpy(row.data() + 528, &rope_first, 2);
  std::memcpy(row.data() + 528 + 126, &rope_last, 2);
  const auto v = decode_latent_row(row.data(), 512, 64);
  REQUIRE(v.size() == 576);
  CHECK(v[0] == 0.5F);
  CHECK(v[1] == 0.0F);
  CHECK(v[130] == 0.5F);
  CHECK(v[511] == -4.0F);
  CHECK(v[512] == 1.0F);
  CHECK(v[575] == -2.0F);
}

TEST_CASE("the indexer score sums weighted rectified head scores") {
  // Heads q0 = [1, 0], q1 = [0, 1], weights [1, 0.5].
  // Key 0 = [2, -4], scale 0.5: head 0 relu(0.5 x 2) = 1, head 1 relu(0.5 x -4) = 0 -> 1.
  // Key 1 = [-1, 6], scale 2: head 0 relu(-2) = 0, head 1 relu(12) = 12, x 0.5 -> 6.
  const auto s = indexer_score_reference({1, 0, 0, 1}, {1.0F, 0.5F}, {2, -4, -1, 6}, {0.5F, 2.0F}, 2, 2);
  CHECK(s == std::vector<float>{1.0F, 6.0F});
}

TEST_CASE("sparse MLA is a softmax over the selected rows of latent plus rope scores") {
  // One head, kv_lora 2, rope 1. q_latent [1, 0], q_rope [1].
  // Row 0 [1, 2 | 0]: score 1. Row 1 [0, 4 | 1]: score 1. Equal: out = mean = [0.5, 3],
  // lse = log(e + e) = 1 + ln 2.
  const auto a = sparse_mla_reference({1, 0}, {1}, {{1, 2, 0}, {0, 4, 1}}, 1, 2, 1, 1.0);
  CHECK(a.out[0] == Approx(0.5));
  CHECK(a.out[1] == Approx(3.0));
  CHECK(a.lse[0] == Approx(1.0 + std::log(2.0)));
  // Scores 0 and ln 3: weights 1/4 and 3/4; out[0] = 3/4 ln 3; lse = ln 4.
  const auto b = sparse_mla_reference({1, 0}, {0}, {{0, 0, 0}, {static_cast<float>(std::log(3.0)), 8, 0}}, 1, 2, 1, 1.0);
  CHECK(b.out[0] == Approx(0.75 * std::log(3.0)));
  CHECK(b.out[1] == Approx(6.0));
  CHECK(b.lse[0] == Approx(std::log(4.0)));
  // The softmax scale multiplies the scores: scale 2 on scores 0, ln 3 gives weights 1/10, 9/10.
  const auto c = sparse_mla_reference({1, 0}, {0}, {{0, 0, 0}, {static_cast<float>(std::log(3.0)), 10, 0}}, 1, 2, 1, 2.0);
  CHECK(c.out[1] == Approx(9.0));
  CHECK(c.lse[0] == Approx(std::log(10.0)));
}

TEST_CASE("attention over no rows is zero with lse minus infinity") {
  const auto e = sparse_mla_reference({1, 0}, {0}, {}, 1, 2, 1, 1.0);
  CHECK(e.out == std::vector<float>{0.0F, 0.0F});
  CHECK(std::isinf(e.lse[0]));
  CHECK(e.lse[0] < 0);
}

TEST_CASE("merging weights each part by exp(lse)") {
  // Part a: out [1, 0], lse 0 (weight 1); part b: out [0, 2], lse ln 3 (weight 3).
  // Merged: ([1, 0] + 3 [0, 2]) / 4 = [0.25, 1.5], lse ln 4.
  const AttentionOut a{{1.0F, 0.0F}, {0.0F}};
  const AttentionOut b{{0.0F, 2.0F}, {static_cast<float>(std::log(3.0))}};
  const auto m = merge_reference(a, b, 1, 2);
  CHECK(m.out[0] == Approx(0.25));
  CHECK(m.out[1] == Approx(1.5));
  CHECK(m.lse[0] == Approx(std::log(4.0)));
  // With an empty part, the other passes through.
  const AttentionOut empty{{0.0F, 0.0F}, {-std::numeric_limits<float>::infinity()}};
  CHECK(merge_reference(b, empty, 1, 2).out == b.out);
  CHECK(std::isinf(merge_reference(empty, empty, 1, 2).lse[0]));
}

TEST_CASE("merging the attentions of two halves gives the attention of the whole") {
  const std::vector<float> q{0.3F, -0.7F, 0.2F, 0.9F};  // 2 heads x kv_lora 2
  const std::vector<float> r{0.5F, -0.25F};             // 2 heads x rope 1
  const std::vector<std::vector<float>> rows{{1, 2, 3}, {-1, 0.5F, 2}, {0.25F, -2, 1}, {3, 1, -1}};
  const auto whole = sparse_mla_reference(q, r, rows, 2, 2, 1, 0.7);
  const auto first = sparse_mla_reference(q, r, {rows[0], rows[2]}, 2, 2, 1, 0.7);
  const auto second = sparse_mla_reference(q, r, {rows[1], rows[3]}, 2, 2, 1, 0.7);
  const auto merged = merge_reference(first, second, 2, 2);
  for (std::size_t i = 0; i < whole.out.size(); ++i) CHECK(merged.out[i] == Approx(whole.out[i]).epsilon(1e-5));
  for (std::size_t h = 0; h < 2; ++h) CHECK(merged.lse[h] == Approx(whole.lse[h]).epsilon(1e-5));
}
