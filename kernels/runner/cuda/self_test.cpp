#include "kernels/runner/cuda/self_test.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/runner/cuda/check.h"
#include "kernels/runner/cuda/kernels.h"
#include "kernels/runner/reference.h"
#include "sim/base/rng.h"

namespace ess::runner::gpu {

namespace {

// Device buffers freed at the end of the self-test.
class Scratch {
 public:
  Scratch() { RUNNER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Scratch() {
    cudaStreamSynchronize(stream_);
    for (void* p : device_) cudaFree(p);
    for (void* p : host_) cudaFreeHost(p);
    cudaStreamDestroy(stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  template <class T>
  T* device(std::size_t count) {
    void* p = nullptr;
    RUNNER_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
    // On the test's stream, which does not synchronise with the legacy default stream.
    RUNNER_CUDA_CHECK(cudaMemsetAsync(p, 0, std::max<std::size_t>(count, 1) * sizeof(T), stream_));
    device_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  T* upload(const std::vector<T>& values) {
    T* p = device<T>(values.size());
    RUNNER_CUDA_CHECK(cudaMemcpyAsync(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice, stream_));
    RUNNER_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `values` may be a temporary
    return p;
  }
  template <class T>
  std::vector<T> download(const T* p, std::size_t count) {
    RUNNER_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<T> values(count);
    RUNNER_CUDA_CHECK(cudaMemcpyAsync(values.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    RUNNER_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return values;
  }
  // Pinned, mapped host memory: the host pointer (its device pointer through mapped()).
  std::uint8_t* host(std::size_t bytes) {
    void* p = nullptr;
    RUNNER_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(p, 0, bytes);
    host_.push_back(p);
    return static_cast<std::uint8_t*>(p);
  }
  static std::uint8_t* mapped(std::uint8_t* host) {
    void* d = nullptr;
    RUNNER_CUDA_CHECK(cudaHostGetDevicePointer(&d, host, 0));
    return static_cast<std::uint8_t*>(d);
  }
  [[nodiscard]] cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  std::vector<void*> device_;
  std::vector<void*> host_;
};

// Random bf16 bits of values uniform in [lo, hi).
std::vector<std::uint16_t> random_bf16(Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = float_to_bf16(static_cast<float>(lo + (hi - lo) * rng.uniform()));
  return v;
}

std::vector<float> to_float(const std::vector<std::uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) v[i] = bf16_to_float(bits[i]);
  return v;
}

// A random e4m3 byte that is not NaN.
std::uint8_t random_fp8(Rng& rng) {
  auto b = static_cast<std::uint8_t>(rng.below(256));
  if ((b & 0x7FU) == 0x7FU) b ^= 1U;
  return b;
}

// Random latent rows with valid fp8 values, scales in [0.5, 1.5) and bf16 rope in [-1, 1).
std::vector<std::uint8_t> random_latent_rows(Rng& rng, int rows) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows) * kLatentRowBytes);
  for (int r = 0; r < rows; ++r) {
    std::uint8_t* row = bytes.data() + static_cast<std::size_t>(r) * kLatentRowBytes;
    for (int i = 0; i < kKvLora; ++i) row[i] = random_fp8(rng);
    for (int g = 0; g < kKvLora / kLatentScaleGroup; ++g) {
      const auto scale = static_cast<float>(0.5 + rng.uniform());
      std::memcpy(row + kKvLora + 4 * g, &scale, 4);
    }
    for (int i = 0; i < kRope; ++i) {
      const std::uint16_t bits = float_to_bf16(static_cast<float>(2.0 * rng.uniform() - 1.0));
      std::memcpy(row + kKvLora + 16 + 2 * i, &bits, 2);
    }
  }
  return bytes;
}

struct Check {
  std::FILE* log;
  bool ok = true;
  void result(const char* name, bool passed, const std::string& detail) {
    std::fprintf(log, "self-test: %-22s %s (%s)\n", name, passed ? "ok    " : "FAILED", detail.c_str());
    ok = ok && passed;
  }
};

std::string describe(double worst, double allowed) {
  char text[96];
  std::snprintf(text, sizeof text, "worst error %.3g of %.3g allowed", worst, allowed);
  return text;
}

// ---- the checks -------------------------------------------------------------------------------------

void check_rmsnorm(Check& check, Scratch& s, Rng& rng) {
  double worst_ratio = 0.0;
  for (const int cols : {7168, 1536}) {
    const int rows = 3;
    const int stride = cols + 8;  // a strided input, as q_norm reads inside the fused q_a/kv_a row
    const auto x = random_bf16(rng, static_cast<std::size_t>(rows * stride), -2.0, 2.0);
    const auto w = random_bf16(rng, static_cast<std::size_t>(cols), 0.5, 1.5);
    const auto* dx = reinterpret_cast<const bf16*>(s.upload(x));
    const auto* dw = reinterpret_cast<const bf16*>(s.upload(w));
    auto* dy = reinterpret_cast<bf16*>(s.device<std::uint16_t>(static_cast<std::size_t>(rows * cols)));
    rmsnorm(dx, stride, dw, dy, cols, rows, cols, 1e-6F, s.stream());
    const auto y = to_float(s.download(reinterpret_cast<const std::uint16_t*>(dy), static_cast<std::size_t>(rows * cols)));
    std::vector<float> packed;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) packed.push_back(bf16_to_float(x[static_cast<std::size_t>(r * stride + c)]));
    }
    const auto ref = rmsnorm_reference(packed, to_float(w), rows, cols, 1e-6);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      // bf16 output: within one unit in the last place (2^-7 relative) of the exact value.
      const double allowed = std::ldexp(std::fabs(ref[i]), -7) + 1e-6;
      worst_ratio = std::max(worst_ratio, std::fabs(y[i] - ref[i]) / allowed);
    }
  }
  check.result("rmsnorm", worst_ratio <= 1.0, describe(worst_ratio, 1.0) + " (x one bf16 ulp)");
}

void check_kv_norm_store(Check& check, Scratch& s, Rng& rng) {
  const int tokens = 2;
  const int stride = 2112;  // the fused q_a/kv_a/rope row of DeepSeek-V3.2: kv at 1536, rope at 2048
  const int rows_per_token = 4;
  const int position = 2;
  const auto qkv = random_bf16(rng, static_cast<std::size_t>(tokens * stride), -3.0, 3.0);
  const auto w = random_bf16(rng, kKvLora, 0.5, 1.5);
  const auto* dqkv = reinterpret_cast<const bf16*>(s.upload(qkv));
  const auto* dw = reinterpret_cast<const bf16*>(s.upload(w));
  auto* cache = s.device<std::uint8_t>(static_cast<std::size_t>(tokens * rows_per_token * kLatentRowBytes));
  kv_norm_store(dqkv + 1536, stride, dw, cache + position * kLatentRowBytes, rows_per_token * kLatentRowBytes, tokens,
                1e-6F, s.stream());
  const auto bytes = s.download(cache, static_cast<std::size_t>(tokens * rows_per_token * kLatentRowBytes));
  double worst = 0.0;
  bool rope_equal = true;
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> kv(kKvLora);
    for (int i = 0; i < kKvLora; ++i) kv[static_cast<std::size_t>(i)] = bf16_to_float(qkv[static_cast<std::size_t>(t * stride + 1536 + i)]);
    auto ref = rmsnorm_reference(kv, to_float(w), 1, kKvLora, 1e-6);
    for (float& v : ref) v = round_bf16(v);
    const std::uint8_t* row = bytes.data() + static_cast<std::size_t>((t * rows_per_token + position) * kLatentRowBytes);
    const auto decoded = decode_latent_row(row, kKvLora, kRope);
    for (int i = 0; i < kKvLora; ++i) {
      float scale = 0.0F;
      std::memcpy(&scale, row + kKvLora + 4 * (i / kLatentScaleGroup), 4);
      // e4m3 keeps 3 mantissa bits: half a unit is at most 2^-4 of the value (subnormals: 2^-10 x
      // scale); plus one bf16 unit (2^-7) where the GPU's fp32 normalisation rounded the other way.
      const double allowed = (0.0625 + 0.0078125) * 1.01 * std::fabs(ref[static_cast<std::size_t>(i)]) +
                             std::ldexp(scale, -10) + 1e-6;
      worst = std::max(worst, std::fabs(decoded[static_cast<std::size_t>(i)] - ref[static_cast<std::size_t>(i)]) / allowed);
    }
    rope_equal = rope_equal && std::memcmp(row + kKvLora + 16, qkv.data() + t * stride + 2048, 2 * kRope) == 0;
  }
  check.result("kv_norm (row store)", worst <= 1.0 && rope_equal,
               describe(worst, 1.0) + " (x half an fp8 ulp)" + (rope_equal ? "" : ", rope bytes differ"));
}

