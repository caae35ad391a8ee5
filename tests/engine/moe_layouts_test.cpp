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

// DP attention over `gpus` GPUs with the experts split over EP ranks of moe_tp GPUs each.
nlohmann::json gathered_moe(int gpus, int ep, int moe_tp) {
  return {{"model", one_layer_model(true)},
          {"hardware", overhead_only_hardware(gpus)},
          {"parallelism", {{"attention_dp", gpus}, {"expert_parallel", ep}, {"moe_tensor_parallel", moe_tp}}},
          {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 2}}}};
}

}  // namespace

TEST_CASE("DP attention with a tensor-parallel MoE: an all-gather of the group's tokens, a reduce-scatter back") {
  // Kernels: embedding; attn_norm, qkv, rope, attention, o, attn_residual; ffn_norm, router,
  // router_topk; experts gate_up, act, down (each GPU computes half of both experts' columns on
  // the 2 gathered tokens); combine_sum, moe_residual; final_norm, lm_head, sampling = 18 x 10 us.
  // The all-gather and the reduce-scatter each move one share of 1 token x 4096 x 2 B = 8,192 B:
  // 20 us + (2-1) x 8,192 B / 1 GB/s = 28.192 us. 180 + 56.384 = 236.384 us.
  const auto s = load(gathered_moe(2, 1, 2));
  auto r = ess::Simulation(s, {}).run();
  for (double t : r.step_time) CHECK(t == Approx(236.384e-6).epsilon(kTol));
  // Against DP attention + EP2 (an all-to-all, no gather): the same routed-expert bytes per GPU
  // (one whole expert, or half of each of the two).
  const auto gathered = ess::weight_bytes_per_gpu(ess::decode_run(s));
  const auto ep2 = ess::weight_bytes_per_gpu(ess::decode_run(load(gathered_moe(2, 2, 1))));
  CHECK(gathered.value() == Approx(ep2.value()).epsilon(1e-12));
}

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
                                               Catch::Contains("must divide tensor_parallel"));
  auto doc = tp_moe(2, 2, 1);
  doc["parallelism"]["redundant_experts"] = 2;
  CHECK_THROWS_WITH(load(doc), Catch::Contains("/parallelism/redundant_experts"));
}
