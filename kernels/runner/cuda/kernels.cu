// ess-runner's own kernels. Tensor-core work (indexer_score, sparse_mla) uses WMMA 16x16x16 bf16
// tiles with fp32 accumulation (sm_80 and later); everything else is plain vectorised CUDA.
#include "kernels/runner/cuda/kernels.h"

#include <cuda_fp8.h>
#include <math_constants.h>
#include <mma.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "kernels/runner/cuda/check.h"
#include "sim/base/fp8.h"

namespace ess::runner::gpu {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarp = 32;
constexpr int kRowChunks = kLatentRowBytes / 16;  // 41 16-byte chunks per latent row
constexpr int kFp8Chunks = kKvLora / 16;          // 32 chunks of 16 fp8 values
constexpr int kScaleOffset = kKvLora;             // 512: 4 fp32 scales
constexpr int kRopeOffset = kKvLora + 16;         // 528: 64 bf16
constexpr int kLatentDim = kKvLora + kRope;       // 576
constexpr float kFp8Max = 448.0f;                 // largest finite e4m3
constexpr float kLog2e = 1.4426950408889634f;

static_assert(kLatentRowBytes == kKvLora + ess::kFp8ScaleBytes * (kKvLora / ess::kFp8ScaleGroup) + 2 * kRope,
              "FlashMLA row layout");

// ---- helpers -----------------------------------------------------------------------------------

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from (seed, index).
__device__ __forceinline__ float unit(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(mix64(seed ^ mix64(index)) >> 40) * (1.0f / 16777216.0f);
}

// e4m3 byte to float, exactly: the 7 magnitude bits placed in a float's exponent and mantissa
// fields are the value scaled by 2^-120 (normals and subnormals alike, the float being
// subnormal for e4m3 subnormals), so one multiply restores it. (0x7F, NaN, never occurs here.)
__device__ __forceinline__ float fp8_to_float(unsigned byte) {
  return __uint_as_float(((byte & 0x80u) << 24) | ((byte & 0x7Fu) << 20)) * 0x1p120f;
}

__device__ __forceinline__ unsigned char float_to_fp8(float v) { return __nv_fp8_e4m3(v).__x; }

// 16 fp8 values x scale to 16 bf16 (two 16-byte vectors).
__device__ __forceinline__ void fp8x16_to_bf16(const uint4 in, float scale, uint4& lo, uint4& hi) {
  const unsigned words[4] = {in.x, in.y, in.z, in.w};
  __nv_bfloat162 out[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const unsigned word = words[i / 2] >> (16 * (i % 2));
    out[i] = __floats2bfloat162_rn(fp8_to_float(word & 0xFFu) * scale, fp8_to_float((word >> 8) & 0xFFu) * scale);
  }
  lo = *reinterpret_cast<const uint4*>(&out[0]);
  hi = *reinterpret_cast<const uint4*>(&out[4]);
}

__device__ __forceinline__ void unpack8(const uint4 v, float f[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 two = __bfloat1622float2(p[i]);
    f[2 * i] = two.x;
    f[2 * i + 1] = two.y;
  }
}

__device__ __forceinline__ uint4 pack8(const float f[8]) {
  uint4 v;
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) p[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); once per kernel.
__device__ float block_sum(float v) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / kWarp) ? partial[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}

unsigned blocks_for(std::int64_t work, int per_block) {
  return static_cast<unsigned>((work + per_block - 1) / per_block);
}

// ---- fills ---------------------------------------------------------------------------------------

__global__ void fill_bf16_kernel(bf16* data, std::int64_t count, std::uint64_t seed, float lo, float span) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = __float2bfloat16(lo + span * unit(seed, static_cast<std::uint64_t>(i)));
  }
}

__global__ void fill_ids_kernel(std::int32_t* ids, std::int64_t count, std::int32_t vocab, std::uint64_t seed) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) ids[i] = static_cast<std::int32_t>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) % vocab);
}

// One thread per 16-byte chunk of a row.
__global__ void fill_latent_kernel(std::uint8_t* base, std::int64_t rows, std::uint64_t seed) {
  const std::int64_t item = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (item >= rows * kRowChunks) return;
  const std::int64_t row = item / kRowChunks;
  const int chunk = static_cast<int>(item % kRowChunks);
  const std::uint64_t first = static_cast<std::uint64_t>(row) * kLatentRowBytes + static_cast<std::uint64_t>(chunk) * 16;
  uint4 v;
  unsigned char* bytes = reinterpret_cast<unsigned char*>(&v);
  if (chunk < kFp8Chunks) {
    for (int i = 0; i < 16; ++i) bytes[i] = float_to_fp8(2.0f * unit(seed, first + i) - 1.0f);
  } else if (chunk == kFp8Chunks) {
    float* scales = reinterpret_cast<float*>(&v);
    for (int i = 0; i < 4; ++i) scales[i] = 0.5f + unit(seed, first + i);
  } else {
    bf16* rope = reinterpret_cast<bf16*>(&v);
    for (int i = 0; i < 8; ++i) rope[i] = __float2bfloat16(2.0f * unit(seed, first + i) - 1.0f);
  }
  *reinterpret_cast<uint4*>(base + row * kLatentRowBytes + chunk * 16) = v;
}