void check_indexer_score(Check& check, Scratch& s, Rng& rng) {
  const int tokens = 2;
  const int context = 300;  // two blocks, the second partial, and a partial 64-key tile
  const int rows = 320;
  const int qdim = kIndexerHeads * kIndexerDim;
  const int kw_stride = kIndexerDim + kIndexerHeads;
  const auto q = random_bf16(rng, static_cast<std::size_t>(tokens * qdim), -1.0, 1.0);
  const auto kw = random_bf16(rng, static_cast<std::size_t>(tokens * kw_stride), -1.0, 1.0);
  std::vector<std::uint8_t> keys(static_cast<std::size_t>(tokens * rows * kIndexerDim));
  for (auto& b : keys) b = random_fp8(rng);
  std::vector<float> scales(static_cast<std::size_t>(tokens * rows));
  for (auto& v : scales) v = static_cast<float>(0.5 + rng.uniform());
  auto* dkeys = s.upload(keys);
  auto* dscales = s.upload(scales);
  auto* scores = s.device<float>(static_cast<std::size_t>(tokens * rows));
  indexer_score(reinterpret_cast<const bf16*>(s.upload(q)), reinterpret_cast<const bf16*>(s.upload(kw)), kw_stride,
                dkeys, dscales, rows, context, scores, rows, tokens, s.stream());
  const auto got = s.download(scores, static_cast<std::size_t>(tokens * rows));
  const auto keys_after = s.download(dkeys, keys.size());
  const auto scales_after = s.download(dscales, scales.size());
  double worst = 0.0;
  double new_key_worst = 0.0;
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> qt(static_cast<std::size_t>(qdim));
    for (std::size_t i = 0; i < qt.size(); ++i) qt[i] = bf16_to_float(q[static_cast<std::size_t>(t * qdim) + i]);
    std::vector<float> wt(kIndexerHeads);
    for (int h = 0; h < kIndexerHeads; ++h) wt[static_cast<std::size_t>(h)] = bf16_to_float(kw[static_cast<std::size_t>(t * kw_stride + kIndexerDim + h)]);
    std::vector<float> kt(static_cast<std::size_t>(context * kIndexerDim));
    std::vector<float> st(static_cast<std::size_t>(context));
    for (int j = 0; j < context; ++j) {
      for (int d = 0; d < kIndexerDim; ++d) {
        kt[static_cast<std::size_t>(j * kIndexerDim + d)] = fp8_e4m3_to_float(keys[static_cast<std::size_t>((t * rows + j) * kIndexerDim + d)]);
      }
      st[static_cast<std::size_t>(j)] = scales[static_cast<std::size_t>(t * rows + j)];
    }
    const auto ref = indexer_score_reference(qt, wt, kt, st, kIndexerHeads, kIndexerDim);
    double top = 0.0;
    for (const float v : ref) top = std::max(top, static_cast<double>(std::fabs(v)));
    for (int j = 0; j < context; ++j) {
      worst = std::max(worst, std::fabs(got[static_cast<std::size_t>(t * rows + j)] - ref[static_cast<std::size_t>(j)]) / (1e-4 * top + 1e-4));
    }
    // The token's new key, quantised into position `context`.
    const float scale = scales_after[static_cast<std::size_t>(t * rows + context)];
    for (int d = 0; d < kIndexerDim; ++d) {
      const float want = bf16_to_float(kw[static_cast<std::size_t>(t * kw_stride + d)]);
      const float have = fp8_e4m3_to_float(keys_after[static_cast<std::size_t>((t * rows + context) * kIndexerDim + d)]) * scale;
      const double allowed = std::ldexp(std::fabs(want), -4) * 1.01 + std::ldexp(scale, -10) + 1e-6;
      new_key_worst = std::max(new_key_worst, std::fabs(have - want) / allowed);
    }
  }
  check.result("indexer_score", worst <= 1.0 && new_key_worst <= 1.0,
               describe(worst, 1.0) + " (x 1e-4 of the largest score); new key " + describe(new_key_worst, 1.0));
}

