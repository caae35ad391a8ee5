// hot-window: predicts the newest positions that are not on the GPU, up to the budget (the seeds'
// "hot window of recent tokens": recent tokens are the likeliest to be selected, and the tokens
// generated since the last step are on the GPU only where a pinned window keeps them).
#include <algorithm>

#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

class HotWindowPredictor final : public PrefetchPredictor {
 public:
  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    out.clear();
    for (std::int64_t p = in.context - 1; p >= 0 && static_cast<std::int64_t>(out.size()) < in.budget; --p) {
      if (!on_gpu(in, p)) out.push_back(p);
    }
    std::reverse(out.begin(), out.end());
  }
};

}  // namespace

std::unique_ptr<PrefetchPredictor> make_hot_window_predictor(const PredictorParams& /*params*/) {
  return std::make_unique<HotWindowPredictor>();
}

}  // namespace ess
