// The engine's host time and eager launches (engine.host_step_time, host_request_time,
// eager_launch_time), worked out by hand on the overhead-only test GPU (tests/engine/test_scenarios.h:
// every kernel 10 us, no gap between kernels).
#include <catch2/catch.hpp>

#include "sim/engine/simulation.h"
#include "tests/engine/test_scenarios.h"

using ess::test::load;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

namespace {

using ess::test::kTol;

nlohmann::json dense(int gpus, int tp, int batch, const nlohmann::json& engine) {
  return {{"model", one_layer_model(false)},
          {"hardware", overhead_only_hardware(gpus)},
          {"parallelism", {{"attention_dp", gpus / tp}, {"tensor_parallel", tp}}},
          {"workload", {{"batch_per_gpu", batch}, {"context_length", 8}, {"decode_steps", 2}}},
          {"engine", engine}};
}

}  // namespace

TEST_CASE("host time per step and per request of the replica comes before the step's kernels") {
  // TP2, 1 request per GPU: the replica's 2 requests. Kernels: 15 x 10 us; two all-reduces of 2
  // tokens x 4096 x 2 B, 36.384 us each; host 100 us + 2 x 10 us. 150 + 72.768 + 120 = 342.768 us.
  nlohmann::json engine = {{"preset", "deepseek"},      {"kernel_gap", "0s"},       {"host_step_time", "100us"},
                           {"host_request_time", "10us"}, {"host_overlap", "off"}};
  const auto r = ess::Simulation(load(dense(2, 2, 1, engine)), {}).run();
  for (const double t : r.step_time) CHECK(t == Approx(342.768e-6).epsilon(kTol));
  // Overlapped with the GPU, the same 120 us hide behind the 222.768 us of GPU work; 300 us + 2 x
  // 10 us do not: the step lasts 320 us, the GPUs idle for the last 97.232 us.
  engine["host_overlap"] = "on";
  const auto hidden = ess::Simulation(load(dense(2, 2, 1, engine)), {}).run();
  for (const double t : hidden.step_time) CHECK(t == Approx(222.768e-6).epsilon(kTol));
  engine["host_step_time"] = "300us";
  const auto floor = ess::Simulation(load(dense(2, 2, 1, engine)), {}).run();
  for (const double t : floor.step_time) CHECK(t == Approx(320e-6).epsilon(kTol));
}

TEST_CASE("a batch above the largest captured CUDA graph runs eagerly: each kernel at least one launch") {
  // One GPU, 15 kernels of 10 us. Captured sizes {1} (vLLM's rule up to 1): batch 1 replays the
  // graph (150 us); batch 2 runs eagerly, each kernel waiting for its 50 us launch (750 us).
  const nlohmann::json engine = {{"preset", "deepseek"},          {"kernel_gap", "0s"},
                                 {"cuda_graph_sizes", "vllm"},     {"cuda_graph_max_batch", 1},
                                 {"eager_launch_time", "50us"}};
  const auto graph = ess::Simulation(load(dense(1, 1, 1, engine)), {}).run();
  // (The test GPU's 10^6 TB/s still moves the padded batch's bytes in about 0.3 ns.)
  for (const double t : graph.step_time) CHECK(t == Approx(150e-6).epsilon(1e-5));
  const auto eager = ess::Simulation(load(dense(1, 1, 2, engine)), {}).run();
  for (const double t : eager.step_time) CHECK(t == Approx(750e-6).epsilon(1e-5));
}
