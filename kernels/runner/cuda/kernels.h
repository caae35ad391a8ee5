// ess-runner's own kernels (kernels.cu) behind host-callable launchers. Every launcher checks its
// launch. C++17 (nvcc compiles kernels.cu as C++17; see runner/CMakeLists.txt).
//
// Shapes: rows are row-major; "stride" is the distance between rows in elements. bf16 data is
// __nv_bfloat16. Latent rows are FlashMLA's fp8 layout: 512 fp8 e4m3, 4 fp32 scales (one per 128),
// 64 bf16 rope = 656 bytes, row `r` of a cache at base + r x 656.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ess::runner::gpu {

using bf16 = __nv_bfloat16;

inline constexpr int kLatentRowBytes = 656;
inline constexpr int kKvLora = 512;
inline constexpr int kRope = 64;
inline constexpr int kIndexerHeads = 64;
inline constexpr int kIndexerDim = 128;
// sparse_mla: heads per block and selected rows per block (one split of the split-KV grid).
inline constexpr int kMlaHeadsPerBlock = 32;
inline constexpr int kMlaRowsPerChunk = 256;

// ---- deterministic random data (a hash of seed and index, so any two fills agree) -------------

// count values uniform in [lo, hi).
void fill_bf16(bf16* data, std::int64_t count, std::uint64_t seed, float lo, float hi, cudaStream_t stream);
// count ids uniform in [0, vocab).
void fill_ids(std::int32_t* ids, std::int64_t count, std::int32_t vocab, std::uint64_t seed, cudaStream_t stream);
// `rows` latent rows at `base` (device memory, or mapped host memory through its device
// pointer): fp8 values from uniform [-1, 1), scales in [0.5, 1.5), rope uniform [-1, 1).
void fill_latent_rows(std::uint8_t* base, std::int64_t rows, std::uint64_t seed, cudaStream_t stream);
// Indexer key cache: rows x 128 fp8 keys from uniform [-1, 1) and rows scales in [0.5, 1.5).
void fill_indexer_keys(std::uint8_t* keys, float* scales, std::int64_t rows, std::uint64_t seed, cudaStream_t stream);

// ---- per-layer ops -----------------------------------------------------------------------------

// y = x / sqrt(mean(x^2) + eps) x w over `rows` rows of `cols` values (cols % 8 == 0), fp32 math,
// 16-byte vector loads; all rows 16-byte aligned.
void rmsnorm(const bf16* x, std::int64_t x_stride, const bf16* w, bf16* y, std::int64_t y_stride, int rows, int cols,
             float eps, cudaStream_t stream);

// kv_norm fused with the cache write of the new token: per token t, RMSNorm of the 512 kv values
// at kv + t x kv_stride (weight w), quantised to fp8 e4m3 with one scale per 128 (absmax / 448),
// and the 64 rope values that follow them copied as bf16, into the latent row at
// row0 + t x token_row_stride bytes.
void kv_norm_store(const bf16* kv, std::int64_t kv_stride, const bf16* w, std::uint8_t* row0,
                   std::int64_t token_row_stride, int tokens, float eps, cudaStream_t stream);

void embedding(const std::int32_t* ids, const bf16* table, bf16* out, int tokens, int hidden, cudaStream_t stream);
// x += y over count values (count % 8 == 0).
void residual_add(bf16* x, const bf16* y, std::int64_t count, cudaStream_t stream);
// out[t][i] = silu(gate_up[t][i]) x gate_up[t][width + i] (width % 8 == 0).
void silu_mul(const bf16* gate_up, bf16* out, int tokens, int width, cudaStream_t stream);
// ids[t] = argmax of logits[t][0..vocab) (vocab % 4 == 0; the lower index on ties).
void argmax(const float* logits, int vocab, std::int32_t* ids, int tokens, cudaStream_t stream);

