// oracle: predicts exactly the entries the access will miss (it reads the future), up to the budget,
// newest first. No real predictor can do better: the upper bound of what prefetch can hide.
#include <algorithm>

#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

class OraclePredictor final : public PrefetchPredictor {
 public:
  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    out.clear();
    for (auto it = in.upcoming.rbegin(); it != in.upcoming.rend() && static_cast<std::int64_t>(out.size()) < in.budget; ++it) {
      if (!on_gpu(in, *it)) out.push_back(*it);
    }
    std::reverse(out.begin(), out.end());
  }
};

}  // namespace

std::unique_ptr<PrefetchPredictor> make_oracle_predictor(const PredictorParams& /*params*/) {
  return std::make_unique<OraclePredictor>();
}

}  // namespace ess
