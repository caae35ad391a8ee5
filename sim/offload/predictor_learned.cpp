// learned: ranks the candidates of an access (positions the pool's fetch history holds, the
// previous layer's fetches of this step, the newest positions not on the GPU) by a logistic heat
// model trained offline (`ess-sim train-predictor`, heat_model.h) and predicts the `budget` most
// probable that pass the model's threshold. The features are kept online from what the cache
// simulation shows a predictor (the pool before each access, the fetches after it).
#include <string>

#include "sim/base/error.h"
#include "sim/offload/heat_model.h"
#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

class LearnedPredictor final : public PrefetchPredictor {
 public:
  LearnedPredictor(const PredictorParams& params, HeatModel model)
      : model_(std::move(model)), state_(params.layers, params.requests) {}

  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    // The newest positions not on the GPU are candidates up to the budget: the learned predictor
    // can always fall back to what hot-window would predict.
    state_.candidates(in, in.budget, positions_, features_);
    probabilities_.clear();
    for (const auto& x : features_) probabilities_.push_back(model_.probability(x));
    heat_rank(model_, positions_, probabilities_, in.budget, out);
  }

  void observe(const AccessObservation& seen) override { state_.observe(seen); }

 private:
  HeatModel model_;
  HeatState state_;
  std::vector<std::int64_t> positions_;
  std::vector<HeatFeatures> features_;
  std::vector<double> probabilities_;
};

}  // namespace

std::unique_ptr<PrefetchPredictor> make_learned_predictor(const PredictorParams& params) {
  if (params.model_file.empty()) {
    throw InternalError("prefetch predictor \"learned\" needs a heat model file (cache.prefetch.model, "
                        "written by ess-sim train-predictor)");
  }
  return std::make_unique<LearnedPredictor>(params, load_heat_model(params.model_file));
}

}  // namespace ess
