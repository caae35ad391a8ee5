// Two-batch overlap, redundant experts and the per-step host overhead, worked out by hand on the
// overhead-only test GPU (tests/engine/test_scenarios.h): every kernel costs 10 us, an all-to-all
// its route latency plus bytes over the 1 GB/s port.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/memory/memory_plan.h"
#include "tests/engine/test_scenarios.h"

using ess::test::load;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

namespace {

using ess::test::kTol;
constexpr auto kCollective = static_cast<std::size_t>(ess::OpCategory::collective);

nlohmann::json two_gpu_moe(std::int64_t batch, int micro_batches) {
  return {{"model", one_layer_model(true)},
          {"hardware", overhead_only_hardware(2)},
          {"parallelism", {{"attention_dp", 2}, {"expert_parallel", 2}}},
          {"workload", {{"batch_per_gpu", batch}, {"context_length", 8}, {"decode_steps", 2}}},
          {"execution", {{"micro_batches", micro_batches}}}};
}

}  // namespace

TEST_CASE("two-batch overlap hides each micro-batch's all-to-alls behind the other's compute") {
  // One micro-batch of 2 requests: 17 kernels (170 us), dispatch of 2 tokens 10 + 8.448 us,
  // combine 10 + 16.384 us: 214.832 us.
  auto one = ess::Simulation(load(two_gpu_moe(2, 1)), {}).run();
  for (double t : one.step_time) CHECK(t == Approx(214.832e-6).epsilon(kTol));

  // Two micro-batches of 1 request. Each: phase 0 = embedding + 6 attention kernels + 3 MoE-input
  // kernels (100 us), dispatch 14.224 us, experts (30 us), combine 18.192 us, 4 kernels (40 us).
  // The stream runs A0 (0-100), B0 (100-200), A1 (200-230), B1 (230-260), A2, B2 (-340): A's
  // dispatch ends at 114.224, B's at 214.224, A's combine at 248.192, B's at 278.192, each before
  // the stream needs it. Step = 340 us of kernels, no communication exposed.
  auto two = ess::Simulation(load(two_gpu_moe(2, 2)), {}).run();
  REQUIRE(two.step_time.size() == 2);
  for (double t : two.step_time) CHECK(t == Approx(340e-6).epsilon(kTol));
  for (const auto& g : two.gpu_steps[1]) {
    CHECK(g.comm == Approx(2 * 14.224e-6 + 2 * 18.192e-6).epsilon(kTol));
    CHECK(g.comm_exposed == Approx(0.0).margin(1e-12));
    CHECK(g.busy[kCollective] == Approx(0.0).margin(1e-12));
    // The categories still add up to the step.
    CHECK(std::accumulate(g.busy.begin(), g.busy.end(), 0.0) == Approx(340e-6).epsilon(kTol));
  }
}

TEST_CASE("two-batch overlap exposes what the other micro-batch's compute cannot cover") {
  // A 150 us all-to-all latency: dispatch 154.224 us, combine 158.192 us.
  // A0 0-100 (dispatch A to 254.224), B0 100-200 (dispatch B to 354.224), A1 waits 54.224 and
  // runs 254.224-284.224 (combine A to 442.416), B1 waits 70 and runs 354.224-384.224 (combine B
  // to 542.416), A2 waits 58.192 and runs 442.416-482.416, B2 waits 60 and runs 542.416-582.416.
  auto doc = two_gpu_moe(2, 2);
  doc["hardware"]["collectives"]["alltoall_latency"] = "150us";
  auto r = ess::Simulation(load(doc), {}).run();
  for (double t : r.step_time) CHECK(t == Approx(582.416e-6).epsilon(kTol));
  for (const auto& g : r.gpu_steps[1]) {
    CHECK(g.comm_exposed == Approx(242.416e-6).epsilon(kTol));
    CHECK(g.busy[kCollective] == Approx(242.416e-6).epsilon(kTol));
    CHECK(g.comm == Approx(2 * 154.224e-6 + 2 * 158.192e-6).epsilon(kTol));
  }
}

