#include "sim/offload/cache_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/base/error.h"

namespace ess {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InternalError("CacheSimConfig: " + message);
}


}  // namespace

void validate(const CacheSimConfig& config) {
  require(config.layers >= 1, "layers must be >= 1, got " + std::to_string(config.layers));
  require(config.top_k >= 1, "top_k must be >= 1, got " + std::to_string(config.top_k));
  require(config.sampled_requests >= 1,
          "sampled_requests must be >= 1, got " + std::to_string(config.sampled_requests));
  require(config.warmup_windows >= 0,
          "warmup_windows must be >= 0, got " + std::to_string(config.warmup_windows));
  const bool by_ratio = config.capacity_ratio != 0.0;
  const bool by_entries = config.capacity_entries != 0;
  require(by_ratio != by_entries, "set exactly one of capacity_ratio and capacity_entries");
  if (by_ratio) {
    require(std::isfinite(config.capacity_ratio) && config.capacity_ratio > 0.0,
            "capacity_ratio must be > 0");
  } else {
    require(config.capacity_entries >= 1, "capacity_entries must be >= 1");
  }
  if (!config.predictor.empty()) {
    require(find_registered(prefetch_predictors(), config.predictor) != nullptr,
            "unknown prefetch predictor \"" + config.predictor + "\"");
    require(config.prefetch_budget >= 1, "prefetch_budget must be >= 1 with a predictor");
  }
  PoolConfig pool{1, config.pinned_recent, config.policy, config.eviction_params};
  validate(pool);
}

ScaledEstimate scale(double mean, double std_error, std::int64_t batch) {
  if (batch < 0) throw InternalError("scale: negative batch " + std::to_string(batch));
  const auto b = static_cast<double>(batch);
  return {b * mean, b * std_error};
}

ScaledEstimate scale_misses(const LayerStats& stats, std::int64_t batch) {
  return scale(stats.misses_mean, stats.misses_stderr, batch);
}

CacheSimulator::CacheSimulator(const CacheSimConfig& config, AccessModel& model)
    : config_(config), model_(model) {
  validate(config_);
  const std::int64_t initial = capacity_at(1);
  const PoolConfig pool{initial, config_.pinned_recent, config_.policy, config_.eviction_params};
  const auto count = static_cast<std::size_t>(config_.layers) *
                     static_cast<std::size_t>(config_.sampled_requests);
  pools_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) pools_.emplace_back(pool);
  if (!config_.predictor.empty()) {
    const PredictorParams params{config_.layers, config_.sampled_requests, config_.top_k, config_.predictor_seed,
                                 config_.predictor_model};
    predictor_ = registered(prefetch_predictors(), "prefetch predictor", config_.predictor).make.create(params);
  }
  by_delta_ = model_.has_delta() && pools_.front().takes_delta();
}

CacheSimulator::CacheSimulator(const CacheSimConfig& config, AccessModel& model, std::unique_ptr<PrefetchPredictor> predictor)
    : CacheSimulator(config, model) {
  require(config_.predictor.empty(), "a predictor is given and config.predictor names another");
  require(predictor != nullptr, "the given predictor is null");
  require(config_.prefetch_budget >= 1, "prefetch_budget must be >= 1 with a predictor");
  predictor_ = std::move(predictor);
}

std::size_t CacheSimulator::slot(int layer, int request) const {
  return static_cast<std::size_t>(layer) * static_cast<std::size_t>(config_.sampled_requests) +
         static_cast<std::size_t>(request);
}

AccessResult CacheSimulator::access(int step, int layer, int request, std::int64_t context) {
  GpuPool& pool = pools_[slot(layer, request)];
  const std::int64_t capacity = capacity_at(context);
  if (pool.capacity() != capacity) pool.set_capacity(capacity);
  const bool predicted = predicting_ && predictor_;
  std::vector<std::int64_t>* missed = predicted ? &missed_ : nullptr;
  AccessResult result;
  if (by_delta_) {
    model_.select_delta(step, layer, request, context, delta_);
    if (predicted) predict(step, layer, request, context, pool);
    result = pool.access_delta(delta_, context, step, missed);
  } else {
    model_.select(step, layer, request, context, selected_);
    if (predicted) predict(step, layer, request, context, pool);
    result = pool.access(selected_, context, step, missed);
  }
  if (predicted) score_prediction(step, layer, request, context);
  return result;
}

void CacheSimulator::predict(int step, int layer, int request, std::int64_t context, const GpuPool& pool) {
  PredictionInput in;
  in.step = step;
  in.layer = layer;
  in.request = request;
  in.context = context;
  in.budget = config_.prefetch_budget;
  in.pool = &pool;
  // The entries this access may newly select: its change (every miss is an added entry), or all.
  in.upcoming = by_delta_ ? std::span<const std::int64_t>(delta_.added) : std::span<const std::int64_t>(selected_);
  predictor_->predict(in, predicted_);
  if (static_cast<std::int64_t>(predicted_.size()) > in.budget) {
    throw InternalError("prefetch predictor \"" + predictor_name() + "\" predicted " +
                        std::to_string(predicted_.size()) + " entries over a budget of " + std::to_string(in.budget));
  }
  for (std::size_t i = 0; i < predicted_.size(); ++i) {
    const std::int64_t p = predicted_[i];
    if (p < 0 || p >= context || (i > 0 && p <= predicted_[i - 1]) || pool.in_pool(p)) {
      throw InternalError("prefetch predictor \"" + predictor_name() + "\" predicted position " + std::to_string(p) +
                          ": predictions must be ascending, unique, in [0, context) and not in the pool");
    }
  }
}

std::string CacheSimulator::predictor_name() const { return config_.predictor.empty() ? "(given)" : config_.predictor; }