__global__ void fill_keys_kernel(std::uint8_t* keys, float* scales, std::int64_t rows, std::uint64_t seed) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < rows * kIndexerDim) keys[i] = float_to_fp8(2.0f * unit(seed, static_cast<std::uint64_t>(i)) - 1.0f);
  if (i < rows) scales[i] = 0.5f + unit(seed ^ 0x5CA1E5ULL, static_cast<std::uint64_t>(i));
}

// ---- norms and elementwise ops -------------------------------------------------------------------

constexpr int kNormThreads = 256;

__global__ void __launch_bounds__(kNormThreads) rmsnorm_kernel(const bf16* x, std::int64_t x_stride, const bf16* w,
                                                               bf16* y, std::int64_t y_stride, int cols, float eps) {
  const uint4* in = reinterpret_cast<const uint4*>(x + blockIdx.x * x_stride);
  const uint4* weight = reinterpret_cast<const uint4*>(w);
  uint4* out = reinterpret_cast<uint4*>(y + blockIdx.x * y_stride);
  const int chunks = cols / 8;
  float squares = 0.0f;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
    float f[8];
    unpack8(in[c], f);
#pragma unroll
    for (int i = 0; i < 8; ++i) squares += f[i] * f[i];
  }
  const float inverse = rsqrtf(block_sum(squares) / static_cast<float>(cols) + eps);
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
    float f[8];
    float g[8];
    unpack8(in[c], f);  // a second read, from L1/L2: cheaper than holding 7168 values in registers
    unpack8(weight[c], g);
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = f[i] * inverse * g[i];
    out[c] = pack8(f);
  }
}

// 64 threads per token, 8 kv values each; 16 threads share one fp8 scale group of 128 values.
__global__ void __launch_bounds__(64) kv_norm_store_kernel(const bf16* kv, std::int64_t kv_stride, const bf16* w,
                                                           std::uint8_t* row0, std::int64_t token_row_stride,
                                                           float eps) {
  const bf16* in = kv + blockIdx.x * kv_stride;
  std::uint8_t* row = row0 + blockIdx.x * token_row_stride;
  const int t = threadIdx.x;
  float f[8];
  float g[8];
  unpack8(reinterpret_cast<const uint4*>(in)[t], f);
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) squares += f[i] * f[i];
  const float inverse = rsqrtf(block_sum(squares) / static_cast<float>(kKvLora) + eps);
  unpack8(reinterpret_cast<const uint4*>(w)[t], g);
  float top = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    // The normalised value is bf16 in the model before it is quantised.
    f[i] = __bfloat162float(__float2bfloat16(f[i] * inverse * g[i]));
    top = fmaxf(top, fabsf(f[i]));
  }
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) top = fmaxf(top, __shfl_xor_sync(0xFFFFFFFFu, top, offset));
  const float scale = top > 0.0f ? top / kFp8Max : 1.0f;
  unsigned lo = 0;
  unsigned hi = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    lo |= static_cast<unsigned>(float_to_fp8(f[i] / scale)) << (8 * i);
    hi |= static_cast<unsigned>(float_to_fp8(f[4 + i] / scale)) << (8 * i);
  }
  reinterpret_cast<uint2*>(row)[t] = make_uint2(lo, hi);
  if (t % 16 == 0) reinterpret_cast<float*>(row + kScaleOffset)[t / 16] = scale;
  if (t < kRope / 8) {
    reinterpret_cast<uint4*>(row + kRopeOffset)[t] = reinterpret_cast<const uint4*>(in + kKvLora)[t];
  }
}

__global__ void embedding_kernel(const std::int32_t* ids, const bf16* table, bf16* out, int hidden) {
  const uint4* src = reinterpret_cast<const uint4*>(table + static_cast<std::int64_t>(ids[blockIdx.x]) * hidden);
  uint4* dst = reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(blockIdx.x) * hidden);
  for (int c = threadIdx.x; c < hidden / 8; c += blockDim.x) dst[c] = src[c];
}

__global__ void residual_add_kernel(bf16* x, const bf16* y, std::int64_t chunks) {
  const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= chunks) return;
  float a[8];
  float b[8];
  unpack8(reinterpret_cast<const uint4*>(x)[c], a);
  unpack8(reinterpret_cast<const uint4*>(y)[c], b);
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] += b[i];
  reinterpret_cast<uint4*>(x)[c] = pack8(a);
}

__global__ void silu_mul_kernel(const bf16* gate_up, bf16* out, int width) {
  const int chunks = width / 8;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= chunks) return;
  const uint4* row = reinterpret_cast<const uint4*>(gate_up + static_cast<std::int64_t>(blockIdx.y) * 2 * width);
  float g[8];
  float u[8];
  unpack8(row[c], g);
  unpack8(row[chunks + c], u);
#pragma unroll
  for (int i = 0; i < 8; ++i) g[i] = g[i] / (1.0f + __expf(-g[i])) * u[i];
  reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(blockIdx.y) * width)[c] = pack8(g);
}

constexpr int kArgmaxThreads = 1024;

