#include "sim/config/cache_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "sim/config/physical_ranges.h"
#include "sim/config/synthetic_locality.h"
#include "sim/offload/heat_model.h"

namespace ess {

namespace {

// The reader's range of a parameter a policy declares.
Range range_of(const PolicyParam& p) { return Range{p.low, p.high, !p.low_open, !p.high_open, true, true}; }

// Default staging buffer of a prefetching policy, entries per request and layer: above the misses
// per request and layer of most layers at 32K with SMR 0.2 (16.7 .. 605, sim/offload/README.md),
// a quarter of DeepSeek-V3.2-Exp's top-k.
constexpr std::int64_t kDefaultPrefetchBuffer = 512;
// Deepest lookahead accepted: a prefetch issued more layers ahead than this would hold its buffer
// through most of a step.
constexpr std::int64_t kMaxPrefetchLookahead = 8;

void read_prefetch(ObjectReader& cache, CacheConfig& c, const ModelConfig& model, const std::string& scenario_dir) {
  auto r = cache.object_or_empty("prefetch");
  c.prefetch.policy = r.choice_or("policy", registered_names(prefetch_policies()), std::string(kDefaultPrefetchPolicy));
  const auto policy = registered(prefetch_policies(), "prefetch", c.prefetch.policy).make();
  if (!policy->prefetches()) {
    for (const char* key : {"predictor", "lookahead", "buffer_entries", "model"}) {
      if (r.has(key)) r.fail(key, std::string("has no effect with prefetch policy \"") + c.prefetch.policy + "\", which prefetches nothing");
    }
    r.finish();
    return;
  }
  c.prefetch.predictor = r.choice_or("predictor", registered_names(prefetch_predictors()), std::string(kDefaultPredictor));
  const std::int64_t top_k = model.indexer ? model.indexer->top_k : kDefaultPrefetchBuffer;
  c.prefetch.lookahead = static_cast<int>(r.integer_or("lookahead", Range::closed(1, kMaxPrefetchLookahead), 1));
  c.prefetch.buffer_entries = r.integer_or("buffer_entries", Range::closed(1, static_cast<double>(top_k)), std::min(kDefaultPrefetchBuffer, top_k));
  // A trained predictor's model file (heat_model.h), relative to the scenario's folder like
  // cache.access.file; read here so that a bad model is an error of the scenario, not of the run.
  if (registered(prefetch_predictors(), "prefetch predictor", c.prefetch.predictor).make.reads_model_file) {
    const std::filesystem::path p(r.text("model"));
    c.prefetch.model = p.is_absolute() || scenario_dir.empty() ? p.string() : (std::filesystem::path(scenario_dir) / p).string();
    try {
      (void)load_heat_model(c.prefetch.model);
    } catch (const HeatModelError& e) {
      r.fail("model", e.what());
    }
  } else if (r.has("model")) {
    std::string readers;
    for (const auto& p : prefetch_predictors()) {
      if (p.make.reads_model_file) readers += (readers.empty() ? "\"" : ", \"") + std::string(p.name) + "\"";
    }
    r.fail("model", "only the prefetch predictors that read a model file (" + readers + ") take one; predictor \"" +
                        c.prefetch.predictor + "\" has none");
  }
  r.finish();
}

}  // namespace

CacheConfig read_cache(ObjectReader& r, const ModelConfig& model, int indexer_layers, const std::string& scenario_dir) {
  CacheConfig c;
  const std::string mode = r.choice_or("mode", {"gpu", "offload"}, "gpu");
  if (mode == "gpu") {
    r.finish();
    return c;
  }
  c.mode = CacheMode::offload;
  if (model.attention.kind != AttentionKind::mla) {
    r.fail("mode", "offload moves the MLA latent cache to host memory; " + model.name + " has GQA attention (no latent cache)");
  }
  if (!model.indexer) {
    r.fail("mode", "offload fetches the entries a lightning indexer selects; " + model.name +
                       " has no indexer (dense attention reads every entry every step)");
  }
  const bool ratio = r.has("pool_ratio");
  const bool entries = r.has("pool_entries");
  if (ratio == entries) {
    r.fail(ratio ? "pool_entries" : "pool_ratio",
           "offload needs the GPU pool size: exactly one of \"pool_ratio\" (a fraction of the context, the paper's "
           "SMR) or \"pool_entries\" (entries per request and layer)");
  }
  if (ratio) c.pool_ratio = r.number("pool_ratio", Range::left_open(0.0, 1.0));
  if (entries) c.pool_entries = r.integer("pool_entries", Range::closed(1, kMaxContextLength));
  c.pinned_recent = r.integer_or("pinned_recent", Range::closed(0, kMaxContextLength), 0);
  c.eviction = r.choice_or("eviction", registered_names(eviction_policies()), std::string(kDefaultEviction));
  for (const PolicyParam* p : declared_params(eviction_policies())) {
    c.eviction_params.set(p->name, r.number_or(p->name, range_of(*p), p->default_value));
  }
  c.transfer = r.choice_or("transfer", {"gather", "copy"}, "gather") == "gather" ? TransferPath::gather : TransferPath::copy;
  c.overlap = r.choice_or("overlap", registered_names(overlap_policies()), std::string(kDefaultOverlap));
  {
    auto a = r.object_or_empty("access");
    c.access.model = a.choice_or("model", registered_names(access_models()), std::string(kDefaultAccessModel));
    if (access_model_reads_file(c.access.model)) {
      const std::string file = a.text("file");
      const std::filesystem::path p(file);
      c.access.file = p.is_absolute() || scenario_dir.empty() ? file : (std::filesystem::path(scenario_dir) / p).string();
      for (const char* key : kSyntheticLocalityKeys) {
        if (a.has(key)) a.fail(key, "has no effect with access model \"" + c.access.model + "\" (the selections are recorded)");
      }
    } else {
      c.access.synthetic = read_synthetic_locality(a, indexer_layers);
    }
    a.finish();
  }
  read_prefetch(r, c, model, scenario_dir);
  c.sampled_requests = r.integer_or("sampled_requests", Range::closed(1, 4096), 8);
  c.warmup_windows = r.integer_or("warmup_windows", Range::closed(0, 4096), 32);
  c.host_memory_threshold = r.number_or("host_memory_threshold", Range::left_open(0.0, 1.0), 0.9);
  if (r.has("nvme")) {
    auto n = r.object("nvme");
    c.nvme = NvmeConfig{n.bytes("capacity", capacity()), n.bandwidth("bandwidth", link_bandwidth()),
                        n.seconds("latency", storage_latency())};
    n.finish();
  }
  r.finish();
  return c;
}

std::string_view to_string(TransferPath t) { return t == TransferPath::gather ? "gather" : "copy"; }

std::int64_t CacheConfig::pool_capacity(std::int64_t context) const {
  if (pool_entries) return std::min(*pool_entries, context);
  if (pool_ratio) return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(*pool_ratio * static_cast<double>(context))));
  return context;
}

}  // namespace ess
