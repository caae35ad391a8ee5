// The norm kernels' kinds, epsilons and launch shape. Kept to C++17 (no std::span) because the
// CUDA sources, which nvcc compiles as C++17, include it too.
#pragma once

#include <cstdint>
#include <string_view>

namespace ess::bench {

enum class NormKind { rms, layer };

[[nodiscard]] std::string_view to_string(NormKind k);

// Epsilons as the measured models use them: RMSNorm 1e-6 (DeepSeek-V3.2-Exp config rms_norm_eps;
// Llama's 1e-5 costs the same), LayerNorm 1e-5 (torch.nn.LayerNorm's default eps).
inline constexpr double kRmsEps = 1e-6;
inline constexpr double kLayerEps = 1e-5;

// How the norm kernels map rows onto threads. Each thread keeps vectors_per_thread 16-byte
// vectors (8 bf16) of its row in registers, so the row is read from memory once.
//  - hidden <= 1024 (<= 128 vectors): one warp per row, 4 rows per 128-thread block, so a
//    512-wide row does not leave 3/4 of a block idle;
//  - wider rows: one block per row of round_up(vectors, 32) threads (at most 1024), like vLLM's
//    and FasterTransformer's one-block-per-token norms.
// vectors_per_thread is 1, 2 or 4 (the instantiated kernels), rounded up.
struct NormLaunch {
  int threads_per_row = 0;
  int block_threads = 0;
  int vectors_per_thread = 0;
  std::int64_t rows_per_block = 0;
  std::int64_t blocks = 0;
};

// Throws std::invalid_argument unless hidden is a positive multiple of 8 no larger than 32768
// (1024 threads x 4 vectors x 8) and tokens >= 1.
[[nodiscard]] NormLaunch norm_launch(std::int64_t tokens, std::int64_t hidden);

}  // namespace ess::bench
