// The prefetch policies and predictors: one line each.
#include "sim/offload/prefetch.h"

#include <array>

namespace ess {

namespace {

const std::array<Registered<PrefetchFactory>, 3> kPrefetchPolicies{{
    {"on-demand", "no prefetch: each layer fetches its misses after its indexer selects (ESS as published)", &make_on_demand_prefetch},
    {"layer-ahead", "after layer l selects, fetch what a predictor expects layer l + lookahead to select; one FIFO transfer queue", &make_layer_ahead_prefetch},
    {"tiered", "layer-ahead with PCIe priorities: an on-demand fetch preempts the prefetch in flight, which resumes after it", &make_tiered_prefetch},
}};

const std::array<Registered<PredictorFactory>, 5> kPredictors{{
    {"previous-layer", "what the previous layer fetched for this request in this step", &make_previous_layer_predictor},
    {"hot-window", "the newest positions not on the GPU", &make_hot_window_predictor},
    {"learned", "the likeliest misses by a heat model trained offline (cache.prefetch.model, ess-sim train-predictor)", &make_learned_predictor},
    {"oracle", "exactly the coming misses (reads the future): the upper bound", &make_oracle_predictor},
    {"adversarial", "entries the access will not select (reads the future): the lower bound, all bytes wasted", &make_adversarial_predictor},
}};

}  // namespace

std::span<const Registered<PrefetchFactory>> prefetch_policies() { return kPrefetchPolicies; }
std::span<const Registered<PredictorFactory>> prefetch_predictors() { return kPredictors; }

}  // namespace ess
