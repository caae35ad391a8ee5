// dba (ESS's "DBA" overlap): the batch is split in two halves. The first half's fetch runs while the
// indexer scores and selects for the second half; the second half's fetch runs while attention
// reads the hits and the first half's fetched entries. A single request cannot be split: it runs
// as da.
#include "sim/offload/overlap.h"

#include <algorithm>

namespace ess {

namespace {

class DbaOverlap final : public OverlapPolicy {
 public:
  [[nodiscard]] std::size_t resolve(std::size_t self, const AttentionCosts& costs) const override {
    if (costs.splittable) return self;
    const auto registry = overlap_policies();
    for (std::size_t i = 0; i < registry.size(); ++i) {
      if (registry[i].make == &make_da_overlap) return i;
    }
    return self;  // da unregistered: unreachable with the shipped registry
  }
  [[nodiscard]] Seconds estimate(const AttentionCosts& c) const override {
    using P = AttentionPart;
    if (!c.splittable) return Seconds(1e300);
    return c[P::score_a] + c[P::topk_a] + c[P::absorb] + std::max(c.fetch_a, c[P::score_b] + c[P::topk_b]) +
           std::max(c.fetch_b, c[P::attention_hits] + c[P::misses_a]) + c[P::misses_b] + c[P::merge];
  }
  [[nodiscard]] std::vector<OverlapPiece> pieces(const AttentionCosts& /*costs*/) const override {
    using P = AttentionPart;
    return {
        {"", FetchShare::none, {P::score_a, P::topk_a, P::absorb}, false},
        {"fetch_a", FetchShare::half_a, {P::score_b, P::topk_b}, false},
        {"fetch_b", FetchShare::half_b, {P::attention_hits, P::misses_a}, false},
        {"", FetchShare::none, {P::misses_b, P::merge}, true},
    };
  }
};

}  // namespace

std::unique_ptr<OverlapPolicy> make_dba_overlap() { return std::make_unique<DbaOverlap>(); }

}  // namespace ess
