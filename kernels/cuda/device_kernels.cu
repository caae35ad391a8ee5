#include "kernels/cuda/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "kernels/bench/hash_rng.h"
#include "kernels/cuda/check.h"

namespace ess::bench {

namespace {

constexpr int kFillThreads = 256;
// Enough blocks to fill every SM of the largest GPU several times over; the kernels stride.
constexpr std::int64_t kMaxFillBlocks = 4096;

template <typename T>
__device__ T convert(float v);
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __half convert<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_fp8_storage_t convert<__nv_fp8_storage_t>(float v) {
  return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t count, std::uint64_t seed) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = convert<T>(bench_value(seed, static_cast<std::uint64_t>(i)));
  }
}

template <typename T>
void fill(void* ptr, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  const std::int64_t blocks = std::min(kMaxFillBlocks, (count + kFillThreads - 1) / kFillThreads);
  fill_kernel<T><<<static_cast<unsigned>(blocks), kFillThreads, 0, stream>>>(static_cast<T*>(ptr),
                                                                              count, seed);
  ESS_CUDA_CHECK_LAUNCH();
}

// ---- norms ---------------------------------------------------------------------------------

constexpr int kWarp = 32;
constexpr int kVectorValues = 8;  // bf16 per 16-byte vector

__device__ void unpack(const uint4& raw, float (&out)[kVectorValues]) {
  const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < kVectorValues / 2; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ uint4 pack(const float (&in)[kVectorValues]) {
  uint4 raw;
  auto* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < kVectorValues / 2; ++i) {
    pairs[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
  }
  return raw;
}

// The sum of v over the threads of one row: a warp shuffle, then (one row per block) through
// shared memory. Every thread of the row gets the total.
__device__ float row_sum(float v, int threads_per_row, float* scratch) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffU, v, offset);
  }
  if (threads_per_row <= kWarp) return v;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  __syncthreads();  // the previous call's readers are done with scratch
  if (threadIdx.x % kWarp == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  for (int i = 0; i < warps; ++i) total += scratch[i];
  return total;
}

// One row per threads_per_row threads; each thread holds kVpt 16-byte vectors of its row in
// registers, so x is read once. fp32 accumulation; LayerNorm's variance from the registers in a
// second pass (more accurate than E[x^2] - E[x]^2 at no memory cost).
template <int kVpt, bool kLayer>
__global__ void norm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ weight,
                            const uint4* __restrict__ bias, uint4* __restrict__ y,
                            std::int64_t tokens, int vectors, int threads_per_row, float eps) {
  __shared__ float scratch[kWarp];
  const int row_in_block = static_cast<int>(threadIdx.x) / threads_per_row;
  const int t = static_cast<int>(threadIdx.x) - row_in_block * threads_per_row;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / threads_per_row) + row_in_block;
  const bool valid_row = row < tokens;
  const float hidden = static_cast<float>(vectors * kVectorValues);

  float v[kVpt][kVectorValues];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kVpt; ++j) {
    const int idx = t + j * threads_per_row;
    if (valid_row && idx < vectors) {
      unpack(x[row * vectors + idx], v[j]);
    } else {
#pragma unroll
      for (int e = 0; e < kVectorValues; ++e) v[j][e] = 0.0f;
    }
#pragma unroll
    for (int e = 0; e < kVectorValues; ++e) sum += kLayer ? v[j][e] : v[j][e] * v[j][e];
  }

  float mean = 0.0f;
  float inv = 0.0f;
  if constexpr (kLayer) {
    mean = row_sum(sum, threads_per_row, scratch) / hidden;
    float squares = 0.0f;
#pragma unroll
    for (int j = 0; j < kVpt; ++j) {
      if (t + j * threads_per_row < vectors) {
#pragma unroll
        for (int e = 0; e < kVectorValues; ++e) squares += (v[j][e] - mean) * (v[j][e] - mean);
      }
    }
    inv = rsqrtf(row_sum(squares, threads_per_row, scratch) / hidden + eps);
  } else {
    inv = rsqrtf(row_sum(sum, threads_per_row, scratch) / hidden + eps);
  }

#pragma unroll
  for (int j = 0; j < kVpt; ++j) {
    const int idx = t + j * threads_per_row;
    if (!valid_row || idx >= vectors) continue;
    float w[kVectorValues];
    unpack(weight[idx], w);
    float b[kVectorValues] = {};
    if constexpr (kLayer) unpack(bias[idx], b);
    float out[kVectorValues];
#pragma unroll
    for (int e = 0; e < kVectorValues; ++e) out[e] = (v[j][e] - mean) * inv * w[e] + b[e];
    y[row * vectors + idx] = pack(out);
  }
}

