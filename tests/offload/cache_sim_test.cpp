#include "sim/offload/cache_sim.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/offload/access_trace.h"
#include "sim/offload/synthetic_access.h"
#include "sim/base/error.h"

using ess::CacheSimConfig;
using ess::CacheSimulator;
using ess::CacheStepStats;
using ess::SyntheticAccess;
using ess::SyntheticAccessParams;
using Positions = std::vector<std::int64_t>;

namespace {

// Request r selects the fixed positions 0 .. 3-r and r new ones, 10 (step + 10) + j for j < r:
// after its first step it has exactly r misses per step, in one run.
struct Scripted final : ess::AccessModel {
  void select(int step, int, int request, std::int64_t, Positions& out) override {
    out.clear();
    for (int i = 0; i < 4 - request; ++i) out.push_back(i);
    for (int j = 0; j < request; ++j) out.push_back(10 * (step + 10) + j);
  }
};

CacheSimConfig scripted_config() {
  CacheSimConfig c;
  c.layers = 2;
  c.top_k = 4;
  c.sampled_requests = 4;
  c.warmup_windows = 0;
  c.capacity_entries = 1000;
  return c;
}

// Per-layer mean misses per request, averaged over `steps` decode steps after the warm-up, with
// the context growing by one token per step.
std::vector<double> layer_means(const SyntheticAccessParams& params, const CacheSimConfig& config,
                                std::int64_t context, int steps) {
  SyntheticAccess model(params);
  CacheSimulator sim(config, model);
  sim.warm_up(context);
  std::vector<double> sum(static_cast<std::size_t>(config.layers), 0.0);
  for (int s = 0; s < steps; ++s) {
    const CacheStepStats stats = sim.step(s, context + s);
    for (std::size_t l = 0; l < sum.size(); ++l) sum[l] += stats.layers[l].misses_mean / steps;
  }
  return sum;
}

// The paper (arXiv 2512.10576): at 32K context and a pool of 0.2 x context, mean misses per request
// per layer range from 16.7 (best layer) to 605 (worst layer). Accepted: best in [10, 30], worst in
// [450, 750].
bool in_published_range(const std::vector<double>& means) {
  const double best = *std::min_element(means.begin(), means.end());
  const double worst = *std::max_element(means.begin(), means.end());
  return best >= 10.0 && best <= 30.0 && worst >= 450.0 && worst <= 750.0;
}

CacheSimConfig paper_config(int layers, int requests) {
  CacheSimConfig c;
  c.layers = layers;
  c.top_k = 2048;
  c.sampled_requests = requests;
  c.warmup_windows = 32;
  c.capacity_ratio = 0.2;
  return c;
}

}  // namespace

TEST_CASE("per-layer statistics over the sample, worked by hand") {
  Scripted model;
  CacheSimulator sim(scripted_config(), model);
  // Step 0: the pools are cold, every request misses all 4.
  CacheStepStats s0 = sim.step(0, 1000);
  CHECK(s0.step == 0);
  CHECK(s0.context == 1000);
  CHECK(s0.capacity == 1000);
  REQUIRE(s0.layers.size() == 2);
  CHECK(s0.layers[0].misses_mean == 4.0);
  CHECK(s0.layers[0].misses_stderr == 0.0);
  // Step 1: misses 0, 1, 2, 3: mean 1.5, sample sd sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3)
  // = 1.290994, stderr = sd / sqrt(4) = 0.645497. Hits 4, 3, 2, 1; runs 0, 1, 1, 1.
  CacheStepStats s1 = sim.step(1, 1000);
  for (const ess::LayerStats& l : s1.layers) {
    CHECK(l.requests == 4);
    CHECK(l.misses_mean == 1.5);
    CHECK(l.misses_stderr == Approx(0.645497).margin(1e-6));
    CHECK(l.hits_mean == 2.5);
    CHECK(l.runs_mean == 0.75);
    CHECK(l.evictions_mean == 0.0);
  }
}

