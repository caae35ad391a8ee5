// EvictionPolicy's default methods (the policies themselves are in eviction_<name>.cpp).
#include "sim/offload/eviction.h"

#include <algorithm>
#include <stdexcept>

#include "sim/base/error.h"

namespace ess {

std::uint32_t EvictionPolicy::renumber(PoolResidency& pool) {
  // Each pooled stamp becomes its rank among the distinct stamps: same order, ticks from 1.
  std::vector<std::uint32_t> ticks;
  for (const std::uint32_t s : pool.stamp) {
    if (s != 0) ticks.push_back(s);
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  for (std::uint32_t& s : pool.stamp) {
    if (s != 0) s = static_cast<std::uint32_t>(std::lower_bound(ticks.begin(), ticks.end(), s) - ticks.begin()) + 1;
  }
  return static_cast<std::uint32_t>(ticks.size());
}

void EvictionPolicy::released(std::span<const std::int64_t> /*dropped*/, std::uint32_t /*tick*/,
                              const PoolResidency& /*pool*/) {
  throw InternalError("EvictionPolicy::released: this policy takes no deltas (check supports_delta())");
}

}  // namespace ess
