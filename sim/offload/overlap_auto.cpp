// auto: per layer and step, the concrete policy whose estimate (cost models alone, no contention)
// is fastest for this layer's misses; ties go to the earlier registry line (the simpler policy).
#include "sim/base/error.h"
#include "sim/offload/overlap.h"

#include <stdexcept>

namespace ess {

namespace {

class AutoOverlap final : public OverlapPolicy {
 public:
  [[nodiscard]] std::size_t resolve(std::size_t self, const AttentionCosts& costs) const override {
    const auto& policies = overlap_instances();
    std::size_t best = self;
    Seconds best_time(0.0);
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (!overlap_is_concrete(i)) continue;
      const Seconds t = policies[i]->estimate(costs);
      if (best == self || t < best_time) {
        best = i;
        best_time = t;
      }
    }
    if (best == self) throw InternalError("auto overlap: no concrete overlap policy is registered");
    return policies[best]->resolve(best, costs);
  }
  [[nodiscard]] bool chooses_another() const override { return true; }
  [[nodiscard]] Seconds estimate(const AttentionCosts& costs) const override {
    const auto& policies = overlap_instances();
    std::size_t self = policies.size();
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (policies[i].get() == this) self = i;
    }
    return policies[resolve(self, costs)]->estimate(costs);
  }
  [[nodiscard]] std::vector<OverlapPiece> pieces(const AttentionCosts& /*costs*/) const override {
    throw InternalError("auto overlap: pieces() of an unresolved policy");
  }
};

}  // namespace

std::unique_ptr<OverlapPolicy> make_auto_overlap() { return std::make_unique<AutoOverlap>(); }

}  // namespace ess
