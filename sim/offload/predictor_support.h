// Shared by the prefetch predictors: whether a position is on the GPU before an access.
#pragma once

#include <cstdint>

#include "sim/offload/gpu_pool.h"
#include "sim/offload/prefetch.h"

namespace ess {

// In the pool, or in the pinned window of the access's context (written there when generated).
[[nodiscard]] inline bool on_gpu(const PredictionInput& in, std::int64_t position) {
  if (position >= in.context - in.pool->config().pinned_recent) return true;
  return in.pool->in_pool(position);
}

}  // namespace ess
