// The learned predictor's heat model (sim/offload/heat_model.h, heat_training.h): its features on a
// history small enough to compute by hand, the logistic fit on samples with a known rule, the
// scores against hand counts, the model file's round trip and its errors, and the predictor in a
// cache simulation.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "sim/base/rng.h"
#include "sim/offload/cache_sim.h"
#include "sim/offload/gpu_pool.h"
#include "sim/offload/heat_model.h"
#include "sim/offload/heat_training.h"
#include "sim/offload/synthetic_access.h"
#include "tests/scratch_dir.h"
#include "sim/base/error.h"

namespace {

constexpr double kDecay = ess::kHeatDecayPerStep;

ess::HeatModel example_model() {
  ess::HeatModel m;
  m.mean = {0.1, 2.0, 9.5, 0.01, 0.3};
  m.scale = {0.2, 1.5, 2.25, 0.1, 0.46};
  m.weight = {0.5, -0.25, -1.0, 0.125, 0.75};
  m.bias = -3.5;
  m.threshold = 0.05;
  auto& p = m.provenance;
  p.tool = "ess-sim test";
  p.traces.push_back({"a.esstrace", std::string(64, 'a'), 61, 4, 2048, 32, 24, 5});
  p.holdout = 0.2;
  p.budget = 512;
  p.pool_ratio = 0.21;
  p.seed = 7;
  p.l2 = 1.0;
  p.negative_keep = 0.25;
  p.train_samples = 1000;
  p.train_positives = 40;
  p.iterations = 9;
  p.train_metrics = {10, 100, 7, 70};
  p.holdout_metrics = {3, 30, 3, 25};
  p.hot_window_metrics = {3, 60, 1, 25};
  p.random_metrics = {3, 30, 0, 25};
  p.candidate_recall = 0.4;
  return m;
}

std::string write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace

TEST_CASE("heat model: the features of a tiny history, computed by hand") {
  ess::HeatHistory h;
  const std::vector<std::int64_t> first{5, 9};
  const std::vector<std::int64_t> second{5};
  h.observe(1, first);
  h.observe(3, second);
  // Position 5: fetched at steps 1 and 3; before step 4 its heat is (0.8^2 + 1) x 0.8^1.
  const auto f5 = h.features(5, 4, 20, false);
  CHECK(f5[0] == Approx((kDecay * kDecay + 1.0) * kDecay));
  CHECK(f5[1] == Approx(std::log2(1.0 + 1.0)));  // 1 step since its last fetch
  CHECK(f5[2] == Approx(std::log2(15.0)));       // context 20 - position 5
  CHECK(f5[3] == 0.0);
  CHECK(f5[4] == 1.0);
  // Position 9: fetched at step 1 only, the previous layer fetched it now.
  const auto f9 = h.features(9, 4, 20, true);
  CHECK(f9[0] == Approx(kDecay * kDecay * kDecay));
  CHECK(f9[1] == Approx(std::log2(1.0 + 3.0)));
  CHECK(f9[2] == Approx(std::log2(11.0)));
  CHECK(f9[3] == 1.0);
  CHECK(f9[4] == 1.0);
  // Never fetched: no heat, the saturated recency, not ever fetched. The newest token: distance 0.
  const auto f19 = h.features(19, 4, 20, false);
  CHECK(f19 == ess::HeatFeatures{0.0, std::log2(1.0 + ess::kHeatHistorySteps), 0.0, 0.0, 0.0});
  std::vector<std::int64_t> recent;
  h.recent(4, recent);
  CHECK(recent == std::vector<std::int64_t>{5, 9});
  // kHeatHistorySteps later position 9 is forgotten (not recent, no heat) but still ever fetched.
  h.observe(1 + ess::kHeatHistorySteps, {});
  recent.clear();
  h.recent(2 + ess::kHeatHistorySteps, recent);
  CHECK(recent == std::vector<std::int64_t>{5});
  const auto later = h.features(9, 2 + ess::kHeatHistorySteps, 100, false);
  CHECK(later[0] == 0.0);
  CHECK(later[4] == 1.0);
}

TEST_CASE("heat model: the candidates are the history, the previous layer's fetches and the newest, none on the GPU") {
  ess::GpuPool pool(ess::PoolConfig{4, 0, "lru", {}});
  ess::HeatState state(2, 1);
  // Layer 0 fetches 10, 11, 12, 13 at step 0, then 20, 21, 22, 23 at step 1 (evicting 10..13).
  std::vector<std::int64_t> missed;
  (void)pool.access({10, 11, 12, 13}, 30, 0, &missed);
  state.observe({0, 0, 0, 30, missed});
  (void)pool.access({20, 21, 22, 23}, 31, 1, &missed);
  state.observe({1, 0, 0, 31, missed});
  // Layer 1 of the same request at step 2 (its pool is another): layer 0's step-2 fetches count.
  ess::GpuPool pool1(ess::PoolConfig{4, 0, "lru", {}});
  (void)pool1.access({0, 1, 2, 3}, 32, 0, &missed);
  ess::HeatState state1(2, 1);
  (void)pool.access({5, 20, 21, 22}, 32, 2, &missed);  // layer 0, step 2: fetches 5
  state1.observe({2, 0, 0, 32, missed});
  ess::PredictionInput in;
  in.step = 2;
  in.layer = 1;
  in.request = 0;
  in.context = 32;
  in.budget = 3;
  in.pool = &pool1;
  std::vector<std::int64_t> positions;
  std::vector<ess::HeatFeatures> features;
  state1.candidates(in, 3, positions, features);
  // The previous layer's 5 and the 3 newest positions not in pool1 (29, 30, 31).
  CHECK(positions == std::vector<std::int64_t>{5, 29, 30, 31});
  REQUIRE(features.size() == 4);
  CHECK(features[0][3] == 1.0);
  CHECK(features[1][3] == 0.0);
  // Layer 0's own history at step 2: 10..13 were fetched and evicted (candidates), 20..23 are in the pool.
  ess::GpuPool pool0(ess::PoolConfig{4, 0, "lru", {}});
  (void)pool0.access({10, 11, 12, 13}, 30, 0, &missed);
  (void)pool0.access({20, 21, 22, 23}, 31, 1, &missed);
  in.layer = 0;
  in.pool = &pool0;
  state.candidates(in, 2, positions, features);
  CHECK(positions == std::vector<std::int64_t>{10, 11, 12, 13, 30, 31});
  CHECK(features[0][0] == Approx(kDecay * kDecay));
  CHECK(features[4][0] == 0.0);
}

TEST_CASE("heat model: the logistic fit recovers a known separable rule") {
  ess::Rng rng(11);
  std::vector<ess::HeatSample> samples;
  for (int i = 0; i < 4000; ++i) {
    ess::HeatSample s;
    for (auto& x : s.x) x = rng.uniform();
    s.label = s.x[2] < 0.3;  // only feature 2 matters, negatively
    samples.push_back(s);
  }
  const ess::LogisticFit fit = ess::fit_logistic(samples, 1e-3);
  CHECK(fit.weight[2] < -5.0);
  for (const std::size_t other : {0U, 1U, 3U, 4U}) CHECK(std::abs(fit.weight[other]) < std::abs(fit.weight[2]) / 10.0);
  ess::HeatModel m;
  m.mean = fit.mean;
  m.scale = fit.scale;
  m.weight = fit.weight;
  m.bias = fit.bias;
  int right = 0;
  for (const auto& s : samples) right += (m.probability(s.x) >= 0.5) == s.label ? 1 : 0;
  CHECK(right >= 3960);  // 99%
  // The same samples give the same bits.
  const ess::LogisticFit again = ess::fit_logistic(samples, 1e-3);
  CHECK(again.weight == fit.weight);
  CHECK(again.bias == fit.bias);
  CHECK_THROWS_AS(ess::fit_logistic({}, 1.0), ess::InternalError);
  CHECK_THROWS_AS(ess::fit_logistic(samples, -1.0), ess::InternalError);
}

TEST_CASE("heat model: precision, recall and F1 against a hand count, and ranking by probability within the budget") {
  const ess::HeatMetrics m{2, 10, 4, 16};
  CHECK(m.precision() == Approx(0.4));
  CHECK(m.recall() == Approx(0.25));
  CHECK(m.f1() == Approx(2.0 * 0.4 * 0.25 / 0.65));
  const ess::HeatMetrics none{1, 0, 0, 5};
  CHECK(none.precision() == 0.0);
  CHECK(none.recall() == 0.0);
  CHECK(none.f1() == 0.0);

  ess::HeatModel model;
  model.threshold = 0.3;
  const std::vector<std::int64_t> positions{2, 4, 6, 8, 10};
  const std::vector<double> p{0.9, 0.2, 0.5, 0.5, 0.35};
  std::vector<std::int64_t> out;
  ess::heat_rank(model, positions, p, 2, out);
  CHECK(out == std::vector<std::int64_t>{2, 8});  // 0.9, then the tie 0.5 goes to the newer 8
  ess::heat_rank(model, positions, p, 10, out);
  CHECK(out == std::vector<std::int64_t>{2, 6, 8, 10});  // 0.2 fails the threshold
  model.threshold = 1.0;
  ess::heat_rank(model, positions, p, 10, out);
  CHECK(out.empty());  // threshold 1: nothing
}

TEST_CASE("heat model: the model file round-trips byte for byte") {
  const ess::HeatModel m = example_model();
  const std::string text = ess::heat_model_json(m);
  const ess::HeatModel back = ess::parse_heat_model(text, "m.json");
  CHECK(back.weight == m.weight);
  CHECK(back.mean == m.mean);
  CHECK(back.scale == m.scale);
  CHECK(back.bias == m.bias);
  CHECK(back.threshold == m.threshold);
  CHECK(back.provenance.traces.size() == 1);
  CHECK(back.provenance.holdout_metrics.used == 3);
  CHECK(ess::heat_model_json(back) == text);
  CHECK(text.find("\"schema\": \"ess-sim/heat-model/v1\"") != std::string::npos);
}

TEST_CASE("heat model: a bad model file fails naming the file, the JSON path and the expectation") {
  ess::test::ScratchDir dir("heat-model");
  const std::string good = ess::heat_model_json(example_model());
  const auto bad = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return write(dir.path() / "bad.json", text);
  };
  const auto fails = [](const std::string& file, const std::string& pointer, const std::string& words) {
    INFO(pointer);
    CHECK_THROWS_WITH(ess::load_heat_model(file), Catch::Contains("bad.json: " + pointer) && Catch::Contains(words));
  };
  CHECK_THROWS_WITH(ess::load_heat_model(dir.path() / "missing.json"),
                    Catch::Contains("missing.json") && Catch::Contains("no such file"));
  fails(write(dir.path() / "bad.json", "{\"schema\": "), "", "not valid JSON");
  fails(bad("ess-sim/heat-model/v1", "ess-sim/heat-model/v2"), "/schema", "ess-sim/heat-model/v1");
  fails(bad("\"fetch_heat\"", "\"heat\""), "/features/0", "fetch_heat");
  fails(bad("\"decay_per_step\": 0.8", "\"decay_per_step\": 0.9"), "/decay_per_step", "retrain");
  fails(bad("\"weights\": [\n    0.5,", "\"weights\": ["), "/weights", "expected 5 elements, got 4");
  fails(bad("\"weights\": [\n    0.5,\n    -0.25,\n    -1.0", "\"weights\": [\n    0.5,\n    -0.25,\n    \"x\""), "/weights/2",
        "expected a finite number, got the string \"x\"");
  fails(bad("0.2,\n      1.5", "0.2,\n      0.0"), "/normalisation/scale/1", "> 0");
  fails(bad("\"threshold\": 0.05", "\"threshold\": 1.5"), "/threshold", "[0.0, 1.0]");
  fails(bad("\"bias\": -3.5", "\"bias\": -3.5, \"extra\": 1"), "/extra", "unknown key");
  fails(bad("\"bias\": -3.5,", ""), "", "missing key \"bias\"");
  fails(bad("\"used\": 3", "\"used\": 31"), "/training/metrics/holdout/used", "[0, 30]");
  fails(bad("\"sha256\": \"aaaa", "\"sha256\": \"AAAA"), "/training/traces/0/sha256", "hexadecimal");
}