void check_topk(Check& check, Scratch& s, Rng& rng) {
  const int k = 2048;
  bool ok = true;
  std::string detail;
  // Distinct scores, negative and positive: the exact set.
  {
    const int n = 5000;
    const int tokens = 2;
    std::vector<float> scores(static_cast<std::size_t>(tokens * n));
    for (int t = 0; t < tokens; ++t) {
      std::vector<int> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
      for (int i = 0; i < n; ++i) scores[static_cast<std::size_t>(t * n + i)] = static_cast<float>(order[static_cast<std::size_t>(i)] - n / 2) * 0.01F;
    }
    auto* out = s.device<std::int32_t>(static_cast<std::size_t>(tokens * k));
    topk(s.upload(scores), n, n, k, out, k, tokens, s.stream());
    const auto got = s.download(out, static_cast<std::size_t>(tokens * k));
    for (int t = 0; t < tokens; ++t) {
      std::vector<std::int32_t> mine(got.begin() + t * k, got.begin() + (t + 1) * k);
      std::sort(mine.begin(), mine.end());
      const std::vector<float> row(scores.begin() + t * n, scores.begin() + (t + 1) * n);
      if (mine != topk_reference(row, k)) ok = false;
    }
    detail += ok ? "2048 of 5000 exact" : "2048 of 5000 differ";
  }
  // Fewer scores than k: all of them.
  {
    const int n = 100;
    std::vector<float> scores(static_cast<std::size_t>(n), 1.0F);
    auto* out = s.device<std::int32_t>(static_cast<std::size_t>(k));
    topk(s.upload(scores), n, n, k, out, k, 1, s.stream());
    auto got = s.download(out, static_cast<std::size_t>(n));
    std::vector<std::int32_t> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    std::sort(got.begin(), got.end());
    const bool fine = got == all;
    ok = ok && fine;
    detail += fine ? ", 100 < k all" : ", 100 < k wrong";
  }
  // All equal: any k distinct indices.
  {
    const int n = 3000;
    std::vector<float> scores(static_cast<std::size_t>(n), 0.5F);
    auto* out = s.device<std::int32_t>(static_cast<std::size_t>(k));
    topk(s.upload(scores), n, n, k, out, k, 1, s.stream());
    auto got = s.download(out, static_cast<std::size_t>(k));
    std::sort(got.begin(), got.end());
    const bool fine = std::adjacent_find(got.begin(), got.end()) == got.end() && got.front() >= 0 && got.back() < n;
    ok = ok && fine;
    detail += fine ? ", ties distinct" : ", ties wrong";
  }
  check.result("indexer_topk", ok, detail);
}

