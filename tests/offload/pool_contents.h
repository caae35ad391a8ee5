// Test helper shared by the pool and eviction tests: which positions a pool holds.
#pragma once

#include <cstdint>
#include <set>

#include "sim/offload/gpu_pool.h"

namespace ess::test {

// The pooled positions among 0..limit-1.
inline std::set<std::int64_t> contents(const GpuPool& pool, std::int64_t limit) {
  std::set<std::int64_t> in;
  for (std::int64_t p = 0; p < limit; ++p) {
    if (pool.in_pool(p)) in.insert(p);
  }
  return in;
}

}  // namespace ess::test
