// The prefetch policies and predictors: one line each.
#include "sim/offload/prefetch.h"

#include <array>

namespace ess {

namespace {

const auto kPrefetchPolicies = std::to_array<Registered<PrefetchFactory>>({
    {"on-demand", "no prefetch: each layer fetches its misses after its indexer selects (ESS as published)", &make_on_demand_prefetch},
    {"layer-ahead", "after layer l selects, fetch what a predictor expects layer l + lookahead to select; one FIFO transfer queue", &make_layer_ahead_prefetch},
    {"tiered", "layer-ahead with PCIe priorities: an on-demand fetch preempts the prefetch in flight, which resumes after it", &make_tiered_prefetch},
});

const auto kPredictors = std::to_array<Registered<PredictorFactory>>({
    {"previous-layer", "what the previous layer fetched for this request in this step", {&make_previous_layer_predictor, false}},
    {"hot-window", "the newest positions not on the GPU", {&make_hot_window_predictor, false}},
    {"learned", "the likeliest misses by a heat model trained offline (cache.prefetch.model, ess-sim train-predictor)", {&make_learned_predictor, true}},
    {"oracle", "exactly the coming misses (reads the future): the upper bound", {&make_oracle_predictor, false}},
    {"adversarial", "entries the access will not select (reads the future): the lower bound, all bytes wasted", {&make_adversarial_predictor, false}},
});

}  // namespace

std::span<const Registered<PrefetchFactory>> prefetch_policies() { return kPrefetchPolicies; }
std::span<const Registered<PredictorFactory>> prefetch_predictors() { return kPredictors; }

}  // namespace ess