void check_sparse_mla(Check& check, Scratch& s, Rng& rng) {
  const int heads = 64;  // two blocks of 32 heads
  const int tokens = 2;
  const int cache_rows = 600;
  const int qk_head = 192;
  const std::vector<int> counts{300, 37};  // two chunks of 256 (the second partial), and a short one
  const int row_stride = 320;
  const double scale = 1.0 / std::sqrt(192.0);
  const auto cache = random_latent_rows(rng, cache_rows);
  const auto q_latent = random_bf16(rng, static_cast<std::size_t>(tokens * heads * kKvLora), -1.0, 1.0);
  const auto qb = random_bf16(rng, static_cast<std::size_t>(tokens * heads * qk_head), -1.0, 1.0);
  std::vector<std::int32_t> rows(static_cast<std::size_t>(tokens * row_stride), 0);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> order(static_cast<std::size_t>(cache_rows));
    std::iota(order.begin(), order.end(), 0);
    for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    for (int i = 0; i < counts[static_cast<std::size_t>(t)]; ++i) rows[static_cast<std::size_t>(t * row_stride + i)] = order[static_cast<std::size_t>(i)];
  }
  // DA's split of the same rows: even list positions are "hits", odd ones "misses"; token 1 has
  // no misses at all (its merge must pass the hits through).
  std::vector<std::int32_t> hits(rows.size(), 0);
  std::vector<std::int32_t> misses(rows.size(), 0);
  std::vector<std::int32_t> hit_counts(static_cast<std::size_t>(tokens), 0);
  std::vector<std::int32_t> miss_counts(static_cast<std::size_t>(tokens), 0);
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < counts[static_cast<std::size_t>(t)]; ++i) {
      const std::int32_t r = rows[static_cast<std::size_t>(t * row_stride + i)];
      const bool miss = t == 0 && i % 2 == 1;
      auto& list = miss ? misses : hits;
      auto& n = miss ? miss_counts[static_cast<std::size_t>(t)] : hit_counts[static_cast<std::size_t>(t)];
      list[static_cast<std::size_t>(t * row_stride + n++)] = r;
    }
  }

  auto* dcache = s.upload(cache);
  const auto* dq = reinterpret_cast<const bf16*>(s.upload(q_latent));
  const auto* dqb = reinterpret_cast<const bf16*>(s.upload(qb));
  MlaScratch scratch;
  const int chunks = (row_stride + kMlaRowsPerChunk - 1) / kMlaRowsPerChunk;
  scratch.partial_o = s.device<float>(static_cast<std::size_t>(tokens * chunks * heads * kKvLora));
  scratch.partial_ml = s.device<float>(static_cast<std::size_t>(tokens * chunks * heads * 2));
  const auto run = [&](const std::vector<std::int32_t>& list, const std::vector<std::int32_t>& n, bf16* out,
                       float* lse) {
    const int max_count = *std::max_element(n.begin(), n.end());
    sparse_mla(dq, dqb + 128, heads * qk_head, qk_head, dcache, s.upload(list), row_stride, s.upload(n), max_count,
               heads, static_cast<float>(scale), scratch, out, lse, tokens, s.stream());
  };
  const std::size_t out_size = static_cast<std::size_t>(tokens * heads * kKvLora);
  auto* full = reinterpret_cast<bf16*>(s.device<std::uint16_t>(out_size));
  auto* full_lse = s.device<float>(static_cast<std::size_t>(tokens * heads));
  auto* part_a = reinterpret_cast<bf16*>(s.device<std::uint16_t>(out_size));
  auto* lse_a = s.device<float>(static_cast<std::size_t>(tokens * heads));
  auto* part_b = reinterpret_cast<bf16*>(s.device<std::uint16_t>(out_size));
  auto* lse_b = s.device<float>(static_cast<std::size_t>(tokens * heads));
  auto* merged = reinterpret_cast<bf16*>(s.device<std::uint16_t>(out_size));
  run(rows, std::vector<std::int32_t>(counts.begin(), counts.end()), full, full_lse);
  run(hits, hit_counts, part_a, lse_a);
  run(misses, miss_counts, part_b, lse_b);
  attention_merge(part_a, lse_a, part_b, lse_b, merged, tokens, heads, s.stream());
  const auto got_full = to_float(s.download(reinterpret_cast<const std::uint16_t*>(full), out_size));
  const auto got_lse = s.download(full_lse, static_cast<std::size_t>(tokens * heads));
  const auto got_merged = to_float(s.download(reinterpret_cast<const std::uint16_t*>(merged), out_size));
  const auto got_miss_lse = s.download(lse_b, static_cast<std::size_t>(tokens * heads));

  double worst = 0.0;
  double worst_merged = 0.0;
  double worst_lse = 0.0;
  for (int t = 0; t < tokens; ++t) {
    // The kernel multiplies bf16 tiles: dequantised rows are rounded to bf16 as it does.
    std::vector<std::vector<float>> selected;
    for (int i = 0; i < counts[static_cast<std::size_t>(t)]; ++i) {
      const std::int32_t r = rows[static_cast<std::size_t>(t * row_stride + i)];
      auto values = decode_latent_row(cache.data() + static_cast<std::size_t>(r) * kLatentRowBytes, kKvLora, kRope);
      for (float& v : values) v = round_bf16(v);
      selected.push_back(std::move(values));
    }
    std::vector<float> ql(static_cast<std::size_t>(heads * kKvLora));
    std::vector<float> qr(static_cast<std::size_t>(heads * kRope));
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < kKvLora; ++d) ql[static_cast<std::size_t>(h * kKvLora + d)] = bf16_to_float(q_latent[static_cast<std::size_t>((t * heads + h) * kKvLora + d)]);
      for (int d = 0; d < kRope; ++d) qr[static_cast<std::size_t>(h * kRope + d)] = bf16_to_float(qb[static_cast<std::size_t>((t * heads + h) * qk_head + 128 + d)]);
    }
    const auto ref = sparse_mla_reference(ql, qr, selected, heads, kKvLora, kRope, scale);
    double top = 0.0;
    for (const float v : ref.out) top = std::max(top, static_cast<double>(std::fabs(v)));
    // bf16 probabilities and outputs: a few parts in a thousand of the largest output.
    const double allowed = 1e-2 * top + 1e-3;
    for (std::size_t i = 0; i < ref.out.size(); ++i) {
      const std::size_t at = static_cast<std::size_t>(t * heads * kKvLora) + i;
      worst = std::max(worst, std::fabs(got_full[at] - ref.out[i]) / allowed);
      worst_merged = std::max(worst_merged, std::fabs(got_merged[at] - ref.out[i]) / allowed);
    }
    for (int h = 0; h < heads; ++h) {
      worst_lse = std::max(worst_lse, std::fabs(got_lse[static_cast<std::size_t>(t * heads + h)] - ref.lse[static_cast<std::size_t>(h)]) / 1e-2);
    }
  }
  const bool empty_lse = std::isinf(got_miss_lse[static_cast<std::size_t>(heads)]) && got_miss_lse[static_cast<std::size_t>(heads)] < 0;
  check.result("sparse_mla", worst <= 1.0 && worst_lse <= 1.0,
               describe(worst, 1.0) + " (x 1% of the largest output); lse " + describe(worst_lse, 1.0) + " (x 0.01)");
  check.result("sparse_mla da + merge", worst_merged <= 1.0 && empty_lse,
               describe(worst_merged, 1.0) + (empty_lse ? "" : "; an empty part's lse is not -inf"));
}