// Lightning indexer scores of each token (= request) over its context keys (tensor cores):
//   scores[t][j] = sum_h w[t][h] x relu(key_scale[t][j] x dot(q[t][h], key[t][j])),  j < context
// q: tokens x (64 x 128) bf16; kw: tokens rows of [128 key | 64 head weights] bf16, row stride
// kw_stride; keys: per request `rows_per_request` x 128 fp8 (request t at keys + t x
// rows_per_request x 128); key_scales likewise (fp32). The token's own new key (kw's first 128
// values) is quantised into position `context` of its request's cache on the way (for the next
// step). scores: tokens rows of scores_stride floats.
void indexer_score(const bf16* q, const bf16* kw, std::int64_t kw_stride, std::uint8_t* keys, float* key_scales,
                   std::int64_t rows_per_request, int context, float* scores, std::int64_t scores_stride, int tokens,
                   cudaStream_t stream);

// Top-k by radix select: per token, the indices of the min(k, n) largest of scores[t][0..n) into
// out[t][...] (unordered; out row stride out_stride). One block of 1024 threads per token.
void topk(const float* scores, std::int64_t scores_stride, int n, int k, std::int32_t* out, std::int64_t out_stride,
          int tokens, cudaStream_t stream);

// Absorbed sparse MLA decode (tensor cores, split over chunks of 256 selected rows):
//   token t, head h: s_j = scale x (dot(q_latent[t][h], c_j) + dot(q_rope(t, h), k_rope_j)) over the
//   count[t] rows rows[t][0..count[t]) of `cache` (c_j: 512 dequantised fp8, k_rope_j: 64 bf16);
//   out[t][h] = softmax(s) . c (512 values), lse[t][h] = log(sum_j exp(s_j)) (-inf if no rows).
// q_latent: tokens x heads x 512; q_rope(t, h) = q_rope + t x q_rope_token_stride + h x
// q_rope_head_stride (64 values). rows: tokens rows of rows_stride ids. max_count: the largest
// count (grid size). partial_o / partial_ml: scratch for tokens x ceil(max_count / 256) x heads x
// 512 and x 2 floats. lse may be null. heads % 32 == 0.
struct MlaScratch {
  float* partial_o = nullptr;
  float* partial_ml = nullptr;
};
void sparse_mla(const bf16* q_latent, const bf16* q_rope, std::int64_t q_rope_token_stride,
                std::int64_t q_rope_head_stride, const std::uint8_t* cache, const std::int32_t* rows,
                std::int64_t rows_stride, const std::int32_t* counts, int max_count, int heads, float scale,
                MlaScratch scratch, bf16* out, float* lse, int tokens, cudaStream_t stream);
// Bytes of dynamic shared memory sparse_mla's main kernel needs (it opts in above 48 KiB).
std::size_t sparse_mla_shared_bytes();

// DA's merge of two partial attentions over disjoint rows (per token and head):
//   out = (e^{lse_a} a + e^{lse_b} b) / (e^{lse_a} + e^{lse_b}); both empty gives 0.
void attention_merge(const bf16* a, const float* lse_a, const bf16* b, const float* lse_b, bf16* out, int tokens,
                     int heads, cudaStream_t stream);

// ---- transfers ---------------------------------------------------------------------------------

// The UVA gather ("FlashTrans"): dst row rows[i] = src row rows[i] for i < count, one warp per
// 656-byte row with 16-byte loads. src is mapped pinned host memory seen through its device
// pointer, read uncached (ld.global.cv): every fetch crosses PCIe.
void gather_rows(const std::uint8_t* src, std::uint8_t* dst, const std::int32_t* rows, std::int64_t count,
                 cudaStream_t stream);
// The write-back direction of the gather path: for i < count, row first + i x stride of `src`
// (device) to the same row of `dst` (mapped host memory), written through (st.global.wt).
void scatter_rows(const std::uint8_t* src, std::uint8_t* dst, std::int64_t first, std::int64_t stride, int count,
                  cudaStream_t stream);

// One thread that spins until *release (mapped host memory) becomes non-zero, or until timeout_ns
// of GPU time have passed, when it sets *timed_out. Work queued behind it then runs back to back,
// without the host's launch gaps.
void blocker(const volatile int* release, int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream);

}  // namespace ess::runner::gpu
