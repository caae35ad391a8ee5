#include "sim/engine/offload_source.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "sim/engine/simulation.h"
#include "sim/offload/heat_model.h"
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

// Every input of the cache simulation (see access_store.h), and the binary that computes it (its
// size and modification time: a rebuilt binary never reads another's results).
std::string access_store_key(const CacheSimConfig& c, const AccessModel& access, const DecodeStepBuilder& builder,
                             std::int64_t steps) {
  nlohmann::json k;
  struct stat self{};
  if (::stat("/proc/self/exe", &self) == 0) {
    k["binary"] = {static_cast<long long>(self.st_size), static_cast<long long>(self.st_mtime)};
  }
  k["pools"] = {c.layers, c.top_k, c.sampled_requests, c.warmup_windows, c.capacity_ratio, c.capacity_entries,
                c.pinned_recent, c.policy};
  for (const auto& [name, value] : c.eviction_params.given()) k["pools"].push_back(value);
  k["access"] = access.store_key();
  if (!c.predictor.empty()) k["prefetch"] = {c.predictor, c.prefetch_budget, c.predictor_seed, c.predictor_model.empty() ? "" : heat_model_sha256(c.predictor_model)};
  std::vector<std::int64_t> contexts;
  for (int step = 0; step < steps; ++step) contexts.push_back(builder.context_at(step));
  k["contexts"] = contexts;
  return k.dump();
}

}  // namespace

OffloadSource::OffloadSource(const DecodeRun& run, const DecodeStepBuilder& builder, std::int64_t steps,
                             const std::filesystem::path& store, std::unique_ptr<AccessModel> access)
    : store_(store), access_model_(std::move(access)), offload_(run.offload()) {
  const Scenario& scenario = *run.system;
  if (!offload_) return;
  if (access_model_ == nullptr) throw InternalError("OffloadSource: an offload run without its access model");
  const auto& c = scenario.cache;
  const std::int64_t top_k = scenario.model.indexer->top_k;
  CacheSimConfig cc;
  cc.layers = builder.layer_count();
  cc.top_k = top_k;
  cc.sampled_requests = static_cast<int>(c.sampled_requests);
  cc.warmup_windows = static_cast<int>(c.warmup_windows);
  if (c.pool_ratio) cc.capacity_ratio = *c.pool_ratio;
  if (c.pool_entries) cc.capacity_entries = *c.pool_entries;
  cc.pinned_recent = c.pinned_recent;
  cc.policy = c.eviction;
  if (registered(prefetch_policies(), "prefetch", c.prefetch.policy).make()->prefetches()) {
    cc.predictor = c.prefetch.predictor;
    cc.prefetch_budget = c.prefetch.buffer_entries;
    cc.predictor_seed = predictor_seed(scenario.seed);
    cc.predictor_model = c.prefetch.model;
  }
  cc.eviction_params = c.eviction_params;
  if (!store_.empty() && !access_model_->store_key().empty()) {
    store_key_ = access_store_key(cc, *access_model_, builder, steps);
    stored_ = load_access_steps(store_, store_key_, static_cast<std::size_t>(steps),
                                static_cast<std::size_t>(builder.layer_count()));
  }
  if (!stored_) {
    cache_sim_ = std::make_unique<CacheSimulator>(cc, *access_model_);
    pipeline_ = std::make_unique<AccessPipeline>(*cache_sim_, builder, steps);
  }
}

PlanCache::AccessSource OffloadSource::access() {
  if (!offload_) return {};
  if (stored_) return [this](int step, std::int64_t) { return (*stored_)[static_cast<std::size_t>(step)]; };
  return [this](int step, std::int64_t) {
    auto layers = pipeline_->next(step);
    if (!store_key_.empty()) computed_.push_back(layers);
    return layers;
  };
}

std::string OffloadSource::finish(std::int64_t steps) {
  if (store_key_.empty()) return "";
  if (!stored_ && computed_.size() == static_cast<std::size_t>(steps)) store_access_steps(store_, store_key_, computed_);
  return stored_ ? "read" : "written";
}

}  // namespace ess
