// serial: no overlap. The indexer selects, the misses are fetched, then attention reads every
// selected entry: the fetch is fully exposed (the paper's baseline for its overlap designs).
#include "sim/offload/overlap.h"
#include "sim/base/op_names.h"

namespace ess {

namespace {

class SerialOverlap final : public OverlapPolicy {
 public:
  [[nodiscard]] Seconds estimate(const AttentionCosts& c) const override {
    using P = AttentionPart;
    return c[P::score] + c[P::topk] + c[P::absorb] + c.fetch_all + c[P::attention];
  }
  [[nodiscard]] std::vector<OverlapPiece> pieces(const AttentionCosts& /*costs*/) const override {
    using P = AttentionPart;
    return {
        {"", FetchShare::none, {P::score, P::topk, P::absorb}, false},
        {opname::fetch, FetchShare::all, {}, false},
        {"", FetchShare::none, {P::attention}, true},
    };
  }
};

}  // namespace

std::unique_ptr<OverlapPolicy> make_serial_overlap() { return std::make_unique<SerialOverlap>(); }

}  // namespace ess