template <bool kLayer>
void norm_dispatch(const NormLaunch& l, const void* x, const void* weight, const void* bias,
                   void* y, std::int64_t tokens, std::int64_t hidden, float eps,
                   cudaStream_t stream) {
  const auto* xv = static_cast<const uint4*>(x);
  const auto* wv = static_cast<const uint4*>(weight);
  const auto* bv = static_cast<const uint4*>(bias);
  auto* yv = static_cast<uint4*>(y);
  const int vectors = static_cast<int>(hidden / kVectorValues);
  const auto blocks = static_cast<unsigned>(l.blocks);
  const auto threads = static_cast<unsigned>(l.block_threads);
  switch (l.vectors_per_thread) {
    case 1:
      norm_kernel<1, kLayer><<<blocks, threads, 0, stream>>>(xv, wv, bv, yv, tokens, vectors,
                                                             l.threads_per_row, eps);
      break;
    case 2:
      norm_kernel<2, kLayer><<<blocks, threads, 0, stream>>>(xv, wv, bv, yv, tokens, vectors,
                                                             l.threads_per_row, eps);
      break;
    default:
      norm_kernel<4, kLayer><<<blocks, threads, 0, stream>>>(xv, wv, bv, yv, tokens, vectors,
                                                             l.threads_per_row, eps);
      break;
  }
  ESS_CUDA_CHECK_LAUNCH();
}

// ---- UVA row gather / scatter ----------------------------------------------------------------

// Rows up to 4 x 32 x 16 = 2048 bytes: every lane issues all its loads before any store, so a
// warp has its whole row in flight at once.
constexpr int kMaxRowVectorsPerLane = 4;

template <bool kToDevice>
__global__ void row_copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                const std::int32_t* __restrict__ rows, std::int64_t count,
                                int row_vectors, int passes) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t warp =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / kWarp;
  for (int pass = 0; pass < passes; ++pass) {
    for (std::int64_t i = warp; i < count; i += warps) {
      const std::int64_t row = rows[i];
      // Gather: scattered host row -> packed device row. Scatter: the reverse.
      const uint4* s = src + (kToDevice ? row : i) * row_vectors;
      uint4* d = dst + (kToDevice ? i : row) * row_vectors;
      uint4 v[kMaxRowVectorsPerLane];
#pragma unroll
      for (int j = 0; j < kMaxRowVectorsPerLane; ++j) {
        const int c = lane + j * kWarp;
        if (c < row_vectors) v[j] = kToDevice ? __ldcv(s + c) : __ldcs(s + c);
      }
#pragma unroll
      for (int j = 0; j < kMaxRowVectorsPerLane; ++j) {
        const int c = lane + j * kWarp;
        if (c < row_vectors) {
          if constexpr (kToDevice) {
            d[c] = v[j];
          } else {
            __stwt(d + c, v[j]);
          }
        }
      }
    }
  }
}

void check_rows(std::int64_t row_bytes) {
  if (row_bytes % 16 != 0 || row_bytes < 16 || row_bytes > 16 * kWarp * kMaxRowVectorsPerLane) {
    die(__FILE__, __LINE__, "row_copy", "row_bytes must be a multiple of 16 in [16, 2048]");
  }
}

// ---- blocking kernel -------------------------------------------------------------------------

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void blocker_kernel(const volatile int* release, int* timed_out,
                               std::uint64_t timeout_ns) {
  const std::uint64_t start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);  // poll every ~1 us; the host releases within microseconds anyway
  }
}

}  // namespace

void launch_fill(void* ptr, FillType type, std::int64_t count, std::uint64_t seed,
                 cudaStream_t stream) {
  switch (type) {
    case FillType::bf16: fill<__nv_bfloat16>(ptr, count, seed, stream); break;
    case FillType::fp16: fill<__half>(ptr, count, seed, stream); break;
    case FillType::fp8_e4m3: fill<__nv_fp8_storage_t>(ptr, count, seed, stream); break;
  }
}

void launch_norm(NormKind kind, const NormLaunch& launch, const void* x, const void* weight,
                 const void* bias, void* y, std::int64_t tokens, std::int64_t hidden, float eps,
                 cudaStream_t stream) {
  if (kind == NormKind::layer) {
    norm_dispatch<true>(launch, x, weight, bias, y, tokens, hidden, eps, stream);
  } else {
    norm_dispatch<false>(launch, x, weight, bias, y, tokens, hidden, eps, stream);
  }
}

void launch_gather_rows(const void* pool, const std::int32_t* rows, std::int64_t count,
                        std::int64_t row_bytes, void* packed, int blocks, int passes,
                        cudaStream_t stream) {
  check_rows(row_bytes);
  if (count <= 0) return;
  row_copy_kernel<true><<<static_cast<unsigned>(blocks), kRowCopyThreads, 0, stream>>>(
      static_cast<const uint4*>(pool), static_cast<uint4*>(packed), rows, count,
      static_cast<int>(row_bytes / 16), passes);
  ESS_CUDA_CHECK_LAUNCH();
}

void launch_scatter_rows(const void* packed, const std::int32_t* rows, std::int64_t count,
                         std::int64_t row_bytes, void* pool, int blocks, cudaStream_t stream) {
  check_rows(row_bytes);
  if (count <= 0) return;
  row_copy_kernel<false><<<static_cast<unsigned>(blocks), kRowCopyThreads, 0, stream>>>(
      static_cast<const uint4*>(packed), static_cast<uint4*>(pool), rows, count,
      static_cast<int>(row_bytes / 16), 1);
  ESS_CUDA_CHECK_LAUNCH();
}

void launch_blocker(const volatile int* release, int* timed_out, std::uint64_t timeout_ns,
                    cudaStream_t stream) {
  blocker_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  ESS_CUDA_CHECK_LAUNCH();
}

}  // namespace ess::bench
