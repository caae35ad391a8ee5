// Prefetch predictors inside the cache simulation: what each registered predictor prefetches, what
// the selections then use, that a prefetch never changes the pools (common random numbers across
// prefetch policies), and that a predictor breaking its contract is caught.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/offload/cache_sim.h"
#include "sim/offload/prefetch.h"
#include "sim/offload/synthetic_access.h"

namespace {

ess::CacheSimConfig config(const std::string& predictor, std::int64_t budget) {
  ess::CacheSimConfig c;
  c.layers = 4;
  c.top_k = 64;
  c.sampled_requests = 3;
  c.warmup_windows = 4;
  c.capacity_ratio = 0.2;
  c.predictor = predictor;
  c.prefetch_budget = budget;
  return c;
}

ess::SyntheticAccessParams params() {
  ess::SyntheticAccessParams p;
  p.layers = 4;
  p.top_k = 64;
  p.recent_window = 8;
  return p;
}

std::vector<ess::CacheStepStats> run(ess::CacheSimulator& sim, int steps, std::int64_t context) {
  sim.warm_up(context);
  std::vector<int> ids;
  std::vector<std::int64_t> contexts;
  for (int s = 0; s < steps; ++s) {
    ids.push_back(s);
    contexts.push_back(context + s);
  }
  return sim.steps(ids, contexts);
}

// Every layer of a request selects the same entries at a step: the previous layer's misses are
// exactly this layer's (both pools see the same history).
class SameInEveryLayer final : public ess::AccessModel {
 public:
  void select(int step, int, int request, std::int64_t context, std::vector<std::int64_t>& out) override {
    out.clear();
    for (std::int64_t i = 0; i < 16 && i < context; ++i) out.push_back((step * 7 + request * 3 + i * 11) % context);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    while (static_cast<std::int64_t>(out.size()) < std::min<std::int64_t>(16, context)) {
      // Fill with positions not yet chosen (keeps exactly top_k unique entries).
      for (std::int64_t p = 0; p < context; ++p) {
        if (!std::binary_search(out.begin(), out.end(), p)) {
          out.insert(std::lower_bound(out.begin(), out.end(), p), p);
          break;
        }
      }
    }
  }
};

}  // namespace

TEST_CASE("prefetch: no predictor registry line is missing from the factories and names are unique") {
  std::vector<std::string> names;
  for (const auto& r : ess::prefetch_predictors()) {
    REQUIRE(r.make.create != nullptr);
    names.emplace_back(r.name);
  }
  for (const auto& r : ess::prefetch_policies()) {
    REQUIRE(r.make != nullptr);
    names.emplace_back(r.name);
  }
  auto sorted = names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  // Exactly one policy prefetches nothing: on-demand.
  int silent = 0;
  for (const auto& r : ess::prefetch_policies()) silent += r.make()->prefetches() ? 0 : 1;
  CHECK(silent == 1);
}

TEST_CASE("prefetch: each policy declares the link traffic the engine gives it") {
  const auto traffic = [](const char* name) { return ess::registered(ess::prefetch_policies(), "prefetch", name).make()->traffic(); };
  CHECK_FALSE(traffic("on-demand").prefetches);
  CHECK(traffic("layer-ahead").prefetches);
  CHECK_FALSE(traffic("layer-ahead").yields_to_on_demand);  // one FIFO queue with on-demand fetches
  CHECK(traffic("tiered").prefetches);
  CHECK(traffic("tiered").yields_to_on_demand);  // PCIe priorities
}

TEST_CASE("prefetch: a predictor changes no pool: hits, misses, runs and evictions are those without one") {
  ess::SyntheticAccess plain_model(params());
  ess::CacheSimulator plain(config("", 0), plain_model);
  const auto expected = run(plain, 6, 500);
  for (const auto& r : ess::prefetch_predictors()) {
    INFO(r.name);
    ess::SyntheticAccess model(params());
    ess::CacheSimConfig c = config(std::string(r.name), 16);
    // The learned predictor needs a trained model: the bundled one (heat_model_test.cpp tests it).
    if (r.make.reads_model_file) c.predictor_model = std::string(ESS_SOURCE_DIR) + "/scenarios/policies/heat-model-synthetic.json";
    ess::CacheSimulator sim(c, model);
    const auto got = run(sim, 6, 500);
    REQUIRE(got.size() == expected.size());
    for (std::size_t s = 0; s < got.size(); ++s) {
      for (std::size_t l = 0; l < got[s].layers.size(); ++l) {
        CHECK(got[s].layers[l].misses_mean == expected[s].layers[l].misses_mean);
        CHECK(got[s].layers[l].hits_mean == expected[s].layers[l].hits_mean);
        CHECK(got[s].layers[l].runs_mean == expected[s].layers[l].runs_mean);
        CHECK(got[s].layers[l].evictions_mean == expected[s].layers[l].evictions_mean);
        CHECK(got[s].layers[l].prefetch_used_mean <= got[s].layers[l].prefetched_mean);
        CHECK(got[s].layers[l].prefetched_mean <= 16.0);
      }
    }
  }
}

