// Prefetch in the engine (sim/offload/prefetch.h): on a hand-sized model whose misses are known, a
// perfect predictor hides every fetch its buffer allows, a useless one is no better than on-demand
// and costs exactly its wasted bytes, and tiered prefetch never delays an on-demand fetch.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sim/engine/simulation.h"
#include "sim/metrics/results.h"
#include "sim/offload/access_trace.h"
#include "tests/engine/test_scenarios.h"
#include "tests/engine/first_four_access.h"

namespace {

constexpr int kLayers = 4;
constexpr double kEntry = 656.0;

// Every request selects entries 0..3 of its context in every layer and step.
using ess::test::FirstFour;

std::string write_prefetch_trace() {
  const auto path = std::filesystem::temp_directory_path() / "ess-sim-prefetch-engine-test.trace";
  FirstFour model;
  ess::write_access_trace(path, model, kLayers, 1, 4, {{0, 8}});
  return path.string();
}

// Four MLA layers with a top-4 indexer, one request on one overhead-only GPU (every kernel 10 us),
// 8 cached tokens, one step from an empty pool: every layer misses its 4 selected entries
// (4 x 656 B). A gather of b bytes takes 1 us + b / 25 GB/s, far less than the 30 us of indexer
// kernels between two layers' prefetch points.
nlohmann::json scenario(const std::string& overlap, const nlohmann::json& prefetch) {
  nlohmann::json model = ess::test::one_layer_mla_model();
  model["layers"] = kLayers;
  nlohmann::json cache = {{"mode", "offload"}, {"pool_entries", 4}, {"overlap", overlap}, {"transfer", "gather"},
                          {"sampled_requests", 1}, {"warmup_windows", 0},
                          {"access", {{"model", "replay"}, {"file", write_prefetch_trace()}}}};
  if (!prefetch.is_null()) cache["prefetch"] = prefetch;
  return {{"model", model},
          {"hardware", ess::test::overhead_only_hardware(1)},
          {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 1}}},
          {"cache", cache}};
}

struct Outcome {
  double step = 0.0;
  nlohmann::ordered_json offload;  // summary.offload
  ess::RunResult result;
};

Outcome run(const std::string& overlap, const nlohmann::json& prefetch) {
  const auto s = ess::test::load(scenario(overlap, prefetch));
  Outcome o;
  o.result = ess::Simulation(s, {}).run();
  o.step = o.result.step_time.at(0);
  o.offload = ess::results_json(s, o.result, "test", "0")["summary"]["offload"];
  return o;
}

nlohmann::json layer_ahead(const std::string& predictor, int buffer) {
  return {{"policy", "layer-ahead"}, {"predictor", predictor}, {"lookahead", 1}, {"buffer_entries", buffer}};
}

}  // namespace

TEST_CASE("layer-ahead with a perfect predictor hides all the transfer its buffer allows") {
  const Outcome on_demand = run("serial", nullptr);
  CHECK(on_demand.offload["exposed_s"].get<double>() > 0.0);  // serial: every fetch is exposed

  // A buffer for every miss: nothing is fetched on demand and no prefetch is late.
  const Outcome full = run("serial", layer_ahead("oracle", 4));
  const auto& pf = full.offload["prefetch"];
  CHECK(pf["accuracy"].get<double>() == 1.0);
  CHECK(pf["coverage"].get<double>() == 1.0);
  CHECK(pf["on_demand_bytes_per_step"].get<double>() == 0.0);
  CHECK(pf["prefetch_bytes_per_step"].get<double>() == kLayers * 4 * kEntry);
  CHECK(pf["exposed_s"].get<double>() == 0.0);
  CHECK(pf["late"].get<int>() == 0);
  CHECK(full.offload["exposed_s"].get<double>() == 0.0);
  CHECK(full.step < on_demand.step);

  // Half the misses fit the buffer: exactly the other half is fetched on demand. With priorities
  // (tiered) each on-demand fetch of 2 entries takes 1 us + 1,312 B / 25 GB/s = 1.05248 us, exposed
  // in full under serial overlap; the prefetches stay hidden.
  nlohmann::json half_settings = layer_ahead("oracle", 2);
  half_settings["policy"] = "tiered";
  const Outcome half = run("serial", half_settings);
  const auto& hp = half.offload["prefetch"];
  CHECK(hp["coverage"].get<double>() == 0.5);
  CHECK(hp["on_demand_bytes_per_step"].get<double>() == kLayers * 2 * kEntry);
  CHECK(hp["exposed_s"].get<double>() == 0.0);
  CHECK(half.offload["exposed_s"].get<double>() == Approx(kLayers * 1.05248e-6).epsilon(1e-6));
  CHECK(full.step < half.step);
  // (Not faster than on-demand here: hiding 4 x 0.05 us of exposed fetch costs the compute beside the
  // four prefetch gathers 25% of the SMs for 4 x 1.05 us.)
  // One shared queue: each on-demand fetch also waits for the next layer's prefetch issued just
  // before it (layers 0 to 2), so it exposes more than with priorities.
  const Outcome half_shared = run("serial", layer_ahead("oracle", 2));
  CHECK(half_shared.offload["exposed_s"].get<double>() ==
        Approx(kLayers * 1.05248e-6 + 3 * 1.05248e-6).epsilon(1e-6));
}

