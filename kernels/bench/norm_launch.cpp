#include "kernels/bench/norm_launch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ess::bench {

std::string_view to_string(NormKind k) {
  switch (k) {
    case NormKind::rms: return "rms";
    case NormKind::layer: return "layer";
  }
  return "?";
}

NormLaunch norm_launch(std::int64_t tokens, std::int64_t hidden) {
  constexpr std::int64_t kVectorValues = 8;  // 16 bytes of bf16
  constexpr std::int64_t kWarp = 32;
  constexpr std::int64_t kMaxThreads = 1024;  // CUDA's block-size limit
  constexpr std::int64_t kMaxVectorsPerThread = 4;
  constexpr std::int64_t kWarpRowsMaxVectors = kWarp * kMaxVectorsPerThread;  // hidden <= 1024
  constexpr std::int64_t kWarpRowsPerBlock = 4;

  if (tokens < 1) {
    throw std::invalid_argument("norm_launch: tokens must be >= 1 (got " + std::to_string(tokens) +
                                ")");
  }
  if (hidden < kVectorValues || hidden % kVectorValues != 0 ||
      hidden > kMaxThreads * kMaxVectorsPerThread * kVectorValues) {
    throw std::invalid_argument("norm_launch: hidden must be a multiple of 8 in [8, 32768] (got " +
                                std::to_string(hidden) + ")");
  }
  const std::int64_t vectors = hidden / kVectorValues;
  NormLaunch l;
  std::int64_t per_thread = 0;
  if (vectors <= kWarpRowsMaxVectors) {
    l.threads_per_row = static_cast<int>(kWarp);
    l.rows_per_block = kWarpRowsPerBlock;
    l.block_threads = static_cast<int>(kWarp * kWarpRowsPerBlock);
    per_thread = (vectors + kWarp - 1) / kWarp;
  } else {
    const std::int64_t threads = std::min(kMaxThreads, (vectors + kWarp - 1) / kWarp * kWarp);
    l.threads_per_row = static_cast<int>(threads);
    l.rows_per_block = 1;
    l.block_threads = static_cast<int>(threads);
    per_thread = (vectors + threads - 1) / threads;
  }
  l.vectors_per_thread = per_thread <= 1 ? 1 : per_thread <= 2 ? 2 : 4;
  l.blocks = (tokens + l.rows_per_block - 1) / l.rows_per_block;
  return l;
}

}  // namespace ess::bench
