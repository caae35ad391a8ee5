// Host-callable launchers for ess-bench's own kernels (device_kernels.cu): the random fill, the
// norms, the UVA row gather/scatter and the blocking kernel of the timing harness. Every launcher
// checks its launch (ESS_CUDA_CHECK_LAUNCH).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/bench/norm_launch.h"

namespace ess::bench {

enum class FillType { bf16, fp16, fp8_e4m3 };

// Element i of `count` elements at `ptr` (device memory, or mapped host memory through its device
// pointer) becomes bench_value(seed, i) converted to `type`: never zero, |x| in [0.25, 1).
void launch_fill(void* ptr, FillType type, std::int64_t count, std::uint64_t seed,
                 cudaStream_t stream);

// y = norm(x) over `tokens` rows of `hidden` bf16 values with bf16 weight (and bias for layer),
// fp32 accumulation, shaped by `launch` (norm_launch(tokens, hidden)). All pointers 16-byte
// aligned device memory.
void launch_norm(NormKind kind, const NormLaunch& launch, const void* x, const void* weight,
                 const void* bias, void* y, std::int64_t tokens, std::int64_t hidden, float eps,
                 cudaStream_t stream);

// The UVA gather ("FlashTrans"): packed[i] = pool[rows[i]] for i < count, each row `row_bytes`
// (a multiple of 16, at most 2048), one warp per row with 16-byte loads, `blocks` blocks of
// kRowCopyThreads threads striding over the rows, `passes` times over (passes > 1 keeps a gather
// running beside another kernel). `pool` is mapped pinned host memory seen through its device
// pointer and is read uncached (ld.global.cv), so a repeated pass really crosses PCIe again.
inline constexpr int kRowCopyThreads = 256;
void launch_gather_rows(const void* pool, const std::int32_t* rows, std::int64_t count,
                        std::int64_t row_bytes, void* packed, int blocks, int passes,
                        cudaStream_t stream);

// The write-back direction: pool[rows[i]] = packed[i], written through to host memory
// (st.global.wt).
void launch_scatter_rows(const void* packed, const std::int32_t* rows, std::int64_t count,
                         std::int64_t row_bytes, void* pool, int blocks, cudaStream_t stream);

// One thread that spins until *release (mapped host memory) becomes non-zero, or until
// timeout_ns of GPU time have passed, in which case it sets *timed_out. Work queued behind it
// then runs back to back, without the host's launch gaps (nvbench's blocking kernel).
void launch_blocker(const volatile int* release, int* timed_out, std::uint64_t timeout_ns,
                    cudaStream_t stream);

}  // namespace ess::bench