__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* logits, int vocab, std::int32_t* ids) {
  const float4* row = reinterpret_cast<const float4*>(logits + static_cast<std::int64_t>(blockIdx.x) * vocab);
  float best = -FLT_MAX;
  int index = 0x7FFFFFFF;
  const auto consider = [&](float v, int i) {
    if (v > best || (v == best && i < index)) {
      best = v;
      index = i;
    }
  };
  for (int c = threadIdx.x; c < vocab / 4; c += blockDim.x) {
    const float4 v = row[c];
    consider(v.x, 4 * c);
    consider(v.y, 4 * c + 1);
    consider(v.z, 4 * c + 2);
    consider(v.w, 4 * c + 3);
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    consider(__shfl_xor_sync(0xFFFFFFFFu, best, offset), __shfl_xor_sync(0xFFFFFFFFu, index, offset));
  }
  __shared__ float best_s[kWarp];
  __shared__ int index_s[kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  if (lane == 0) {
    best_s[warp] = best;
    index_s[warp] = index;
  }
  __syncthreads();
  if (warp == 0) {
    best = -FLT_MAX;
    index = 0x7FFFFFFF;
    if (lane < static_cast<int>(blockDim.x / kWarp)) consider(best_s[lane], index_s[lane]);
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      consider(__shfl_xor_sync(0xFFFFFFFFu, best, offset), __shfl_xor_sync(0xFFFFFFFFu, index, offset));
    }
    if (lane == 0) ids[blockIdx.x] = index;
  }
}

// ---- indexer: scores by tensor cores ---------------------------------------------------------------

constexpr int kIdxKeysPerTile = 64;
constexpr int kIdxTiles = 4;  // 256 keys per block, so the query tile is loaded once per 256 keys
constexpr int kIdxThreads = 256;
constexpr int kIdxLd = kIndexerDim + 8;  // bf16 row pitch in shared memory (16-byte multiple, fewer bank conflicts)
constexpr int kIdxSLd = kIdxKeysPerTile + 4;  // fp32 score pitch
static_assert(kIndexerHeads * kIdxSLd * 4 <= kIdxKeysPerTile * kIdxLd * 2, "scores reuse the key tile's space");

__global__ void __launch_bounds__(kIdxThreads)
    indexer_score_kernel(const bf16* q, const bf16* kw, std::int64_t kw_stride, std::uint8_t* keys, float* key_scales,
                         std::int64_t rows_per_request, int context, float* scores, std::int64_t scores_stride) {
  __shared__ __align__(128) bf16 q_s[kIndexerHeads * kIdxLd];
  __shared__ __align__(128) bf16 k_s[kIdxKeysPerTile * kIdxLd];  // also the fp32 scores of a tile
  __shared__ float w_s[kIndexerHeads];
  __shared__ float ks_s[kIdxKeysPerTile];
  __shared__ float part_s[kIdxThreads / kIdxKeysPerTile][kIdxKeysPerTile];
  float* s_s = reinterpret_cast<float*>(k_s);

  const int token = blockIdx.y;
  const int tid = threadIdx.x;
  const bf16* q_t = q + static_cast<std::int64_t>(token) * kIndexerHeads * kIndexerDim;
  const bf16* kw_t = kw + static_cast<std::int64_t>(token) * kw_stride;
  std::uint8_t* keys_t = keys + static_cast<std::int64_t>(token) * rows_per_request * kIndexerDim;
  float* scales_t = key_scales + static_cast<std::int64_t>(token) * rows_per_request;

  constexpr int kQChunks = kIndexerHeads * kIndexerDim / 8;
  for (int c = tid; c < kQChunks; c += kIdxThreads) {
    const int h = c / (kIndexerDim / 8);
    const int part = c % (kIndexerDim / 8);
    reinterpret_cast<uint4*>(q_s + h * kIdxLd)[part] = reinterpret_cast<const uint4*>(q_t)[c];
  }
  if (tid < kIndexerHeads) w_s[tid] = __bfloat162float(kw_t[kIndexerDim + tid]);

  if (blockIdx.x == 0 && tid < kWarp) {
    // The token's own key goes into the cache at `context`, for the steps after this one.
    float v[4];
    float top = 0.0f;
    for (int i = 0; i < 4; ++i) {
      v[i] = __bfloat162float(kw_t[4 * tid + i]);
      top = fmaxf(top, fabsf(v[i]));
    }
    top = warp_max(top);
    const float scale = top > 0.0f ? top / kFp8Max : 1.0f;
    unsigned packed = 0;
    for (int i = 0; i < 4; ++i) packed |= static_cast<unsigned>(float_to_fp8(v[i] / scale)) << (8 * i);
    reinterpret_cast<unsigned*>(keys_t + static_cast<std::int64_t>(context) * kIndexerDim)[tid] = packed;
    if (tid == 0) scales_t[context] = scale;
  }

  const int warp = tid / kWarp;
  const int head_tile = warp / 2;          // 4 tiles of 16 heads
  const int key_tile0 = (warp % 2) * 2;    // 2 of the 4 tiles of 16 keys
  const int block_first = blockIdx.x * kIdxKeysPerTile * kIdxTiles;
  for (int tile = 0; tile < kIdxTiles; ++tile) {
    const int first = block_first + tile * kIdxKeysPerTile;
    if (first >= context) break;
    __syncthreads();  // the previous tile's scores are consumed; q_s and w_s are written
    // 64 keys x 128 fp8 = 512 chunks of 16: two per thread, dequantised to bf16 (scale applied later).
    for (int c = tid; c < kIdxKeysPerTile * kIndexerDim / 16; c += kIdxThreads) {
      const int j = c / (kIndexerDim / 16);
      const int part = c % (kIndexerDim / 16);
      uint4 lo = make_uint4(0, 0, 0, 0);
      uint4 hi = lo;
      if (first + j < context) {
        const uint4 raw = reinterpret_cast<const uint4*>(keys_t + static_cast<std::int64_t>(first + j) * kIndexerDim)[part];
        fp8x16_to_bf16(raw, 1.0f, lo, hi);
      }
      uint4* dst = reinterpret_cast<uint4*>(k_s + j * kIdxLd + part * 16);
      dst[0] = lo;
      dst[1] = hi;
    }
    if (tid < kIdxKeysPerTile) ks_s[tid] = first + tid < context ? scales_t[first + tid] : 0.0f;
    __syncthreads();

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);
#pragma unroll
    for (int k = 0; k < kIndexerDim / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
      wmma::load_matrix_sync(a, q_s + head_tile * 16 * kIdxLd + k * 16, kIdxLd);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;  // keys as columns: K^T
        wmma::load_matrix_sync(b, k_s + (key_tile0 + i) * 16 * kIdxLd + k * 16, kIdxLd);
        wmma::mma_sync(acc[i], a, b, acc[i]);
      }
    }
    __syncthreads();  // every warp has read k_s: its space now takes the scores
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      wmma::store_matrix_sync(s_s + head_tile * 16 * kIdxSLd + (key_tile0 + i) * 16, acc[i], kIdxSLd,
                              wmma::mem_row_major);
    }
    __syncthreads();
    // relu(scale x dot) = scale x relu(dot) for the positive scales: weighted sum over heads, in
    // four partial sums of 16 heads (consecutive threads read consecutive keys: no bank conflicts).
    {
      const int j = tid % kIdxKeysPerTile;
      const int part = tid / kIdxKeysPerTile;
      float sum = 0.0f;
#pragma unroll
      for (int h = part * 16; h < part * 16 + 16; ++h) sum += w_s[h] * fmaxf(s_s[h * kIdxSLd + j], 0.0f);
      part_s[part][j] = sum;
    }
    __syncthreads();
    if (tid < kIdxKeysPerTile && first + tid < context) {
      const float total = part_s[0][tid] + part_s[1][tid] + part_s[2][tid] + part_s[3][tid];
      scores[static_cast<std::int64_t>(token) * scores_stride + first + tid] = total * ks_s[tid];
    }
  }
}