void check_transfers(Check& check, Scratch& s, Rng& rng) {
  const int rows = 64;
  const std::size_t bytes = static_cast<std::size_t>(rows) * kLatentRowBytes;
  std::uint8_t* host = s.host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<std::uint8_t>(rng.below(256));
  auto* device = s.device<std::uint8_t>(bytes);
  const std::vector<std::int32_t> picked{5, 17, 3, 63, 0, 40, 41};
  gather_rows(Scratch::mapped(host), device, s.upload(picked), static_cast<std::int64_t>(picked.size()), s.stream());
  // The copy path: one run of rows 20..22.
  RUNNER_CUDA_CHECK(cudaMemcpyAsync(device + 20 * kLatentRowBytes, host + 20 * kLatentRowBytes, 3 * kLatentRowBytes,
                                    cudaMemcpyHostToDevice, s.stream()));
  const auto got = s.download(device, bytes);
  bool gathered = true;
  for (int r = 0; r < rows; ++r) {
    const bool wanted = std::find(picked.begin(), picked.end(), r) != picked.end() || (r >= 20 && r < 23);
    const std::uint8_t* have = got.data() + static_cast<std::size_t>(r) * kLatentRowBytes;
    const std::vector<std::uint8_t> zero(kLatentRowBytes, 0);
    const std::uint8_t* expect = wanted ? host + static_cast<std::size_t>(r) * kLatentRowBytes : zero.data();
    gathered = gathered && std::memcmp(have, expect, kLatentRowBytes) == 0;
  }
  check.result("gather (and copy)", gathered, "7 gathered rows and a 3-row copy, byte for byte; the rest untouched");

  // Write-back: rows 3 (gathered), 20 (copied) and 37 (zero) of the device buffer to host memory.
  std::uint8_t* back = s.host(bytes);
  scatter_rows(device, Scratch::mapped(back), 3, 17, 3, s.stream());
  RUNNER_CUDA_CHECK(cudaStreamSynchronize(s.stream()));
  bool scattered = true;
  for (int r = 0; r < rows; ++r) {
    const bool wanted = r == 3 || r == 20 || r == 37;
    const std::vector<std::uint8_t> zero(kLatentRowBytes, 0);
    const std::uint8_t* expect = wanted ? got.data() + static_cast<std::size_t>(r) * kLatentRowBytes : zero.data();
    scattered = scattered && std::memcmp(back + static_cast<std::size_t>(r) * kLatentRowBytes, expect, kLatentRowBytes) == 0;
  }
  check.result("writeback scatter", scattered, "3 rows at stride 17, byte for byte; the rest untouched");
}

