// adversarial: predicts a full budget of entries that are not on the GPU and that the access will
// not select (it reads the future), newest first. Every prefetched byte is wasted: the lower bound
// of any predictor with this budget, and the control that shows what a useless prefetch costs.
#include <algorithm>

#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

class AdversarialPredictor final : public PrefetchPredictor {
 public:
  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    out.clear();
    for (std::int64_t p = in.context - 1; p >= 0 && static_cast<std::int64_t>(out.size()) < in.budget; --p) {
      if (on_gpu(in, p) || std::binary_search(in.upcoming.begin(), in.upcoming.end(), p)) continue;
      out.push_back(p);
    }
    std::reverse(out.begin(), out.end());
  }
};

}  // namespace

std::unique_ptr<PrefetchPredictor> make_adversarial_predictor(const PredictorParams& /*params*/) {
  return std::make_unique<AdversarialPredictor>();
}

}  // namespace ess