// ---- top-k by radix select ------------------------------------------------------------------------

constexpr int kTopkThreads = 1024;

// Float bits mapped so that unsigned order is float order.
__device__ __forceinline__ unsigned ordered_bits(float v) {
  const unsigned bits = __float_as_uint(v);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

__global__ void __launch_bounds__(kTopkThreads)
    topk_kernel(const float* scores, std::int64_t scores_stride, int n, int k, std::int32_t* out,
                std::int64_t out_stride) {
  const float* row = scores + blockIdx.x * scores_stride;
  std::int32_t* o = out + blockIdx.x * out_stride;
  if (n <= k) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = i;
    return;
  }
  __shared__ unsigned histogram[256];
  __shared__ unsigned chosen_prefix;
  __shared__ int chosen_remaining;
  __shared__ int count_above;
  __shared__ int count_equal;
  unsigned prefix = 0;
  unsigned mask = 0;
  int remaining = k;  // how many of the elements matching `prefix` still belong to the top k
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) histogram[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const unsigned u = ordered_bits(row[i]);
      if ((u & mask) == prefix) atomicAdd(&histogram[(u >> shift) & 0xFFu], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // The digit of the k-th largest among the matching elements: scan from the top.
      int above = 0;
      for (int digit = 255; digit >= 0; --digit) {
        const int here = static_cast<int>(histogram[digit]);
        if (above + here >= remaining) {
          chosen_prefix = prefix | (static_cast<unsigned>(digit) << shift);
          chosen_remaining = remaining - above;
          break;
        }
        above += here;
      }
    }
    __syncthreads();
    prefix = chosen_prefix;
    remaining = chosen_remaining;
    mask |= 0xFFu << shift;
    __syncthreads();  // everyone has read chosen_*; the histogram may be cleared again
  }
  // `prefix` is now the exact key of the k-th largest: k - remaining elements lie above it, and
  // `remaining` of those equal to it complete the top k.
  if (threadIdx.x == 0) {
    count_above = 0;
    count_equal = 0;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const unsigned u = ordered_bits(row[i]);
    if (u > prefix) {
      o[atomicAdd(&count_above, 1)] = i;
    } else if (u == prefix) {
      const int slot = atomicAdd(&count_equal, 1);
      if (slot < remaining) o[k - remaining + slot] = i;
    }
  }
}

// ---- sparse MLA by tensor cores ---------------------------------------------------------------------

