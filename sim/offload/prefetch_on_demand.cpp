// on-demand: no prefetch. Each layer fetches its misses once its indexer has selected them (ESS as
// published: the fetch overlaps that layer's attention only as the overlap policy allows).
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

class OnDemandPrefetch final : public PrefetchPolicy {
 public:
  [[nodiscard]] PrefetchTraffic traffic() const override { return {.prefetches = false, .yields_to_on_demand = false}; }
};

}  // namespace

std::unique_ptr<PrefetchPolicy> make_on_demand_prefetch() { return std::make_unique<OnDemandPrefetch>(); }

}  // namespace ess
