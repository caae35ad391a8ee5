// previous-layer: predicts that layer l fetches what layer l - 1 of the same request fetched in the
// same step (cross-layer similarity of the indexer's selections), less what layer l already holds,
// newest first, up to the budget. Layer 0 predicts nothing. Under the synthetic access model the
// layers draw independently, so this predictor is right only by chance there (sim/offload/README.md);
// on traces with cross-layer similarity it is not.
#include <algorithm>
#include <map>
#include <utility>

#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

class PreviousLayerPredictor final : public PrefetchPredictor {
 public:
  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    out.clear();
    const auto it = last_.find({in.request, in.step});
    if (in.layer == 0 || it == last_.end() || it->second.layer != in.layer - 1) return;
    const auto& missed = it->second.missed;
    for (auto p = missed.rbegin(); p != missed.rend() && static_cast<std::int64_t>(out.size()) < in.budget; ++p) {
      if (*p < in.context && !on_gpu(in, *p)) out.push_back(*p);
    }
    std::reverse(out.begin(), out.end());
  }

  void observe(const AccessObservation& seen) override {
    // Pools are visited layer-major, steps increasing within a pool: when layer l reads (request,
    // step), layer l - 1 has just written it, and layer l then replaces it for layer l + 1.
    auto& entry = last_[{seen.request, seen.step}];
    entry.layer = seen.layer;
    entry.missed.assign(seen.missed.begin(), seen.missed.end());
    // The last layer's entries are read by no one: drop those of older steps of this request.
    for (auto old = last_.begin(); old != last_.end();) {
      if (old->first.first == seen.request && old->first.second < seen.step - kKeptSteps) {
        old = last_.erase(old);
      } else {
        ++old;
      }
    }
  }

 private:
  // Steps kept per request: more than the cache simulation computes at once (AccessPipeline's chunk).
  static constexpr int kKeptSteps = 64;
  struct Seen {
    int layer = -1;
    std::vector<std::int64_t> missed;
  };
  std::map<std::pair<int, int>, Seen> last_;  // (request, step) -> the last layer's misses
};

}  // namespace

std::unique_ptr<PrefetchPredictor> make_previous_layer_predictor(const PredictorParams& /*params*/) {
  return std::make_unique<PreviousLayerPredictor>();
}

}  // namespace ess