void CacheSimulator::score_prediction(int step, int layer, int request, std::int64_t context) {
  // Used: predicted entries the access then missed (both lists ascending).
  std::int64_t used = 0;
  auto m = missed_.begin();
  for (const std::int64_t p : predicted_) {
    while (m != missed_.end() && *m < p) ++m;
    if (m != missed_.end() && *m == p) ++used;
  }
  std::int64_t runs = 0;
  for (std::size_t i = 0; i < predicted_.size(); ++i) {
    if (i == 0 || predicted_[i] != predicted_[i - 1] + 1) ++runs;
  }
  last_prefetch_ = {static_cast<std::int64_t>(predicted_.size()), used, runs};
  predictor_->observe(AccessObservation{step, layer, request, context, missed_});
}

std::int64_t CacheSimulator::capacity_at(std::int64_t context) const {
  std::int64_t capacity = config_.capacity_entries;
  if (config_.capacity_ratio != 0.0) {
    const double wanted = std::ceil(config_.capacity_ratio * static_cast<double>(context));
    capacity = static_cast<std::int64_t>(
        std::min(wanted, static_cast<double>(std::numeric_limits<std::int32_t>::max())));
  }
  const std::int64_t outside_pin = std::max<std::int64_t>(0, context - config_.pinned_recent);
  return std::max({capacity, std::min(config_.top_k, outside_pin), std::int64_t{1}});
}

const GpuPool& CacheSimulator::pool(int layer, int request) const {
  if (layer < 0 || layer >= config_.layers || request < 0 || request >= config_.sampled_requests) {
    throw InternalError("CacheSimulator::pool: no pool for layer " + std::to_string(layer) +
                        ", request " + std::to_string(request));
  }
  return pools_[slot(layer, request)];
}

void CacheSimulator::warm_up(std::int64_t context) {
  if (warmed_ || stepped_) {
    throw InternalError("CacheSimulator::warm_up: only once, before the first step");
  }
  warmed_ = true;
  // Pool by pool: the same accesses as window by window, since pools and streams are independent.
  for (int layer = 0; layer < config_.layers; ++layer) {
    for (int request = 0; request < config_.sampled_requests; ++request) {
      for (int w = config_.warmup_windows; w >= 1; --w) {
        if (context - w >= 1) (void)access(-w, layer, request, context - w);
      }
    }
  }
}

CacheStepStats CacheSimulator::step(int step, std::int64_t context) { return steps({step}, {context}).front(); }

std::vector<CacheStepStats> CacheSimulator::steps(const std::vector<int>& steps, const std::vector<std::int64_t>& contexts) {
  if (steps.size() != contexts.size()) {
    throw InternalError("CacheSimulator::steps: " + std::to_string(steps.size()) + " steps but " +
                        std::to_string(contexts.size()) + " contexts");
  }
  stepped_ = true;
  predicting_ = true;
  const int S = config_.sampled_requests;
  const std::size_t n = steps.size();
  const auto L = static_cast<std::size_t>(config_.layers);
  const auto R = static_cast<std::size_t>(S);
  std::vector<AccessResult>& results = results_scratch_;  // [step][layer][request]
  results.assign(n * L * R, AccessResult{});
  std::vector<PrefetchCount>& prefetches = prefetch_scratch_;  // [step][layer][request]
  prefetches.assign(predictor_ ? n * L * R : 0, PrefetchCount{});
  for (std::size_t layer = 0; layer < L; ++layer) {
    for (std::size_t request = 0; request < R; ++request) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = (i * L + layer) * R + request;
        results[at] = access(steps[i], static_cast<int>(layer), static_cast<int>(request), contexts[i]);
        if (predictor_) prefetches[at] = last_prefetch_;
      }
    }
  }
  std::vector<CacheStepStats> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    CacheStepStats& st = out[i];
    st.step = steps[i];
    st.context = contexts[i];
    st.capacity = capacity_at(contexts[i]);
    st.layers.resize(L);
    for (std::size_t layer = 0; layer < L; ++layer) {
      std::vector<double>& misses = misses_scratch_;
      misses.clear();
      double hits = 0.0;
      double runs = 0.0;
      double evictions = 0.0;
      double prefetched = 0.0;
      double used = 0.0;
      double prefetch_runs = 0.0;
      for (std::size_t request = 0; request < R; ++request) {
        const AccessResult& r = results[(i * L + layer) * R + request];
        misses.push_back(static_cast<double>(r.misses));
        hits += static_cast<double>(r.hits);
        runs += static_cast<double>(r.runs);
        evictions += static_cast<double>(r.evictions);
        if (predictor_) {
          prefetched += static_cast<double>(prefetches[(i * L + layer) * R + request].prefetched);
          used += static_cast<double>(prefetches[(i * L + layer) * R + request].used);
          prefetch_runs += static_cast<double>(prefetches[(i * L + layer) * R + request].runs);
        }
      }
      const auto count = static_cast<double>(S);
      LayerStats& stats = st.layers[layer];
      stats.prefetched_mean = prefetched / count;
      stats.prefetch_used_mean = used / count;
      stats.prefetch_runs_mean = prefetch_runs / count;
      stats.requests = S;
      double sum = 0.0;
      for (const double m : misses) sum += m;
      stats.misses_mean = sum / count;
      stats.hits_mean = hits / count;
      stats.runs_mean = runs / count;
      stats.evictions_mean = evictions / count;
      if (S >= 2) {
        double sq = 0.0;  // two passes: no cancellation
        for (const double m : misses) sq += (m - stats.misses_mean) * (m - stats.misses_mean);
        stats.misses_stderr = std::sqrt(sq / (count - 1.0) / count);
      } else {
        stats.misses_stderr = std::numeric_limits<double>::quiet_NaN();
      }
    }
  }
  return out;
}

}  // namespace ess