TEST_CASE("layer-ahead with a useless predictor is no better than on-demand and costs exactly the wasted bytes") {
  for (const std::string overlap : {"serial", "da"}) {
    INFO(overlap);
    const Outcome on_demand = run(overlap, nullptr);
    const Outcome useless = run(overlap, layer_ahead("adversarial", 2));
    const auto& pf = useless.offload["prefetch"];
    CHECK(pf["accuracy"].get<double>() == 0.0);
    CHECK(pf["coverage"].get<double>() == 0.0);
    CHECK(useless.offload["misses_per_request_per_step"] == on_demand.offload["misses_per_request_per_step"]);
    // Every on-demand byte is still fetched, plus the two wrong entries per layer.
    CHECK(pf["on_demand_bytes_per_step"].get<double>() == on_demand.offload["h2d_bytes_per_step"].get<double>());
    CHECK(pf["wasted_bytes_per_step"].get<double>() == kLayers * 2 * kEntry);
    CHECK(useless.offload["h2d_bytes_per_step"].get<double>() ==
          on_demand.offload["h2d_bytes_per_step"].get<double>() + kLayers * 2 * kEntry);
    CHECK(useless.step >= on_demand.step);
  }
}

TEST_CASE("tiered prefetch never delays an on-demand fetch behind a prefetch, and one shared queue does") {
  const Outcome on_demand = run("serial", nullptr);
  // The useless predictor keeps the on-demand fetches those of on-demand (4 entries per layer).
  const Outcome shared = run("serial", layer_ahead("adversarial", 2));
  nlohmann::json tiered_settings = layer_ahead("adversarial", 2);
  tiered_settings["policy"] = "tiered";
  const Outcome tiered = run("serial", tiered_settings);

  // One FIFO queue: layer l's on-demand fetch waits behind the prefetch of layer l + 1, issued
  // just before it (1 us + 1,312 B / 25 GB/s = 1.05248 us each, for layers 0, 1 and 2).
  CHECK(shared.offload["prefetch"]["on_demand_queue_s"].get<double>() == Approx(3 * 1.05248e-6).epsilon(1e-6));
  // Priorities: never queued, and each on-demand fetch takes exactly as long as with no prefetch at all.
  CHECK(tiered.offload["prefetch"]["on_demand_queue_s"].get<double>() == 0.0);
  for (int l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK(tiered.result.layers[static_cast<std::size_t>(l)].transfer ==
          Approx(on_demand.result.layers[static_cast<std::size_t>(l)].transfer).epsilon(1e-9));
    CHECK(tiered.result.layers[static_cast<std::size_t>(l)].fetch_queue_wait == 0.0);
    // Preempted prefetches still move all their bytes: each takes at least its uncontended time.
    if (l > 0) CHECK(tiered.result.layers[static_cast<std::size_t>(l)].prefetch_transfer >= 1.05248e-6 * (1 - 1e-9));
  }
  CHECK(tiered.offload["exposed_s"].get<double>() == Approx(on_demand.offload["exposed_s"].get<double>()).epsilon(1e-9));
  CHECK(tiered.step < shared.step);
}

TEST_CASE("prefetch settings are refused where they mean nothing, and the buffer is in the memory budget") {
  nlohmann::json doc = scenario("serial", {{"policy", "on-demand"}, {"predictor", "oracle"}});
  CHECK_THROWS_WITH(ess::test::load(doc), Catch::Contains("/cache/prefetch/predictor") && Catch::Contains("has no effect"));
  doc = scenario("serial", {{"policy", "layer-ahed"}});
  CHECK_THROWS_WITH(ess::test::load(doc), Catch::Contains("layer-ahead"));
  doc = scenario("serial", layer_ahead("orcale", 2));
  CHECK_THROWS_WITH(ess::test::load(doc), Catch::Contains("oracle"));
  doc = scenario("serial", layer_ahead("oracle", 5));  // more than top-k (4)
  CHECK_THROWS_WITH(ess::test::load(doc), Catch::Contains("/cache/prefetch/buffer_entries"));

  const auto s = ess::test::load(scenario("serial", layer_ahead("oracle", 4)));
  const auto r = ess::Simulation(s, {}).run();
  bool found = false;
  for (const auto& line : r.memory.lines) {
    if (line.name != "prefetch_buffers") continue;
    found = true;
    // (lookahead 1 + 1) layers x 1 request x 4 entries x 656 B.
    CHECK(line.bytes.value() == 2 * 4 * kEntry);
  }
  CHECK(found);
}