TEST_CASE("prefetch: the oracle prefetches exactly the coming misses up to its budget, the adversarial none of them") {
  for (const std::int64_t budget : {4, 16, 64}) {
    INFO("budget " << budget);
    ess::SyntheticAccess oracle_model(params());
    ess::CacheSimulator oracle(config("oracle", budget), oracle_model);
    ess::SyntheticAccess adversarial_model(params());
    ess::CacheSimulator adversarial(config("adversarial", budget), adversarial_model);
    const auto o = run(oracle, 5, 500);
    const auto a = run(adversarial, 5, 500);
    for (std::size_t s = 0; s < o.size(); ++s) {
      for (std::size_t l = 0; l < o[s].layers.size(); ++l) {
        const auto& ol = o[s].layers[l];
        // Per request min(misses, budget); a mean over requests is at most min(mean, budget).
        CHECK(ol.prefetch_used_mean == ol.prefetched_mean);
        CHECK(ol.prefetched_mean <= std::min(ol.misses_mean, static_cast<double>(budget)) + 1e-12);
        if (ol.misses_mean >= static_cast<double>(budget) * 3) CHECK(ol.prefetched_mean > 0.0);
        const auto& al = a[s].layers[l];
        CHECK(al.prefetch_used_mean == 0.0);
        // 500 positions, a pool of ~100 and 64 selected: a full budget of wrong entries is always there.
        CHECK(al.prefetched_mean == static_cast<double>(budget));
      }
    }
  }
}

namespace {

// SameInEveryLayer's top-16 in pools of 16 entries, no warm-up.
std::vector<ess::CacheStepStats> run_same_in_every_layer(const std::string& predictor, std::int64_t budget, int steps) {
  ess::CacheSimConfig c = config(predictor, budget);
  c.top_k = 16;
  c.warmup_windows = 0;
  c.capacity_entries = 16;
  c.capacity_ratio = 0.0;
  SameInEveryLayer model;
  ess::CacheSimulator sim(c, model);
  return run(sim, steps, 200);
}

}  // namespace

TEST_CASE("prefetch: previous-layer is exact when every layer selects the same entries, and silent in layer 0") {
  const auto stats = run_same_in_every_layer("previous-layer", 16, 5);
  for (const auto& step : stats) {
    CHECK(step.layers[0].prefetched_mean == 0.0);
    for (std::size_t l = 1; l < step.layers.size(); ++l) {
      CHECK(step.layers[l].prefetch_used_mean == step.layers[l].misses_mean);
      CHECK(step.layers[l].prefetched_mean == step.layers[l].misses_mean);
    }
  }
}

TEST_CASE("prefetch: hot-window predicts the newest positions not on the GPU") {
  const auto stats = run_same_in_every_layer("hot-window", 3, 2);
  // Three positions per request and layer at every step: the pool holds at most 16 of 200.
  for (const auto& step : stats) {
    for (const auto& l : step.layers) CHECK(l.prefetched_mean == 3.0);
  }
}

namespace {

// Breaks the contract in the way `fault` says.
class BadPredictor final : public ess::PrefetchPredictor {
 public:
  enum class Fault { over_budget, in_pool, descending, outside };
  explicit BadPredictor(Fault fault) : fault_(fault) {}
  void predict(const ess::PredictionInput& in, std::vector<std::int64_t>& out) override {
    out.clear();
    switch (fault_) {
      case Fault::over_budget:
        for (std::int64_t p = 0; p <= in.budget; ++p) out.push_back(in.context - 1 - in.budget + p);
        break;
      case Fault::in_pool:
        if (in.step >= 1) {
          for (std::int64_t p = 0; p < in.context; ++p) {
            if (in.pool->in_pool(p)) {
              out.push_back(p);
              break;
            }
          }
        }
        break;
      case Fault::descending: out = {in.context - 1, in.context - 2}; break;
      case Fault::outside: out = {in.context}; break;
    }
  }

 private:
  Fault fault_;
};

}  // namespace

TEST_CASE("prefetch: a predictor breaking its contract stops the simulation with what it did") {
  using F = BadPredictor::Fault;
  for (const auto& [fault, what] : std::vector<std::pair<F, const char*>>{
           {F::over_budget, "over a budget of 2"}, {F::in_pool, "not in the pool"}, {F::descending, "ascending"}, {F::outside, "in [0, context)"}}) {
    INFO(what);
    ess::SyntheticAccess model(params());
    ess::CacheSimulator sim(config("", 2), model, std::make_unique<BadPredictor>(fault));
    CHECK_THROWS_WITH(run(sim, 3, 500), Catch::Contains(what) && Catch::Contains("(given)"));
  }
  ess::SyntheticAccess model(params());
  CHECK_THROWS_WITH(ess::CacheSimulator(config("oracle", 2), model, std::make_unique<BadPredictor>(F::outside)),
                    Catch::Contains("names another"));
  CHECK_THROWS_WITH(ess::CacheSimulator(config("crystal-ball", 2), model), Catch::Contains("unknown prefetch predictor"));
  CHECK_THROWS_WITH(ess::CacheSimulator(config("oracle", 0), model), Catch::Contains("prefetch_budget must be >= 1"));
}
