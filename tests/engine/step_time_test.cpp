// Step times worked out by hand on the overhead-only test GPU (tests/engine/test_scenarios.h):
// every kernel costs 10 us (+ < 1e-10 s of roofline), collectives their alpha-beta time.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"
#include "tests/engine/test_scenarios.h"

using ess::test::load;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

namespace {
using ess::test::kTol;
}

TEST_CASE("two GPUs with expert parallelism: kernels plus two all-to-alls through SimGrid") {
  const auto s = load({{"model", one_layer_model(true)},
                       {"hardware", overhead_only_hardware(2)},
                       {"parallelism", {{"attention_dp", 2}, {"expert_parallel", 2}}},
                       {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 3}}}});
  auto r = ess::Simulation(s, {}).run();
  // Kernels per GPU: embedding; attn_norm, qkv, rope, attention, o, attn_residual; ffn_norm,
  // router, router_topk; experts gate_up, act, down; combine_sum; final_norm, lm_head, sampling
  // = 17 kernels x 10 us = 170 us.
  // Dispatch: each GPU sends its 1 token to the other GPU's expert: 4096 x (1 + 4/128) = 4224 B
  // over a 1 GB/s port, 10 us route latency: 10 + 4.224 = 14.224 us.
  // Combine: the expert output back in bf16, 4096 x 2 = 8192 B: 10 + 8.192 = 18.192 us.
  // Step = 170 + 14.224 + 18.192 = 202.416 us.
  REQUIRE(r.step_time.size() == 3);
  for (double t : r.step_time) CHECK(t == Approx(202.416e-6).epsilon(kTol));
  // Both GPUs arrive together: nobody waits, and the categories add up to the step.
  for (const auto& g : r.gpu_steps[1]) {
    CHECK(g.wait == Approx(0.0).margin(1e-12));
    const double busy = std::accumulate(g.busy.begin(), g.busy.end(), 0.0);
    CHECK(busy == Approx(202.416e-6).epsilon(kTol));
    CHECK(g.busy[static_cast<std::size_t>(ess::OpCategory::collective)] == Approx(32.416e-6).epsilon(kTol));
  }
}

TEST_CASE("two GPUs with tensor parallelism: kernels plus two all-reduces") {
  const auto s = load({{"model", one_layer_model(false)},
                       {"hardware", overhead_only_hardware(2)},
                       {"parallelism", {{"attention_dp", 1}, {"tensor_parallel", 2}}},
                       {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 2}}}});
  auto r = ess::Simulation(s, {}).run();
  // Kernels: embedding; attn_norm, qkv, rope, attention, o, attn_residual; ffn_norm, gate_up, act,
  // down, mlp_residual; final_norm, lm_head, sampling = 15 x 10 us = 150 us.
  // The replica serves batch x tp = 2 requests: 2 tokens x 4096 x 2 B = 16,384 B per all-reduce:
  // 20 us + 2 (2-1)/2 x 16,384 B / 1 GB/s = 20 + 16.384 = 36.384 us, twice per layer.
  // Step = 150 + 72.768 = 222.768 us.
  for (double t : r.step_time) CHECK(t == Approx(222.768e-6).epsilon(kTol));
}

TEST_CASE("the engine's kernel gap is paid once per launched kernel") {
  // The tensor-parallel case above (15 kernels, two all-reduces) with a 1 us gap after each kernel:
  // 222.768 + 15 x 1 = 237.768 us. The all-reduces are not kernels of the compute stream here.
  // (vLLM's fitted host time is set to 0: tests/engine/host_time_test.cpp prices it.)
  const auto s = load({{"model", one_layer_model(false)},
                       {"hardware", overhead_only_hardware(2)},
                       {"parallelism", {{"attention_dp", 1}, {"tensor_parallel", 2}}},
                       {"engine", {{"preset", "vllm"}, {"kernel_gap", "1us"}, {"host_step_time", "0s"}, {"host_request_time", "0s"}}},
                       {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 2}}}});
  auto r = ess::Simulation(s, {}).run();
  for (double t : r.step_time) CHECK(t == Approx(237.768e-6).epsilon(kTol));
}

TEST_CASE("collective groups synchronise only their own members") {
  // Tensor parallelism over 2 of 4 GPUs: two independent replicas, each with its own all-reduce
  // group; all four GPUs keep the 2-GPU step time.
  const auto s = load({{"model", one_layer_model(false)},
                       {"hardware", overhead_only_hardware(4)},
                       {"parallelism", {{"attention_dp", 2}, {"tensor_parallel", 2}}},
                       {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 2}}}});
  auto r = ess::Simulation(s, {}).run();
  for (double t : r.step_time) CHECK(t == Approx(222.768e-6).epsilon(kTol));
  for (const auto& g : r.gpu_steps[0]) CHECK(g.end == Approx(222.768e-6).epsilon(kTol));
}

TEST_CASE("the context grows by the accepted tokens of every step") {
  auto doc = nlohmann::json{{"model", one_layer_model(false)},
                            {"hardware", overhead_only_hardware(1)},
                            {"workload", {{"batch_per_gpu", 1}, {"context_length", 100}, {"decode_steps", 4}}}};
  const auto s = load(doc);
  auto r = ess::Simulation(s, {}).run();
  CHECK(r.step_context == std::vector<std::int64_t>{100, 101, 102, 103});
}

TEST_CASE("CUDA-graph padding: the padded rows run through the GEMMs, not the attention", "[cuda_graph]") {
  // 3 requests per GPU: vLLM's graphs pad them to 4; SGLang's too; DeepSeek's engine runs 3.
  const auto run_with = [](const char* engine) {
    auto doc = nlohmann::json::parse(R"({"model": "deepseek-v3.2-exp", "hardware": "h200-sxm",
      "workload": {"batch_per_gpu": 3, "context_length": 4096, "decode_steps": 1, "expert_skew": 0, "expert_drift": 0}})");
    doc["engine"] = engine;
    const auto s = ess::load_scenario_text(doc.dump(), "t.json", {});
    ess::SimulationOptions o;
    o.steps = 1;
    return ess::Simulation(s, o).run();
  };
  const auto padded = run_with("vllm");
  const auto plain = run_with("trtllm");  // same kernels and gap, no padding
  const auto gemm = static_cast<std::size_t>(ess::OpCategory::gemm);
  const auto attention = static_cast<std::size_t>(ess::OpCategory::attention);
  CHECK(padded.gpu_steps[0][0].busy[gemm] > plain.gpu_steps[0][0].busy[gemm]);
  CHECK(padded.gpu_steps[0][0].busy[attention] == Approx(plain.gpu_steps[0][0].busy[attention]));
}
