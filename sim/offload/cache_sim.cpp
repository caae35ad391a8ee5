#include "sim/offload/cache_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ess {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("CacheSimConfig: " + message);
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
  PoolConfig pool{1, config.pinned_recent, config.policy, config.heat_decay};
  validate(pool);
}

ScaledEstimate scale(double mean, double std_error, std::int64_t batch) {
  if (batch < 0) throw std::invalid_argument("scale: negative batch " + std::to_string(batch));
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
  const PoolConfig pool{initial, config_.pinned_recent, config_.policy, config_.heat_decay};
  const auto count = static_cast<std::size_t>(config_.layers) *
                     static_cast<std::size_t>(config_.sampled_requests);
  pools_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) pools_.emplace_back(pool);
  by_delta_ = model_.has_delta() && pools_.front().takes_delta();
}

std::size_t CacheSimulator::slot(int layer, int request) const {
  return static_cast<std::size_t>(layer) * static_cast<std::size_t>(config_.sampled_requests) +
         static_cast<std::size_t>(request);
}

AccessResult CacheSimulator::access(int step, int layer, int request, std::int64_t context) {
  GpuPool& pool = pools_[slot(layer, request)];
  const std::int64_t capacity = capacity_at(context);
  if (pool.capacity() != capacity) pool.set_capacity(capacity);
  if (by_delta_) {
    model_.select_delta(step, layer, request, context, delta_);
    return pool.access_delta(delta_, context, step);
  }
  model_.select(step, layer, request, context, selected_);
  return pool.access(selected_, context, step);
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
    throw std::out_of_range("CacheSimulator::pool: no pool for layer " + std::to_string(layer) +
                            ", request " + std::to_string(request));
  }
  return pools_[slot(layer, request)];
}

void CacheSimulator::warm_up(std::int64_t context) {
  if (warmed_ || stepped_) {
    throw std::logic_error("CacheSimulator::warm_up: only once, before the first step");
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

StepStats CacheSimulator::step(int step, std::int64_t context) { return steps({step}, {context}).front(); }

std::vector<StepStats> CacheSimulator::steps(const std::vector<int>& steps, const std::vector<std::int64_t>& contexts) {
  if (steps.size() != contexts.size()) {
    throw std::invalid_argument("CacheSimulator::steps: " + std::to_string(steps.size()) + " steps but " +
                                std::to_string(contexts.size()) + " contexts");
  }
  stepped_ = true;
  const int S = config_.sampled_requests;
  const std::size_t n = steps.size();
  const auto L = static_cast<std::size_t>(config_.layers);
  const auto R = static_cast<std::size_t>(S);
  std::vector<AccessResult>& results = results_scratch_;  // [step][layer][request]
  results.assign(n * L * R, AccessResult{});
  for (std::size_t layer = 0; layer < L; ++layer) {
    for (std::size_t request = 0; request < R; ++request) {
      for (std::size_t i = 0; i < n; ++i) {
        results[(i * L + layer) * R + request] =
            access(steps[i], static_cast<int>(layer), static_cast<int>(request), contexts[i]);
      }
    }
  }
  std::vector<StepStats> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    StepStats& st = out[i];
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
      for (std::size_t request = 0; request < R; ++request) {
        const AccessResult& r = results[(i * L + layer) * R + request];
        misses.push_back(static_cast<double>(r.misses));
        hits += static_cast<double>(r.hits);
        runs += static_cast<double>(r.runs);
        evictions += static_cast<double>(r.evictions);
      }
      const auto count = static_cast<double>(S);
      LayerStats& stats = st.layers[layer];
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