constexpr int kMlaThreads = 256;  // 8 warps
constexpr int kMlaTile = 64;      // rows loaded to shared memory at a time
constexpr int kMlaLd = kLatentDim + 8;         // 584: bf16 pitch of q and row tiles
constexpr int kMlaSLd = kMlaRowsPerChunk + 4;  // 260: fp32 score pitch
constexpr int kMlaPLd = kMlaRowsPerChunk + 8;  // 264: bf16 probability pitch
constexpr std::size_t kMlaQBytes = sizeof(bf16) * kMlaHeadsPerBlock * kMlaLd;
constexpr std::size_t kMlaRowBytes = sizeof(bf16) * kMlaTile * kMlaLd;
constexpr std::size_t kMlaSBytes = sizeof(float) * kMlaHeadsPerBlock * kMlaSLd;
constexpr std::size_t kMlaPBytes = sizeof(bf16) * kMlaHeadsPerBlock * kMlaPLd;
constexpr std::size_t kMlaShared = kMlaQBytes + kMlaRowBytes + kMlaSBytes + kMlaPBytes;  // 162,304 bytes
static_assert(kMlaShared <= 166912, "fits the 163 KiB of shared memory an A100 block may opt in to");
static_assert(kMlaQBytes % 128 == 0 && kMlaRowBytes % 128 == 0 && kMlaSBytes % 128 == 0, "aligned sections");

// Loads `tile` rows (from list position `first`) into rows_s as bf16: the 512 dequantised values,
// then (with_rope) the 64 rope values; rows at or past `valid` are zero.
__device__ __forceinline__ void load_row_tile(bf16* rows_s, const std::uint8_t* cache, const std::int32_t* list,
                                              int first, int valid, bool with_rope) {
  const int chunks = with_rope ? kFp8Chunks + kRope / 8 : kFp8Chunks;
  for (int c = threadIdx.x; c < kMlaTile * chunks; c += kMlaThreads) {
    const int j = c / chunks;
    const int part = c % chunks;
    const bool live = first + j < valid;
    const std::uint8_t* row = live ? cache + static_cast<std::int64_t>(list[first + j]) * kLatentRowBytes : nullptr;
    bf16* dst = rows_s + j * kMlaLd;
    if (part < kFp8Chunks) {
      uint4 lo = make_uint4(0, 0, 0, 0);
      uint4 hi = lo;
      if (live) {
        const float scale = reinterpret_cast<const float*>(row + kScaleOffset)[part / 8];
        fp8x16_to_bf16(reinterpret_cast<const uint4*>(row)[part], scale, lo, hi);
      }
      reinterpret_cast<uint4*>(dst + part * 16)[0] = lo;
      reinterpret_cast<uint4*>(dst + part * 16)[1] = hi;
    } else {
      const int r = part - kFp8Chunks;
      reinterpret_cast<uint4*>(dst + kKvLora)[r] =
          live ? reinterpret_cast<const uint4*>(row + kRopeOffset)[r] : make_uint4(0, 0, 0, 0);
    }
  }
}