void check_elementwise(Check& check, Scratch& s, Rng& rng) {
  // silu(g) x u, and argmax with a planted maximum (and a tie the lower index must win).
  const int tokens = 2;
  const int width = 1024;
  const auto gu = random_bf16(rng, static_cast<std::size_t>(tokens * 2 * width), -4.0, 4.0);
  auto* out = reinterpret_cast<bf16*>(s.device<std::uint16_t>(static_cast<std::size_t>(tokens * width)));
  silu_mul(reinterpret_cast<const bf16*>(s.upload(gu)), out, tokens, width, s.stream());
  const auto got = to_float(s.download(reinterpret_cast<const std::uint16_t*>(out), static_cast<std::size_t>(tokens * width)));
  double worst = 0.0;
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < width; ++i) {
      const double g = bf16_to_float(gu[static_cast<std::size_t>(t * 2 * width + i)]);
      const double u = bf16_to_float(gu[static_cast<std::size_t>(t * 2 * width + width + i)]);
      const double want = g / (1.0 + std::exp(-g)) * u;
      worst = std::max(worst, std::fabs(got[static_cast<std::size_t>(t * width + i)] - want) / (std::ldexp(std::fabs(want), -7) + 1e-5));
    }
  }
  std::vector<float> logits(static_cast<std::size_t>(tokens * 4096));
  for (auto& v : logits) v = static_cast<float>(rng.uniform());
  logits[1234] = 5.0F;
  logits[4096 + 77] = 5.0F;
  logits[4096 + 3000] = 5.0F;
  auto* ids = s.device<std::int32_t>(static_cast<std::size_t>(tokens));
  argmax(s.upload(logits), 4096, ids, tokens, s.stream());
  const auto got_ids = s.download(ids, static_cast<std::size_t>(tokens));
  check.result("act (silu x up)", worst <= 1.0, describe(worst, 1.0) + " (x one bf16 ulp)");
  check.result("sampling (argmax)", got_ids[0] == 1234 && got_ids[1] == 77,
               "got " + std::to_string(got_ids[0]) + " and " + std::to_string(got_ids[1]) + ", want 1234 and 77");
}

}  // namespace

bool run_self_test(std::FILE* log) {
  Scratch s;
  Rng rng(0x5E1F7E57ULL);
  Check check{log};
  check_rmsnorm(check, s, rng);
  check_kv_norm_store(check, s, rng);
  check_indexer_score(check, s, rng);
  check_topk(check, s, rng);
  check_sparse_mla(check, s, rng);
  check_transfers(check, s, rng);
  check_elementwise(check, s, rng);
  RUNNER_CUDA_CHECK(cudaStreamSynchronize(s.stream()));
  RUNNER_CUDA_CHECK(cudaGetLastError());
  return check.ok;
}

}  // namespace ess::runner::gpu