TEST_CASE("without two-batch overlap every collective is exposed communication") {
  auto r = ess::Simulation(load(two_gpu_moe(2, 1)), {}).run();
  for (const auto& g : r.gpu_steps[1]) {
    CHECK(g.comm == Approx(18.448e-6 + 26.384e-6).epsilon(kTol));
    CHECK(g.comm_exposed == Approx(g.comm).epsilon(kTol));
  }
}

TEST_CASE("two micro-batches need two requests per GPU and something to overlap") {
  CHECK_THROWS_WITH(load(two_gpu_moe(1, 2)), Catch::Contains("/execution/micro_batches") && Catch::Contains("at least 2 requests"));
  auto dense = two_gpu_moe(2, 2);
  dense["model"] = one_layer_model(false);
  dense["parallelism"] = {{"attention_dp", 2}};
  CHECK_THROWS_WITH(load(dense), Catch::Contains("nothing to overlap") || Catch::Contains("has none"));
  auto three = two_gpu_moe(2, 3);
  CHECK_THROWS_AS(load(three), ess::ConfigError);
}

TEST_CASE("the per-step host overhead is GPU idle time at the start of every step") {
  auto doc = two_gpu_moe(1, 1);
  doc["execution"]["step_overhead"] = "1ms";
  auto r = ess::Simulation(load(doc), {}).run();
  // 202.416 us of kernels and all-to-alls (step_time_test.cpp) + 1 ms.
  for (double t : r.step_time) CHECK(t == Approx(1202.416e-6).epsilon(kTol));
  CHECK(r.gpu_steps[1][0].busy[static_cast<std::size_t>(ess::OpCategory::host)] == Approx(1e-3).epsilon(kTol));
}

TEST_CASE("redundant experts make EP sizes that do not divide the routed experts possible") {
  // 2 routed experts on 4 GPUs: refused alone, fine with 2 redundant (4 physical, 1 per GPU).
  nlohmann::json doc = {{"model", one_layer_model(true)},
                        {"hardware", overhead_only_hardware(4)},
                        {"parallelism", {{"attention_dp", 4}, {"expert_parallel", 4}}},
                        {"workload", {{"batch_per_gpu", 4}, {"context_length", 8}, {"decode_steps", 2}}}};
  CHECK_THROWS_WITH(load(doc), Catch::Contains("/parallelism/expert_parallel") && Catch::Contains("redundant_experts"));
  doc["parallelism"]["redundant_experts"] = 1;
  CHECK_THROWS_WITH(load(doc), Catch::Contains("/parallelism/redundant_experts") && Catch::Contains("3 physical experts"));
  doc["parallelism"]["redundant_experts"] = 2;
  const auto s = load(doc);
  CHECK(s.parallelism.redundant_experts == 2);
  // One physical expert per GPU: the weights are those of 1 expert, not of 2 / 4.
  const auto with = ess::weight_bytes_per_gpu(ess::decode_run(s));
  doc["hardware"] = overhead_only_hardware(2);
  doc["parallelism"] = {{"attention_dp", 2}, {"expert_parallel", 2}};
  CHECK(ess::weight_bytes_per_gpu(ess::decode_run(load(doc))).value() == Approx(with.value()).epsilon(1e-12));
  // Every token copy lands on one of the 4 physical experts: the run completes and every GPU
  // receives tokens over the step (16 tokens x 2 copies spread over 4 GPUs).
  auto r = ess::Simulation(s, {}).run();
  CHECK(r.step_time.size() == 2);
  // Dense models have no experts to replicate.
  nlohmann::json dense = doc;
  dense["model"] = one_layer_model(false);
  dense["parallelism"] = {{"attention_dp", 2}, {"redundant_experts", 2}};
  CHECK_THROWS_WITH(load(dense), Catch::Contains("/parallelism/redundant_experts"));
}
