// Tiny scenarios with round numbers, so that a step time can be worked out by hand.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"

namespace ess::test {

// Relative tolerance of the hand-worked step times: the roofline terms of the overhead-only GPU
// add at most ~2e-9 s per step (`using ess::test::kTol;` in each test file).
inline constexpr double kTol = 1e-6;

// A GPU on which every kernel costs its 10 us overhead plus a roofline term below 1e-10 s
// (1e18 B/s HBM, 1e21 FLOP/s): step times are 10 us per kernel plus the collectives.
inline nlohmann::json overhead_only_hardware(int gpus) {
  const auto roof = [](const char* overhead) {
    return nlohmann::json{{"compute_efficiency", 1.0}, {"compute_ramp", 0}, {"memory_efficiency", 1.0},
                          {"memory_ramp", "0B"}, {"kernel_overhead", overhead}};
  };
  const auto with_row_keys = [](nlohmann::json r) {
    r["row_keys"] = 0;
    return r;
  };
  return {
      {"name", "overhead-only"},
      {"gpu",
       {{"kind", "TestGPU"}, {"count", gpus}, {"hbm_capacity", "100GB"}, {"hbm_bandwidth", "1000000TB/s"},
        {"peak_compute", {{"fp32", "1000000PFLOP/s"}, {"bf16", "1000000PFLOP/s"}, {"fp16", "1000000PFLOP/s"}, {"fp8", "1000000PFLOP/s"}}}}},
      {"pcie",
       {{"generation", 5}, {"h2d_bandwidth", "50GB/s"}, {"d2h_bandwidth", "50GB/s"}, {"latency", "1us"},
        {"h2d_call_overhead", "1us"}, {"d2h_call_overhead", "1us"}, {"gather_h2d_efficiency", 0.5},
        {"gather_d2h_efficiency", 0.5}, {"gather_sm_fraction", 0.25}, {"gpus_per_switch", 1}, {"switch_uplink_bandwidth", "50GB/s"}}},
      {"nvlink", {{"bandwidth", "100GB/s"}, {"latency", "1us"}}},
      {"network", {{"bandwidth_per_gpu", "10GB/s"}, {"latency", "5us"}}},
      {"cpu", {{"sockets", 1}, {"gpus_per_socket", gpus}, {"dram_capacity_per_socket", "1TB"}, {"dram_bandwidth_per_socket", "100GB/s"}}},
      {"kernels", {{"gemm", roof("10us")}, {"grouped_gemm", roof("10us")}, {"attention", roof("10us")}, {"sparse_attention", roof("10us")}, {"prefill_attention", with_row_keys(roof("10us"))}, {"indexer", roof("10us")}, {"memory_bound", roof("10us")}, {"topk_passes", 1}}},
      {"collectives",
       {{"allreduce_bus_bandwidth", "1GB/s"}, {"allreduce_latency", "20us"}, {"alltoall_nvlink_efficiency", 0.01}, {"alltoall_network_efficiency", 1.0}, {"alltoall_latency", "10us"}}},
  };
}

// One GQA layer, hidden 4096; with `moe` a MoE layer of 2 experts where every token picks both
// (top-2 of 2: the routing is deterministic).
inline nlohmann::json one_layer_model(bool moe) {
  nlohmann::json m = {
      {"name", moe ? "one-layer-moe" : "one-layer-dense"}, {"layers", 1}, {"hidden", 4096}, {"vocab", 1000},
      {"dense_intermediate", 8192}, {"norm", "rms"}, {"weight_dtype", "bf16"}, {"activation_dtype", "bf16"},
      {"attention", {{"kind", "gqa"}, {"heads", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"cache_dtype", "bf16"}}},
  };
  if (moe) {
    m["moe"] = {{"routed_experts", 2}, {"shared_experts", 0}, {"experts_per_token", 2}, {"expert_intermediate", 1024},
                {"first_dense_layers", 0}};
  }
  return m;
}

// The one-layer model with MLA attention and a top-4 indexer (656 B latent, 132 B indexer entries):
// the smallest model the offload path runs.
inline nlohmann::json one_layer_mla_model() {
  nlohmann::json model = one_layer_model(false);
  model["name"] = "one-layer-mla";
  model["attention"] = {{"kind", "mla"}, {"heads", 8}, {"q_lora_rank", 64}, {"kv_lora_rank", 512}, {"qk_nope_head_dim", 64},
                        {"qk_rope_head_dim", 64}, {"v_head_dim", 64}, {"cache_dtype", "fp8"}, {"cache_bytes_per_token", "656B"}};
  model["indexer"] = {{"heads", 4}, {"head_dim", 64}, {"top_k", 4}, {"cache_bytes_per_token", "132B"}};
  return model;
}

// The hand-worked times of these tests count each kernel at its overhead alone: a scenario that
// names no engine runs DeepSeek's with no gap between kernels (engine_gap_test.cpp checks the gap).
inline Scenario load(nlohmann::json doc) {
  if (!doc.contains("engine")) doc["engine"] = {{"preset", "deepseek"}, {"kernel_gap", "0s"}};
  return load_scenario_text(doc.dump(), "test-scenario.json");
}

}  // namespace ess::test
