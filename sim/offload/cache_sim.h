// Index-level simulation of ESS's per-request GPU pools over a sample of requests.
//
// A batch of B requests is represented by S sampled requests (S << B is the point: a pool per
// request and layer costs memory and time). Every step, each sampled request selects its top-k
// entries in every layer (AccessModel) and accesses its own pool (GpuPool). The result per layer is
// the mean over the sample of misses (and hits, runs, evictions) per request, with the standard
// error of the mean: stderr = sd / sqrt(S), the sampling error of treating S requests as
// representative. The caller scales the sample to its batch with scale() below: the expected total
// over B requests is B x mean, known to within B x stderr.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/offload/access_model.h"
#include "sim/offload/gpu_pool.h"
#include "sim/offload/prefetch.h"

namespace ess {

struct CacheSimConfig {
  int layers = 61;            // layers with a pool (DeepSeek-V3.2-Exp: 61; 62 with MTP)
  std::int64_t top_k = 2048;  // entries the indexer selects per step (must match the model's)
  int sampled_requests = 8;   // S, >= 1 (stderr needs S >= 2; it is NaN for S = 1)
  // Pseudo-steps of warm-up before decoding: the paper warms each pool with the top-2K selections
  // of the last 32 prefill windows. >= 0.
  int warmup_windows = 32;

  // Pool size per request and layer: set exactly one of these (> 0).
  //  capacity_ratio:   ceil(ratio x context), re-evaluated every step (the paper's sparse memory
  //                    ratio, SMR: 0.2 at 32K, 0.1 at 128K);
  //  capacity_entries: a fixed number of entries.
  // Either way the capacity is raised, if needed, to one step's selection outside the pinned window
  // (every selected entry must be on the GPU for attention to read it).
  double capacity_ratio = 0.0;
  std::int64_t capacity_entries = 0;
  std::int64_t pinned_recent = 0;  // PoolConfig::pinned_recent
  std::string policy{kDefaultEviction};  // PoolConfig::policy: a registered eviction policy's name
  PolicyValues eviction_params;          // PoolConfig::params

  // Prefetch (prefetch.h): a registered predictor's name ("" for none) and the most entries it may
  // prefetch per request, layer and step (the staging buffer in HBM), >= 1 when a predictor is set.
  // Warm-up accesses are not predicted.
  std::string predictor;
  std::int64_t prefetch_budget = 0;
  std::uint64_t predictor_seed = 0;
  std::string predictor_model;  // PredictorParams::model_file (learned: its heat model file)
};

// Throws InternalError naming the field (the configuration is built from checked scenario values).
void validate(const CacheSimConfig& config);

// Per layer, over the sampled requests, for one step.
struct LayerStats {
  double misses_mean = 0.0;    // entries fetched from CPU memory per request
  double misses_stderr = 0.0;  // standard error of misses_mean (sd / sqrt(S); NaN if S = 1)
  double hits_mean = 0.0;
  double runs_mean = 0.0;       // contiguous runs of missed positions per request
  double evictions_mean = 0.0;
  double prefetched_mean = 0.0;     // entries the predictor prefetched per request (0 without one)
  double prefetch_used_mean = 0.0;  // of those, entries the selection then missed: fetched early
  double prefetch_runs_mean = 0.0;  // contiguous runs among the prefetched positions
  int requests = 0;             // S
};

struct CacheStepStats {
  int step = 0;
  std::int64_t context = 0;
  std::int64_t capacity = 0;  // pool capacity per request and layer used at this step
  std::vector<LayerStats> layers;
};

// A per-request mean scaled to a batch: the expected total and its standard error.
struct ScaledEstimate {
  double total = 0.0;
  double std_error = 0.0;
};
// total = batch x mean, std_error = batch x stderr: the uncertainty of the expected batch total that
// comes from sampling S requests. (The spread of one actual batch's total around its expectation,
// sqrt(batch) x sd, is another quantity.) batch >= 0.
[[nodiscard]] ScaledEstimate scale(double mean, double std_error, std::int64_t batch);
[[nodiscard]] ScaledEstimate scale_misses(const LayerStats& stats, std::int64_t batch);

class CacheSimulator {
 public:
  // `model` must outlive the simulator and serve requests 0 .. S-1 of `config.layers` layers; its
  // top_k must be config.top_k. Throws InternalError for a bad configuration.
  CacheSimulator(const CacheSimConfig& config, AccessModel& model);
  // The same with a predictor of the caller's (tests, or one not in the registry): config.predictor
  // must then be empty and config.prefetch_budget >= 1. Its predictions are checked on every access
  // (ascending, unique, in the context, not in the pool, within the budget: InternalError).
  CacheSimulator(const CacheSimConfig& config, AccessModel& model, std::unique_ptr<PrefetchPredictor> predictor);

  // Runs the warm-up pseudo-steps -W .. -1 at contexts context-W .. context-1 (those below 1 are
  // skipped), inserting their selections into the pools without counting them. `context` is the
  // context of the first decode step. At most once, before the first step (InternalError).
  void warm_up(std::int64_t context);

  // One decode step: every sampled request selects in every layer and accesses its pool. Steps
  // must increase and contexts must not decrease (an ess::Error from the model or pool).
  CacheStepStats step(int step, std::int64_t context);
  // Several decode steps (steps[i] at contexts[i]), the same results as step() for each in turn,
  // computed pool by pool so that each pool's arrays stay in cache across the steps (the pools and
  // the model's streams are independent, so the order does not change any result).
  std::vector<CacheStepStats> steps(const std::vector<int>& steps, const std::vector<std::int64_t>& contexts);

  // Capacity for a context: ratio or fixed, raised to one selection (see CacheSimConfig).
  [[nodiscard]] std::int64_t capacity_at(std::int64_t context) const;

  [[nodiscard]] const CacheSimConfig& config() const { return config_; }
  [[nodiscard]] const GpuPool& pool(int layer, int request) const;

 private:

  CacheSimConfig config_;
  AccessModel& model_;
  std::vector<GpuPool> pools_;  // [layer * S + request]
  [[nodiscard]] std::size_t slot(int layer, int request) const;  // index into pools_
  // One access of pool (layer, request) at `step`, its capacity first set for `context`: by the
  // change from its previous selection when the model gives changes and the pool takes them (a
  // policy that supports deltas, no pinned window), else in full.
  AccessResult access(int step, int layer, int request, std::int64_t context);
  // The prediction before that access and its outcome, with a predictor; sets last_prefetch_.
  void predict(int step, int layer, int request, std::int64_t context, const GpuPool& pool);
  void score_prediction(int step, int layer, int request, std::int64_t context);
  [[nodiscard]] std::string predictor_name() const;

  struct PrefetchCount {
    std::int64_t prefetched = 0;
    std::int64_t used = 0;
    std::int64_t runs = 0;
  };
  std::unique_ptr<PrefetchPredictor> predictor_;
  bool predicting_ = false;  // false during warm-up
  std::vector<std::int64_t> predicted_;
  std::vector<std::int64_t> missed_;
  PrefetchCount last_prefetch_;
  std::vector<PrefetchCount> prefetch_scratch_;

  std::vector<std::int64_t> selected_;
  SelectionDelta delta_;
  bool by_delta_ = false;
  std::vector<double> misses_scratch_;
  std::vector<AccessResult> results_scratch_;
  bool warmed_ = false;
  bool stepped_ = false;
};

}  // namespace ess
