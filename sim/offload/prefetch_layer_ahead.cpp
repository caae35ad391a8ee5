// layer-ahead (speculative): once layer l has selected, the entries a predictor expects layer
// l + lookahead to select are fetched in the background; layer l + lookahead then fetches on demand
// only the misses the prefetch did not bring. Prefetches and on-demand fetches share the GPU's one
// transfer queue in issue order, so an on-demand fetch can wait behind a prefetch issued before it.
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

class LayerAheadPrefetch final : public PrefetchPolicy {
 public:
  [[nodiscard]] PrefetchTraffic traffic() const override { return {.prefetches = true, .yields_to_on_demand = false}; }
};

}  // namespace

std::unique_ptr<PrefetchPolicy> make_layer_ahead_prefetch() { return std::make_unique<LayerAheadPrefetch>(); }

}  // namespace ess
