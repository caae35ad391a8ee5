// The engine's MoE dispatch and combine agree with the ExpertAlltoall model (models/alltoall.h)
// when routing is near-uniform, so that `ess-sim cost dispatch|combine` and a simulation cannot
// drift apart silently: a change to the bytes the decode-step builder sends, to the platform's
// port links or to run_collective shows up here as a disagreement.
//
// 2048 tokens x top-8 of 64 experts per GPU = 16,384 copies: each GPU's per-peer counts vary by
// about 1% (sqrt(2048) / 2048), the sum over its peers by about 0.3%, so the mean dispatch over
// every GPU and step lies within kMeanTol of the model and every single GPU within kEachTol.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/alltoall.h"
#include "sim/engine/simulation.h"
#include "tests/engine/test_scenarios.h"

namespace {

constexpr double kMeanTol = 0.01;
constexpr double kEachTol = 0.03;
constexpr std::int64_t kBatch = 2048;
constexpr std::int64_t kHidden = 4096;
constexpr std::int64_t kTopK = 8;

nlohmann::json moe_model() {
  auto m = ess::test::one_layer_model(true);
  m["moe"]["routed_experts"] = 64;
  m["moe"]["experts_per_token"] = kTopK;
  return m;
}

nlohmann::json scenario(const nlohmann::json& hardware) {
  return {{"model", moe_model()},
          {"hardware", hardware},
          {"parallelism", {{"expert_parallel", 8}}},
          // Balanced routing: the model (models/alltoall.h) prices a balanced all-to-all.
          {"workload", {{"batch_per_gpu", kBatch}, {"context_length", 8}, {"decode_steps", 2}, {"expert_skew", 0}, {"expert_drift", 0}}}};
}

// Durations (s) of every traced "L0 <label>" all-to-all, one per GPU and step.
std::vector<double> collective_slices(const ess::RunResult& r, const std::string& label) {
  const auto trace = nlohmann::json::parse(r.trace.to_json());
  std::vector<double> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "X" && e.value("cat", "") == "collectives" && e.value("name", "") == "L0 " + label) {
      out.push_back(e.at("dur").get<double>() * 1e-6);
    }
  }
  return out;
}

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

struct Measured {
  std::vector<double> dispatch;
  std::vector<double> combine;
};

Measured simulate(const ess::Scenario& s) {
  const auto r = ess::Simulation(s, ess::SimulationOptions(2, 2)).run();
  return {collective_slices(r, "dispatch"), collective_slices(r, "combine")};
}

ess::Seconds model_time(const ess::Scenario& s, ess::Bytes per_copy) {
  return ess::expert_alltoall({s.parallelism.expert_parallel, s.hardware.gpu.count, kBatch, kTopK, per_copy}, s.hardware)
      .time;
}

void check_agrees(const std::vector<double>& engine, ess::Seconds model, std::size_t gpus) {
  REQUIRE(engine.size() == 2 * gpus);  // every GPU, both traced steps
  INFO("model " << model.value() << " s, engine mean " << mean(engine) << " s, min "
                << *std::min_element(engine.begin(), engine.end()) << ", max "
                << *std::max_element(engine.begin(), engine.end()));
  CHECK(mean(engine) == Approx(model.value()).epsilon(kMeanTol));
  for (double t : engine) CHECK(t == Approx(model.value()).epsilon(kEachTol));
}

}  // namespace

TEST_CASE("one node: the engine's dispatch and combine take the ExpertAlltoall time (NVSwitch-bound)") {
  // 8 GPUs, EP 8; each GPU sends 7/8 of 16,384 copies through its 1 GB/s port:
  // dispatch 14,336 x 4224 B = 60.56 ms, combine 14,336 x 8192 B = 117.4 ms (+ 10 us).
  const auto s = ess::test::load(scenario(ess::test::overhead_only_hardware(8)));
  const auto m = simulate(s);
  check_agrees(m.dispatch, model_time(s, ess::dispatch_bytes_per_copy(kHidden)), 8);
  check_agrees(m.combine, model_time(s, ess::combine_bytes_per_copy(kHidden, s.model.activation_dtype)), 8);
}

TEST_CASE("two nodes: the engine's dispatch and combine take the ExpertAlltoall time (NIC-bound)") {
  // 2 nodes x 4 GPUs, EP 8; a 100 MB/s NIC carrying 4/8 of the copies is the slower flow:
  // dispatch 8192 x 4224 B / 100 MB/s = 346 ms (the NVSwitch flow carries 3/8 at >= 1 GB/s).
  auto hw = ess::test::overhead_only_hardware(4);
  hw["nodes"] = 2;
  hw["network"]["bandwidth_per_gpu"] = "100MB/s";
  const auto s = ess::test::load(scenario(hw));
  const auto dispatch = ess::expert_alltoall({8, 4, kBatch, kTopK, ess::dispatch_bytes_per_copy(kHidden)}, s.hardware);
  REQUIRE(dispatch.internode > dispatch.intranode);
  const auto m = simulate(s);
  check_agrees(m.dispatch, dispatch.time, 8);
  check_agrees(m.combine, model_time(s, ess::combine_bytes_per_copy(kHidden, s.model.activation_dtype)), 8);
}

TEST_CASE("the agreement check is tight enough to catch a model that forgot the fp8 scales") {
  // Dispatch without the 4/128 scale bytes is 3% short: outside kMeanTol, so a drift of that size
  // between builder and model fails the tests above.
  const auto s = ess::test::load(scenario(ess::test::overhead_only_hardware(8)));
  const auto m = simulate(s);
  const ess::Seconds wrong = model_time(s, ess::Bytes(static_cast<double>(kHidden)));
  CHECK_FALSE(mean(m.dispatch) == Approx(wrong.value()).epsilon(kMeanTol));
}
