// tiered: the seeds' immediate / speculative / background tiers with PCIe priorities. Immediate
// fetches (the current layer's misses) always go first: a prefetch in flight is suspended while any
// immediate fetch runs and resumes when none is left, so an immediate fetch never queues behind
// background bytes. Prefetches run one at a time in issue order (speculative for the next layers
// before background ones further ahead, since they are issued first).
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

class TieredPrefetch final : public PrefetchPolicy {
 public:
  [[nodiscard]] PrefetchTraffic traffic() const override { return {.prefetches = true, .yields_to_on_demand = true}; }
};

}  // namespace

std::unique_ptr<PrefetchPolicy> make_tiered_prefetch() { return std::make_unique<TieredPrefetch>(); }

}  // namespace ess