// One block: one token, 32 heads, one chunk of up to 256 selected rows. Scores for the whole chunk
// first (Q K^T by tiles of 64 rows), then an exact softmax over the chunk, then P V by the same
// tiles (reloaded: the chunk does not fit in shared memory). Writes the unnormalised output with
// the chunk's max (log2 units) and sum; mla_combine_kernel merges the chunks.
__global__ void __launch_bounds__(kMlaThreads)
    mla_partial_kernel(const bf16* q_latent, const bf16* q_rope, std::int64_t q_rope_token_stride,
                       std::int64_t q_rope_head_stride, const std::uint8_t* cache, const std::int32_t* rows,
                       std::int64_t rows_stride, const std::int32_t* counts, int heads, float scale_log2,
                       float* partial_o, float* partial_ml) {
  extern __shared__ __align__(128) unsigned char shared[];
  bf16* q_s = reinterpret_cast<bf16*>(shared);
  bf16* rows_s = reinterpret_cast<bf16*>(shared + kMlaQBytes);
  float* s_s = reinterpret_cast<float*>(shared + kMlaQBytes + kMlaRowBytes);
  bf16* p_s = reinterpret_cast<bf16*>(shared + kMlaQBytes + kMlaRowBytes + kMlaSBytes);

  const int chunk = blockIdx.x;
  const int head0 = blockIdx.y * kMlaHeadsPerBlock;
  const int token = blockIdx.z;
  const int chunks = gridDim.x;
  const int tid = threadIdx.x;
  const int warp = tid / kWarp;
  const int lane = tid % kWarp;
  const std::int64_t part_base = (static_cast<std::int64_t>(token) * chunks + chunk) * heads + head0;
  const int count = counts[token];
  const int first = chunk * kMlaRowsPerChunk;
  if (first >= count) {
    if (tid < kMlaHeadsPerBlock) {
      partial_ml[(part_base + tid) * 2] = -FLT_MAX;
      partial_ml[(part_base + tid) * 2 + 1] = 0.0f;  // empty: the combine skips it
    }
    return;
  }
  const int valid = min(kMlaRowsPerChunk, count - first);
  const std::int32_t* list = rows + token * rows_stride + first;

  // Queries: 32 heads x (512 latent + 64 rope).
  for (int c = tid; c < kMlaHeadsPerBlock * (kLatentDim / 8); c += kMlaThreads) {
    const int h = c / (kLatentDim / 8);
    const int part = c % (kLatentDim / 8);
    const bf16* src = part < kKvLora / 8
                          ? q_latent + (static_cast<std::int64_t>(token) * heads + head0 + h) * kKvLora + part * 8
                          : q_rope + token * q_rope_token_stride + (head0 + h) * q_rope_head_stride + (part - kKvLora / 8) * 8;
    *reinterpret_cast<uint4*>(q_s + h * kMlaLd + part * 8) = *reinterpret_cast<const uint4*>(src);
  }

  // Phase 1: S = Q K^T, 32 x valid; warp w: heads tile w / 4, rows tile w % 4 of each 64-row tile.
  const int head_tile = warp / 4;
  const int row_tile = warp % 4;
  for (int tile = 0; tile * kMlaTile < valid; ++tile) {
    __syncthreads();
    load_row_tile(rows_s, cache, list, tile * kMlaTile, valid, true);
    __syncthreads();
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < kLatentDim / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
      wmma::load_matrix_sync(a, q_s + head_tile * 16 * kMlaLd + k * 16, kMlaLd);
      wmma::load_matrix_sync(b, rows_s + row_tile * 16 * kMlaLd + k * 16, kMlaLd);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(s_s + head_tile * 16 * kMlaSLd + tile * kMlaTile + row_tile * 16, acc, kMlaSLd,
                            wmma::mem_row_major);
  }
  __syncthreads();

  // Phase 2: per head, exact softmax over the chunk's rows (log2 units); P = 2^(s - max) in bf16,
  // zero past `valid`. Warp w takes heads 4w .. 4w + 3.
  __shared__ float max_s[kMlaHeadsPerBlock];
  __shared__ float sum_s[kMlaHeadsPerBlock];
  for (int h = warp * 4; h < warp * 4 + 4; ++h) {
    float top = -FLT_MAX;
    for (int j = lane; j < valid; j += kWarp) top = fmaxf(top, s_s[h * kMlaSLd + j] * scale_log2);
    top = warp_max(top);
    float sum = 0.0f;
    for (int j = lane; j < kMlaRowsPerChunk; j += kWarp) {
      const bf16 p = __float2bfloat16(j < valid ? exp2f(s_s[h * kMlaSLd + j] * scale_log2 - top) : 0.0f);
      p_s[h * kMlaPLd + j] = p;
      sum += __bfloat162float(p);  // the sum of what P V will add up
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      max_s[h] = top;
      sum_s[h] = sum;
    }
  }

  // Phase 3: O = P V, 32 x 512; warp w owns columns 64w .. 64w + 63 of both head tiles.
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> out[2][4];
  for (int i = 0; i < 2; ++i) {
    for (int c = 0; c < 4; ++c) wmma::fill_fragment(out[i][c], 0.0f);
  }
  for (int tile = 0; tile * kMlaTile < valid; ++tile) {
    __syncthreads();  // phase 2 (first tile) or the previous tile's reads are done
    load_row_tile(rows_s, cache, list, tile * kMlaTile, valid, false);
    __syncthreads();
    for (int k = 0; k < kMlaTile / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a[2];
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a[i], p_s + i * 16 * kMlaPLd + tile * kMlaTile + k * 16, kMlaPLd);
      }
      for (int c = 0; c < 4; ++c) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
        wmma::load_matrix_sync(b, rows_s + k * 16 * kMlaLd + warp * 64 + c * 16, kMlaLd);
        for (int i = 0; i < 2; ++i) wmma::mma_sync(out[i][c], a[i], b, out[i][c]);
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (int c = 0; c < 4; ++c) {
      wmma::store_matrix_sync(partial_o + (part_base + i * 16) * kKvLora + warp * 64 + c * 16, out[i][c], kKvLora,
                              wmma::mem_row_major);
    }
  }
  if (tid < kMlaHeadsPerBlock) {
    partial_ml[(part_base + tid) * 2] = max_s[tid];
    partial_ml[(part_base + tid) * 2 + 1] = sum_s[tid];
  }
}

// One block of 128 threads per (token, head): 4 output values each.
__global__ void __launch_bounds__(128) mla_combine_kernel(const float* partial_o, const float* partial_ml, int chunks,
                                                          int heads, bf16* out, float* lse) {
  const int token = blockIdx.x / heads;
  const int head = blockIdx.x % heads;
  float top = -FLT_MAX;
  bool any = false;
  for (int c = 0; c < chunks; ++c) {
    const std::int64_t p = (static_cast<std::int64_t>(token) * chunks + c) * heads + head;
    if (partial_ml[p * 2 + 1] > 0.0f) {
      top = fmaxf(top, partial_ml[p * 2]);
      any = true;
    }
  }
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float total = 0.0f;
  if (any) {
    for (int c = 0; c < chunks; ++c) {
      const std::int64_t p = (static_cast<std::int64_t>(token) * chunks + c) * heads + head;
      const float sum = partial_ml[p * 2 + 1];
      if (!(sum > 0.0f)) continue;
      const float weight = exp2f(partial_ml[p * 2] - top);
      total += weight * sum;
      const float4 v = reinterpret_cast<const float4*>(partial_o + p * kKvLora)[threadIdx.x];
      acc[0] += weight * v.x;
      acc[1] += weight * v.y;
      acc[2] += weight * v.z;
      acc[3] += weight * v.w;
    }
  }
  const float inverse = any ? 1.0f / total : 0.0f;
  __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(out + (static_cast<std::int64_t>(token) * heads + head) * kKvLora);
  o[2 * threadIdx.x] = __floats2bfloat162_rn(acc[0] * inverse, acc[1] * inverse);
  o[2 * threadIdx.x + 1] = __floats2bfloat162_rn(acc[2] * inverse, acc[3] * inverse);
  if (lse != nullptr && threadIdx.x == 0) {
    constexpr float kLn2 = 0.6931471805599453f;
    lse[static_cast<std::int64_t>(token) * heads + head] = any ? (top + log2f(total)) * kLn2 : -CUDART_INF_F;
  }
}