TEST_CASE("heat model: the learned predictor runs in a cache simulation, and a threshold of 1 predicts nothing") {
  ess::test::ScratchDir dir("heat-learned");
  ess::HeatModel m = example_model();
  m.threshold = 0.0;  // predicts its full budget
  const auto model_file = write(dir.path() / "m.json", ess::heat_model_json(m));
  m.threshold = 1.0;
  const auto silent_file = write(dir.path() / "silent.json", ess::heat_model_json(m));
  ess::SyntheticAccessParams params;
  params.layers = 3;
  params.top_k = 64;
  params.recent_window = 8;
  for (const auto& [file, silent] : {std::pair{model_file, false}, std::pair{silent_file, true}}) {
    ess::SyntheticAccess model(params);
    ess::CacheSimConfig c;
    c.layers = 3;
    c.top_k = 64;
    c.sampled_requests = 2;
    c.warmup_windows = 4;
    c.capacity_ratio = 0.2;
    c.predictor = "learned";
    c.prefetch_budget = 16;
    c.predictor_model = file;
    ess::CacheSimulator sim(c, model);  // the simulator checks every prediction's contract
    sim.warm_up(600);
    const auto stats = sim.steps({0, 1, 2, 3, 4}, {600, 601, 602, 603, 604});
    for (const auto& s : stats) {
      for (const auto& l : s.layers) {
        if (silent) {
          CHECK(l.prefetched_mean == 0.0);
        } else {
          CHECK(l.prefetched_mean == 16.0);
        }
        CHECK(l.prefetch_used_mean <= l.prefetched_mean);
      }
    }
  }
  ess::CacheSimConfig c;
  c.layers = 3;
  c.top_k = 64;
  c.capacity_ratio = 0.2;
  c.predictor = "learned";
  c.prefetch_budget = 16;
  ess::SyntheticAccess model(params);
  CHECK_THROWS_WITH(ess::CacheSimulator(c, model), Catch::Contains("cache.prefetch.model"));
}
