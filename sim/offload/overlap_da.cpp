// da (ESS's "DA" overlap): once the indexer has selected, attention over the entries already on the
// GPU runs while the misses are fetched; attention over the fetched entries and the merge of the
// two partial results follow.
#include "sim/offload/overlap.h"
#include "sim/base/op_names.h"

#include <algorithm>

namespace ess {

namespace {

class DaOverlap final : public OverlapPolicy {
 public:
  [[nodiscard]] Seconds estimate(const AttentionCosts& c) const override {
    using P = AttentionPart;
    return c[P::score] + c[P::topk] + c[P::absorb] + std::max(c.fetch_all, c[P::attention_hits]) +
           c[P::attention_misses] + c[P::merge];
  }
  [[nodiscard]] std::vector<OverlapPiece> pieces(const AttentionCosts& /*costs*/) const override {
    using P = AttentionPart;
    return {
        {"", FetchShare::none, {P::score, P::topk, P::absorb}, false},
        {opname::fetch_overlap, FetchShare::all, {P::attention_hits}, false},
        {"", FetchShare::none, {P::attention_misses, P::merge}, true},
    };
  }
};

}  // namespace

std::unique_ptr<OverlapPolicy> make_da_overlap() { return std::make_unique<DaOverlap>(); }

}  // namespace ess