TEST_CASE("evictions per request, worked by hand") {
  // Capacity 5. After step 0 every pool holds its 4 entries. At step 1 request r brings r new ones:
  // evictions max(0, 4 + r - 5) = 0, 0, 1, 2: mean 0.75.
  Scripted model;
  CacheSimConfig c = scripted_config();
  c.capacity_entries = 5;
  CacheSimulator sim(c, model);
  sim.step(0, 1000);
  CHECK(sim.step(1, 1000).layers[1].evictions_mean == 0.75);
}

TEST_CASE("warm-up fills the pools without counting") {
  // Two warm-up windows (steps -2, -1) put the fixed positions in; step 0 then misses only the r
  // new positions: mean 1.5 instead of 4.
  Scripted model;
  CacheSimConfig c = scripted_config();
  c.warmup_windows = 2;
  CacheSimulator sim(c, model);
  sim.warm_up(1000);
  CHECK(sim.pool(0, 3).in_pool(0));
  CHECK(sim.pool(0, 3).in_pool(10 * (-1 + 10)));  // a new position of step -1
  CHECK(sim.step(0, 1000).layers[0].misses_mean == 1.5);
  CHECK_THROWS_AS(sim.warm_up(1001), ess::InternalError);
}

TEST_CASE("warm-up is refused after the first step") {
  Scripted model;
  CacheSimulator sim(scripted_config(), model);
  sim.step(0, 1000);
  CHECK_THROWS_AS(sim.warm_up(1000), ess::InternalError);
}

TEST_CASE("one sampled request has no standard error") {
  Scripted model;
  CacheSimConfig c = scripted_config();
  c.sampled_requests = 1;
  CacheSimulator sim(c, model);
  CHECK(std::isnan(sim.step(0, 1000).layers[0].misses_stderr));
}

TEST_CASE("the pool capacity follows the ratio or the fixed size, at least one selection") {
  Scripted model;
  CacheSimConfig c = scripted_config();
  c.top_k = 2048;
  c.capacity_entries = 0;
  c.capacity_ratio = 0.2;
  CHECK(CacheSimulator(c, model).capacity_at(32768) == 6554);   // ceil(6553.6)
  c.capacity_ratio = 0.1;
  CHECK(CacheSimulator(c, model).capacity_at(131072) == 13108);  // ceil(13107.2)
  c.capacity_ratio = 0.01;
  CHECK(CacheSimulator(c, model).capacity_at(100000) == 2048);  // 1000 raised to top_k
  CHECK(CacheSimulator(c, model).capacity_at(500) == 500);      // 5 raised to min(top_k, context)
  c.capacity_ratio = 0.0;
  c.capacity_entries = 3000;
  CHECK(CacheSimulator(c, model).capacity_at(1000) == 3000);
  c.capacity_entries = 10;
  c.pinned_recent = 64;
  CHECK(CacheSimulator(c, model).capacity_at(100) == 36);  // 36 positions outside the window
}

TEST_CASE("a simulator configuration out of range is refused") {
  Scripted model;
  using Change = void (*)(CacheSimConfig&);
  const std::vector<Change> changes{
      [](CacheSimConfig& c) { c.layers = 0; },
      [](CacheSimConfig& c) { c.top_k = 0; },
      [](CacheSimConfig& c) { c.sampled_requests = 0; },
      [](CacheSimConfig& c) { c.warmup_windows = -1; },
      [](CacheSimConfig& c) { c.capacity_entries = 0; },                        // neither
      [](CacheSimConfig& c) { c.capacity_ratio = 0.2; },                        // both
      [](CacheSimConfig& c) { c.capacity_entries = 0; c.capacity_ratio = -1; },  // negative
      [](CacheSimConfig& c) { c.capacity_entries = -4; },
      [](CacheSimConfig& c) { c.pinned_recent = -1; },
      [](CacheSimConfig& c) { c.eviction_params.set("heat_decay", 2.0); },
  };
  for (const Change change : changes) {
    CacheSimConfig c = scripted_config();
    change(c);
    CHECK_THROWS_AS(CacheSimulator(c, model), ess::InternalError);
  }
  CacheSimulator sim(scripted_config(), model);
  CHECK_THROWS_AS(sim.pool(2, 0), ess::InternalError);
  CHECK_THROWS_AS(sim.pool(0, 4), ess::InternalError);
}