// One block of 64 threads per (token, head): 8 values each.
__global__ void __launch_bounds__(64) merge_kernel(const bf16* a, const float* lse_a, const bf16* b,
                                                   const float* lse_b, bf16* out) {
  const float la = lse_a[blockIdx.x];
  const float lb = lse_b[blockIdx.x];
  const float top = fmaxf(la, lb);
  const float wa = la == -CUDART_INF_F ? 0.0f : __expf(la - top);
  const float wb = lb == -CUDART_INF_F ? 0.0f : __expf(lb - top);
  const float inverse = wa + wb > 0.0f ? 1.0f / (wa + wb) : 0.0f;
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * (kKvLora / 8) + threadIdx.x;
  float x[8];
  float y[8];
  unpack8(reinterpret_cast<const uint4*>(a)[at], x);
  unpack8(reinterpret_cast<const uint4*>(b)[at], y);
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = (wa * x[i] + wb * y[i]) * inverse;
  reinterpret_cast<uint4*>(out)[at] = pack8(x);
}

// ---- transfers ------------------------------------------------------------------------------------

constexpr int kCopyThreads = 256;  // 8 warps, 8 rows per block

__global__ void __launch_bounds__(kCopyThreads)
    gather_rows_kernel(const std::uint8_t* src, std::uint8_t* dst, const std::int32_t* rows, std::int64_t count) {
  const std::int64_t i = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (i >= count) return;
  const std::int64_t offset = static_cast<std::int64_t>(rows[i]) * kLatentRowBytes;
  const uint4* s = reinterpret_cast<const uint4*>(src + offset);
  uint4* d = reinterpret_cast<uint4*>(dst + offset);
  // 41 chunks: lanes 0-31 take one, lanes 0-8 a second; both loads in flight before the stores.
  const uint4 first = __ldcv(s + lane);
  uint4 second = make_uint4(0, 0, 0, 0);
  if (lane < kRowChunks - kWarp) second = __ldcv(s + kWarp + lane);
  d[lane] = first;
  if (lane < kRowChunks - kWarp) d[kWarp + lane] = second;
}

