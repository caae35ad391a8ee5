// MoE under tensor-parallel attention (TP8 EP8 and TP8 EP1 as vLLM and SGLang serve them), worked
// out by hand on the overhead-only test GPU (tests/engine/test_scenarios.h).
#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/memory/memory_plan.h"
#include "tests/engine/test_scenarios.h"

using ess::test::load;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

namespace {

using ess::test::kTol;

nlohmann::json tp_moe(int gpus, int tp, int ep) {
  return {{"model", one_layer_model(true)},
          {"hardware", overhead_only_hardware(gpus)},
          {"parallelism", {{"attention_dp", gpus / tp}, {"tensor_parallel", tp}, {"expert_parallel", ep}}},
          {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 2}}}};
}

}  // namespace

TEST_CASE("MoE with tensor-parallel attention: experts split or sharded over the replica, then an all-reduce") {
  // Kernels: embedding; attn_norm, qkv, rope, attention, o, attn_residual; ffn_norm, router,
  // router_topk; experts gate_up, act, down; combine_sum, moe_residual; final_norm, lm_head,
  // sampling = 18 x 10 us. Two all-reduces of 2 tokens x 4096 x 2 B (36.384 us each, as in
  // step_time_test.cpp), no all-to-all: 180 + 72.768 = 252.768 us, for both layouts.
  for (int ep : {2, 1}) {
    INFO("expert_parallel " << ep);
    const auto s = load(tp_moe(2, 2, ep));
    auto r = ess::Simulation(s, {}).run();
    for (double t : r.step_time) CHECK(t == Approx(252.768e-6).epsilon(kTol));
  }
}

TEST_CASE("MoE layouts differ in the expert weights each GPU holds") {
  // Split (ep = tp = 2): one whole expert per GPU. Sharded (ep 1): half of each of the 2 experts.
  // Both hold the same bytes here; against DP attention + EP2 (tp 1) the attention weights differ.
  const auto split = ess::weight_bytes_per_gpu(ess::decode_run(load(tp_moe(2, 2, 2))));
  const auto sharded = ess::weight_bytes_per_gpu(ess::decode_run(load(tp_moe(2, 2, 1))));
  CHECK(split.value() == Approx(sharded.value()).epsilon(1e-12));
  // On 4 GPUs TP4 EP1 holds a quarter of each expert; TP4 EP4 would need 4 experts (2 routed
  // cannot split over 4 GPUs without redundant copies): refused with the reason.
  CHECK(ess::weight_bytes_per_gpu(ess::decode_run(load(tp_moe(4, 4, 1)))).value() < sharded.value());
  CHECK_THROWS_WITH(load(tp_moe(4, 4, 4)), Catch::Contains("routed experts"));
}

TEST_CASE("expert parallelism across tensor-parallel replicas is refused with the layouts that work") {
  CHECK_THROWS_WITH(load(tp_moe(4, 2, 4)), Catch::Contains("/parallelism/expert_parallel") &&
                                               Catch::Contains("expert_parallel = tensor_parallel"));
  auto doc = tp_moe(2, 2, 1);
  doc["parallelism"]["redundant_experts"] = 2;
  CHECK_THROWS_WITH(load(doc), Catch::Contains("/parallelism/redundant_experts"));
}