TEST_CASE("scaling a per-request mean to a batch") {
  const ess::ScaledEstimate e = ess::scale(2.5, 0.5, 100);
  CHECK(e.total == 250.0);
  CHECK(e.std_error == 50.0);
  ess::LayerStats l;
  l.misses_mean = 17.0;
  l.misses_stderr = 1.5;
  CHECK(ess::scale_misses(l, 160).total == 2720.0);
  CHECK(ess::scale_misses(l, 160).std_error == 240.0);
  CHECK(ess::scale(3.0, 1.0, 0).total == 0.0);
  CHECK_THROWS_AS(ess::scale(1.0, 1.0, -1), ess::InternalError);
}

TEST_CASE("default synthetic access at 32K, pool 0.2 x context, spans the paper's per-layer misses") {
  // 61 layers, top_k 2048, LRU, warm-up of 32 windows; 4 requests over 4 steps.
  SyntheticAccessParams params;  // the defaults under test
  const std::vector<double> means = layer_means(params, paper_config(61, 4), 32768, 4);
  const double best = *std::min_element(means.begin(), means.end());
  const double worst = *std::max_element(means.begin(), means.end());
  INFO("best layer " << best << " (paper 16.7), worst layer " << worst << " (paper 605)");
  CHECK(best >= 10.0);
  CHECK(best <= 30.0);
  CHECK(worst >= 450.0);
  CHECK(worst <= 750.0);
  CHECK(in_published_range(means));
}

TEST_CASE("the published-range check fails for a profile without the paper's spread") {
  // Retention 0.9 everywhere: every layer misses about the same (~110), outside both ranges.
  SyntheticAccessParams flat;
  flat.layers = 4;
  flat.retention = {0.9, 0.9, 0.9, 0.9};
  const std::vector<double> means = layer_means(flat, paper_config(4, 2), 32768, 2);
  CHECK_FALSE(in_published_range(means));
}

TEST_CASE("misses fall as the context grows at a fixed pool ratio") {
  // The best and the worst default retentions, at 32K and 128K with a pool of 0.2 x context.
  SyntheticAccessParams params;
  params.layers = 2;
  params.retention = {0.984, 0.47};
  const std::vector<double> at32k = layer_means(params, paper_config(2, 8), 32768, 3);
  const std::vector<double> at128k = layer_means(params, paper_config(2, 8), 131072, 3);
  INFO("32K: " << at32k[0] << ", " << at32k[1] << "; 128K: " << at128k[0] << ", " << at128k[1]);
  CHECK(at128k[0] < at32k[0]);
  CHECK(at128k[1] < at32k[1]);
}

TEST_CASE("misses fall monotonically as the pool ratio grows") {
  SyntheticAccessParams params;
  params.layers = 6;
  params.top_k = 512;
  CacheSimConfig c = paper_config(6, 4);
  c.top_k = 512;
  c.warmup_windows = 8;
  double previous = 1e300;
  std::vector<double> totals;
  for (const double ratio : {0.07, 0.1, 0.15, 0.2, 0.3, 0.5}) {
    c.capacity_ratio = ratio;
    const std::vector<double> means = layer_means(params, c, 8192, 4);
    double total = 0.0;
    for (const double m : means) total += m;
    INFO("ratio " << ratio << ": " << total << " misses per request over all layers");
    CHECK(total <= previous);
    previous = total;
    totals.push_back(total);
  }
  INFO("totals from ratio 0.07 to 0.5: " << totals.front() << " .. " << totals.back());
  CHECK(totals.back() < 0.75 * totals.front());
}

