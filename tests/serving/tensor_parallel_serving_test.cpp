// Serving under tensor-parallel attention: a serving slot is a replica of tensor_parallel GPUs,
// its step priced at the replica's own request count (any, not only multiples of tp).
#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/serving/serving_run.h"
#include "sim/serving/table_builder.h"
#include "tests/engine/test_scenarios.h"

using namespace ess;

namespace {

// The one-layer dense model on 2 overhead-only GPUs as one TP2 replica, serving a closed loop.
nlohmann::json tp2_serving(const std::string& cache_mode) {
  return {{"model", test::one_layer_model(false)},
          {"hardware", test::overhead_only_hardware(2)},
          {"parallelism", {{"attention_dp", 1}, {"tensor_parallel", 2}}},
          {"workload", {{"batch_per_gpu", "max"}, {"context_length", 64}, {"decode_steps", 2}}},
          {"cache", {{"mode", cache_mode}}},
          {"serving",
           {{"arrivals", {{"process", "concurrency"}, {"concurrency", 3}, {"requests", 6}, {"prompt_tokens", 16}, {"output_tokens", 4}}},
            {"prefill", {{"mode", "none"}}}}}};
}

}  // namespace

TEST_CASE("a serving table point under TP prices the replica's own request count", "[serving][tp]") {
  const Scenario s = test::load(tp2_serving("gpu"));
  const DecodeRun run = table_point_run(s, false, 3, 64, 2);
  REQUIRE(run.replica_requests == 3);
  CHECK(run.workload.batch_per_gpu == 2);  // ceil(3 / 2)
  // Kernels: embedding; attn_norm, qkv, rope, attention, o, attn_residual; ffn_norm, gate_up, act,
  // down, mlp_residual; final_norm, lm_head, sampling = 15 x 10 us. Two all-reduces of the
  // replica's 3 tokens x 4096 x 2 B = 24,576 B: 20 us + 2 (2-1)/2 x 24,576 B / 1 GB/s = 44.576 us
  // each. 150 + 89.152 = 239.152 us; 4 requests (the per-GPU batch of 2 x tp): 150 + 2 x 52.768 = 255.536 us.
  ResourceLimits none;
  none.enforce = false;
  const RunResult r = Simulation(run, SimulationOptions{2, 0, none}).run();
  for (const double t : r.step_time) CHECK(t == Approx(239.152e-6).epsilon(test::kTol));
  CHECK(measure_point(table_point_run(s, false, 4, 64, 2)).time == Approx(255.536e-6).epsilon(test::kTol));
}

TEST_CASE("serving under TP runs one batch per replica", "[serving][tp]") {
  const Scenario s = test::load(tp2_serving("gpu"));
  const Prepared p = prepare(s, ResourceLimits{});
  const ServingRun run = serve(s, p, build_tables(s, p), 0);
  REQUIRE(run.requests.size() == 6);
  for (const auto& r : run.requests) {
    CHECK(r.completed());
    CHECK(r.gpu == 0);  // the one replica
  }
  std::int32_t most = 0;
  for (const auto& step : run.steps) most = std::max(most, step.batch_max);
  CHECK(most == 3);  // the closed loop's 3 in flight, all on the replica
}

TEST_CASE("serving under TP keeps the latent cache on the GPUs", "[serving][tp]") {
  nlohmann::json doc = tp2_serving("offload");
  doc["model"] = test::one_layer_mla_model();
  doc["cache"]["pool_ratio"] = 0.5;
  CHECK_THROWS_WITH(prepare(test::load(doc), ResourceLimits{}),
                    Catch::Contains("/cache/mode") && Catch::Contains("tensor-parallel attention"));
}