__global__ void __launch_bounds__(kCopyThreads)
    scatter_rows_kernel(const std::uint8_t* src, std::uint8_t* dst, std::int64_t first_row, std::int64_t stride,
                        int count) {
  const int i = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kWarp);
  const int lane = threadIdx.x % kWarp;
  if (i >= count) return;
  const std::int64_t offset = (first_row + i * stride) * kLatentRowBytes;
  const uint4* s = reinterpret_cast<const uint4*>(src + offset);
  uint4* d = reinterpret_cast<uint4*>(dst + offset);
  const uint4 a = s[lane];
  uint4 b = make_uint4(0, 0, 0, 0);
  if (lane < kRowChunks - kWarp) b = s[kWarp + lane];
  __stwt(d + lane, a);
  if (lane < kRowChunks - kWarp) __stwt(d + kWarp + lane, b);
}

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void blocker_kernel(const volatile int* release, int* timed_out, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  while (*release == 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------------

void fill_bf16(bf16* data, std::int64_t count, std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (count <= 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((count + 255) / 256, 65536));
  fill_bf16_kernel<<<blocks, 256, 0, stream>>>(data, count, seed, lo, hi - lo);
  RUNNER_CHECK_LAUNCH();
}

void fill_ids(std::int32_t* ids, std::int64_t count, std::int32_t vocab, std::uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  fill_ids_kernel<<<blocks_for(count, 256), 256, 0, stream>>>(ids, count, vocab, seed);
  RUNNER_CHECK_LAUNCH();
}

void fill_latent_rows(std::uint8_t* base, std::int64_t rows, std::uint64_t seed, cudaStream_t stream) {
  if (rows <= 0) return;
  fill_latent_kernel<<<blocks_for(rows * kRowChunks, 256), 256, 0, stream>>>(base, rows, seed);
  RUNNER_CHECK_LAUNCH();
}

void fill_indexer_keys(std::uint8_t* keys, float* scales, std::int64_t rows, std::uint64_t seed, cudaStream_t stream) {
  if (rows <= 0) return;
  fill_keys_kernel<<<blocks_for(rows * kIndexerDim, 256), 256, 0, stream>>>(keys, scales, rows, seed);
  RUNNER_CHECK_LAUNCH();
}

void rmsnorm(const bf16* x, std::int64_t x_stride, const bf16* w, bf16* y, std::int64_t y_stride, int rows, int cols,
             float eps, cudaStream_t stream) {
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(x, x_stride, w, y, y_stride, cols, eps);
  RUNNER_CHECK_LAUNCH();
}

void kv_norm_store(const bf16* kv, std::int64_t kv_stride, const bf16* w, std::uint8_t* row0,
                   std::int64_t token_row_stride, int tokens, float eps, cudaStream_t stream) {
  kv_norm_store_kernel<<<static_cast<unsigned>(tokens), kKvLora / 8, 0, stream>>>(kv, kv_stride, w, row0,
                                                                                  token_row_stride, eps);
  RUNNER_CHECK_LAUNCH();
}

void embedding(const std::int32_t* ids, const bf16* table, bf16* out, int tokens, int hidden, cudaStream_t stream) {
  embedding_kernel<<<static_cast<unsigned>(tokens), 256, 0, stream>>>(ids, table, out, hidden);
  RUNNER_CHECK_LAUNCH();
}

void residual_add(bf16* x, const bf16* y, std::int64_t count, cudaStream_t stream) {
  residual_add_kernel<<<blocks_for(count / 8, 256), 256, 0, stream>>>(x, y, count / 8);
  RUNNER_CHECK_LAUNCH();
}

void silu_mul(const bf16* gate_up, bf16* out, int tokens, int width, cudaStream_t stream) {
  silu_mul_kernel<<<dim3(blocks_for(width / 8, 256), static_cast<unsigned>(tokens)), 256, 0, stream>>>(gate_up, out,
                                                                                                      width);
  RUNNER_CHECK_LAUNCH();
}

void argmax(const float* logits, int vocab, std::int32_t* ids, int tokens, cudaStream_t stream) {
  argmax_kernel<<<static_cast<unsigned>(tokens), kArgmaxThreads, 0, stream>>>(logits, vocab, ids);
  RUNNER_CHECK_LAUNCH();
}

void indexer_score(const bf16* q, const bf16* kw, std::int64_t kw_stride, std::uint8_t* keys, float* key_scales,
                   std::int64_t rows_per_request, int context, float* scores, std::int64_t scores_stride, int tokens,
                   cudaStream_t stream) {
  // At least one block per token, so that block 0 always stores the token's new key.
  const unsigned blocks = std::max(1u, blocks_for(context, kIdxKeysPerTile * kIdxTiles));
  indexer_score_kernel<<<dim3(blocks, static_cast<unsigned>(tokens)), kIdxThreads, 0, stream>>>(
      q, kw, kw_stride, keys, key_scales, rows_per_request, context, scores, scores_stride);
  RUNNER_CHECK_LAUNCH();
}

void topk(const float* scores, std::int64_t scores_stride, int n, int k, std::int32_t* out, std::int64_t out_stride,
          int tokens, cudaStream_t stream) {
  topk_kernel<<<static_cast<unsigned>(tokens), kTopkThreads, 0, stream>>>(scores, scores_stride, n, k, out, out_stride);
  RUNNER_CHECK_LAUNCH();
}

std::size_t sparse_mla_shared_bytes() { return kMlaShared; }

void sparse_mla(const bf16* q_latent, const bf16* q_rope, std::int64_t q_rope_token_stride,
                std::int64_t q_rope_head_stride, const std::uint8_t* cache, const std::int32_t* rows,
                std::int64_t rows_stride, const std::int32_t* counts, int max_count, int heads, float scale,
                MlaScratch scratch, bf16* out, float* lse, int tokens, cudaStream_t stream) {
  static bool opted_in = false;  // per process: the attribute belongs to the kernel, not a device
  if (!opted_in) {
    RUNNER_CUDA_CHECK(cudaFuncSetAttribute(mla_partial_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kMlaShared)));
    opted_in = true;
  }
  const int chunks = std::max(1, (max_count + kMlaRowsPerChunk - 1) / kMlaRowsPerChunk);
  mla_partial_kernel<<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(heads / kMlaHeadsPerBlock),
                            static_cast<unsigned>(tokens)),
                       kMlaThreads, kMlaShared, stream>>>(q_latent, q_rope, q_rope_token_stride, q_rope_head_stride,
                                                          cache, rows, rows_stride, counts, heads, scale * kLog2e,
                                                          scratch.partial_o, scratch.partial_ml);
  RUNNER_CHECK_LAUNCH();
  mla_combine_kernel<<<static_cast<unsigned>(tokens * heads), kKvLora / 4, 0, stream>>>(
      scratch.partial_o, scratch.partial_ml, chunks, heads, out, lse);
  RUNNER_CHECK_LAUNCH();
}

void attention_merge(const bf16* a, const float* lse_a, const bf16* b, const float* lse_b, bf16* out, int tokens,
                     int heads, cudaStream_t stream) {
  merge_kernel<<<static_cast<unsigned>(tokens * heads), kKvLora / 8, 0, stream>>>(a, lse_a, b, lse_b, out);
  RUNNER_CHECK_LAUNCH();
}

void gather_rows(const std::uint8_t* src, std::uint8_t* dst, const std::int32_t* rows, std::int64_t count,
                 cudaStream_t stream) {
  if (count <= 0) return;
  gather_rows_kernel<<<blocks_for(count, kCopyThreads / kWarp), kCopyThreads, 0, stream>>>(src, dst, rows, count);
  RUNNER_CHECK_LAUNCH();
}

void scatter_rows(const std::uint8_t* src, std::uint8_t* dst, std::int64_t first, std::int64_t stride, int count,
                  cudaStream_t stream) {
  if (count <= 0) return;
  scatter_rows_kernel<<<blocks_for(count, kCopyThreads / kWarp), kCopyThreads, 0, stream>>>(src, dst, first, stride,
                                                                                           count);
  RUNNER_CHECK_LAUNCH();
}

void blocker(const volatile int* release, int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream) {
  blocker_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  RUNNER_CHECK_LAUNCH();
}

}  // namespace ess::runner::gpu
