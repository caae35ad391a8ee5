// Prefetch: fetching latent-cache entries a layer is expected to select before its indexer has
// selected them, so the PCIe transfer runs under earlier compute (the ESS documents' layer-ahead,
// speculative and tiered prefetch). Two pluggable kinds:
//
//  - a prefetch *policy* says whether a run prefetches and how its transfers share the PCIe link
//    with the on-demand fetches of the current layer's misses;
//  - a *predictor* says which entries to prefetch for one request and layer, given what the GPU pool
//    holds. It runs inside the index-level cache simulation (CacheSimulator), which counts, per
//    layer, the entries prefetched and those the selection then used.
//
// What a prefetch does to the pool: nothing. Prefetched entries land in a staging buffer in HBM
// (CacheSimConfig::prefetch_budget entries per request and layer, the double buffer); those the
// selection uses enter the pool exactly as on-demand misses would, the others are dropped. So every
// prefetch policy sees the same pool contents, hits and misses as on-demand (common random
// numbers); a prefetch only moves a used miss's bytes earlier, and costs the unused ones' bytes.
//
// Implementations beside this header: prefetch_on_demand.cpp, prefetch_layer_ahead.cpp,
// prefetch_tiered.cpp; predictor_oracle.cpp, predictor_adversarial.cpp,
// predictor_previous_layer.cpp, predictor_hot_window.cpp, predictor_learned.cpp (with
// heat_model.h). One line each in prefetch_registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/offload/registry.h"

namespace ess {

class GpuPool;

// How a policy's prefetch transfers use a GPU's PCIe link. The engine (sim/engine, where SimGrid
// stays) implements the mechanisms; a policy declares which it uses, so a policy made of them is one
// .cpp and one registry line, and a new mechanism is one field here plus its engine code.
struct PrefetchTraffic {
  // The policy issues prefetches: the step graph gets prefetch segments, the cache simulation a
  // predictor and a staging buffer in HBM.
  bool prefetches = false;
  // Prefetches run on a transfer engine of their own, one at a time in issue order, and the one in
  // flight is suspended (its flow and its gather kernel's share of the SMs) while any on-demand
  // fetch of the GPU runs, resuming when none is left. false: prefetches join the on-demand
  // fetches' one FIFO queue, so an on-demand fetch waits behind the prefetches issued before it.
  bool yields_to_on_demand = false;
};

class PrefetchPolicy {
 public:
  PrefetchPolicy() = default;
  PrefetchPolicy(const PrefetchPolicy&) = delete;
  PrefetchPolicy& operator=(const PrefetchPolicy&) = delete;
  virtual ~PrefetchPolicy() = default;

  [[nodiscard]] virtual PrefetchTraffic traffic() const = 0;
  [[nodiscard]] bool prefetches() const { return traffic().prefetches; }
};

using PrefetchFactory = std::unique_ptr<PrefetchPolicy> (*)();

// Every prefetch policy, in registry order (prefetch_registry.cpp).
[[nodiscard]] std::span<const Registered<PrefetchFactory>> prefetch_policies();
// The policy of a scenario that names none (ESS as published: no prefetch).
inline constexpr std::string_view kDefaultPrefetchPolicy = "on-demand";

// What a predictor sees for one access of one (layer, request) pool, before it happens.
struct PredictionInput {
  int step = 0;
  int layer = 0;
  int request = 0;
  std::int64_t context = 0;
  std::int64_t budget = 0;       // most positions to predict
  const GpuPool* pool = nullptr;  // its state before the access (GpuPool::resident)
  // The positions this access may newly select (a superset of its misses, ascending): the whole
  // selection, or its change from the previous one. Only bounds that know the future (oracle,
  // adversarial) read it; a real predictor must not.
  std::span<const std::int64_t> upcoming;
};

// What the access then did, for predictors that learn or pass information on.
struct AccessObservation {
  int step = 0;
  int layer = 0;
  int request = 0;
  std::int64_t context = 0;
  std::span<const std::int64_t> missed;  // the positions fetched, ascending
};

class PrefetchPredictor {
 public:
  PrefetchPredictor() = default;
  PrefetchPredictor(const PrefetchPredictor&) = delete;
  PrefetchPredictor& operator=(const PrefetchPredictor&) = delete;
  virtual ~PrefetchPredictor() = default;

  // At most in.budget positions in [0, in.context), none of them resident in in.pool, ascending
  // and unique, into `out` (replacing its content). Calls come in the cache simulation's order:
  // pool by pool (layer-major, then request), steps increasing within a pool.
  virtual void predict(const PredictionInput& in, std::vector<std::int64_t>& out) = 0;
  // After each predicted access.
  virtual void observe(const AccessObservation& /*seen*/) {}
};

// What a predictor may be built from.
struct PredictorParams {
  int layers = 0;
  int requests = 0;  // sampled requests
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;
  // Predictors trained offline (learned): their model file (heat_model.h), "" for the others.
  std::string model_file;
};

// The predictor registry's factory: how to make one, and whether it reads a model trained offline
// (PredictorParams::model_file, a heat model: the scenario then requires cache.prefetch.model).
struct PredictorFactory {
  std::unique_ptr<PrefetchPredictor> (*create)(const PredictorParams&);
  bool reads_model_file;
};

// Every predictor, in registry order (prefetch_registry.cpp).
[[nodiscard]] std::span<const Registered<PredictorFactory>> prefetch_predictors();
// The predictor of a prefetching scenario that names none.
inline constexpr std::string_view kDefaultPredictor = "previous-layer";

// The implementations (one .cpp each), for the registry.
std::unique_ptr<PrefetchPolicy> make_on_demand_prefetch();
std::unique_ptr<PrefetchPolicy> make_layer_ahead_prefetch();
std::unique_ptr<PrefetchPolicy> make_tiered_prefetch();
std::unique_ptr<PrefetchPredictor> make_oracle_predictor(const PredictorParams& params);
std::unique_ptr<PrefetchPredictor> make_adversarial_predictor(const PredictorParams& params);
std::unique_ptr<PrefetchPredictor> make_previous_layer_predictor(const PredictorParams& params);
std::unique_ptr<PrefetchPredictor> make_hot_window_predictor(const PredictorParams& params);
std::unique_ptr<PrefetchPredictor> make_learned_predictor(const PredictorParams& params);

}  // namespace ess