TEST_CASE("LRU inclusion: a bigger pool holds a superset of a smaller one on the same trace") {
  // One recorded trace replayed into two simulators, pools of 600 and 900 entries.
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("ess-offload-inclusion-" + std::to_string(::getpid()) + ".bin");
  SyntheticAccessParams params;
  params.layers = 4;
  params.top_k = 256;
  params.retention = {0.95, 0.8, 0.6, 0.3};
  SyntheticAccess generator(params);
  std::vector<ess::TraceStep> steps;
  for (int s = -8; s < 12; ++s) steps.push_back({s, 4000 + s});
  ess::write_access_trace(file, generator, 4, 3, 256, steps);

  ess::ReplayAccess small_trace(file);
  ess::ReplayAccess big_trace(file);
  CacheSimConfig c;
  c.layers = 4;
  c.top_k = 256;
  c.sampled_requests = 3;
  c.warmup_windows = 8;
  c.capacity_entries = 600;
  CacheSimulator small(c, small_trace);
  c.capacity_entries = 900;
  CacheSimulator big(c, big_trace);
  small.warm_up(4000);
  big.warm_up(4000);
  bool some_difference = false;
  std::int64_t not_included = 0;
  for (int s = 0; s < 12; ++s) {
    const CacheStepStats a = small.step(s, 4000 + s);
    const CacheStepStats b = big.step(s, 4000 + s);
    for (int layer = 0; layer < 4; ++layer) {
      REQUIRE(b.layers[layer].misses_mean <= a.layers[layer].misses_mean);
      some_difference = some_difference || b.layers[layer].misses_mean < a.layers[layer].misses_mean;
      for (int r = 0; r < 3; ++r) {
        for (std::int64_t p = 0; p < 4000 + s; ++p) {
          if (small.pool(layer, r).in_pool(p) && !big.pool(layer, r).in_pool(p)) ++not_included;
        }
      }
    }
  }
  CHECK(not_included == 0);
  CHECK(some_difference);
  std::filesystem::remove(file);
}

namespace {

// Whether two independent estimates of each layer's mean agree within their standard errors:
// at least 80% of layers within 2 combined standard errors (95% expected) and all within 4.
bool consistent(const CacheStepStats& a, const CacheStepStats& b, double stderr_factor) {
  int within2 = 0;
  double worst = 0.0;
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const double se = stderr_factor * std::hypot(a.layers[l].misses_stderr, b.layers[l].misses_stderr);
    const double z = std::abs(a.layers[l].misses_mean - b.layers[l].misses_mean) / se;
    if (z < 2.0) ++within2;
    worst = std::max(worst, z);
  }
  return within2 >= 0.8 * static_cast<double>(a.layers.size()) && worst < 4.0;
}

CacheStepStats sampled(int requests, std::uint64_t seed) {
  SyntheticAccessParams params;
  params.layers = 20;
  params.top_k = 512;
  params.seed = seed;
  SyntheticAccess model(params);
  CacheSimConfig c = paper_config(20, requests);
  c.top_k = 512;
  c.warmup_windows = 8;
  CacheSimulator sim(c, model);
  sim.warm_up(8192);
  return sim.step(0, 8192);
}

}  // namespace

TEST_CASE("the standard error is honest: a larger independent sample agrees within it") {
  const CacheStepStats small = sampled(8, 1);
  const CacheStepStats large = sampled(64, 2);
  for (std::size_t l = 0; l < small.layers.size(); ++l) {
    CHECK(large.layers[l].misses_stderr < small.layers[l].misses_stderr);
  }
  CHECK(consistent(small, large, 1.0));
  // The check has teeth: standard errors ten times too small would fail it.
  CHECK_FALSE(consistent(small, large, 0.1));
}
