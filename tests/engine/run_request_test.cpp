// Run requests (sim/config/run_request.h): a run that differs from its scenario prices what it
// says, exactly as a scenario written with those values does, and the scenario stays as loaded.
#include <type_traits>

#include <catch2/catch.hpp>

#include "sim/engine/simulation.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/prefill_step.h"
#include "tests/engine/test_scenarios.h"

namespace {

using ess::test::load;
using ess::test::one_layer_mla_model;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

// Two GPUs of the MLA model with its latent cache offloaded.
nlohmann::json offload_doc() {
  return {{"model", one_layer_mla_model()},
          {"hardware", overhead_only_hardware(2)},
          {"parallelism", {{"attention_dp", 2}}},
          {"workload", {{"batch_per_gpu", 4}, {"context_length", 100}, {"decode_steps", 2}}},
          {"cache", {{"mode", "offload"}, {"pool_entries", 8}, {"sampled_requests", 4}, {"warmup_windows", 2}}}};
}

// Step times and the memory plan of a run: what a request must reproduce.
void check_same_run(const ess::RunResult& a, const ess::RunResult& b) {
  REQUIRE(a.step_time.size() == b.step_time.size());
  for (std::size_t k = 0; k < a.step_time.size(); ++k) {
    // SimGrid's clock rounds differently in a later engine of the process (~1e-16 relative).
    CHECK(a.step_time[k] == Approx(b.step_time[k]).epsilon(1e-12));
  }
  CHECK(a.batch_per_gpu == b.batch_per_gpu);
  CHECK(a.gpus == b.gpus);
  CHECK(a.offload == b.offload);
  REQUIRE(a.memory.lines.size() == b.memory.lines.size());
  for (std::size_t i = 0; i < a.memory.lines.size(); ++i) {
    CHECK(a.memory.lines[i].name == b.memory.lines[i].name);
    CHECK(a.memory.lines[i].bytes.value() == Approx(b.memory.lines[i].bytes.value()).epsilon(1e-15));
  }
}

ess::RunResult simulate(ess::RunRequest run) { return ess::Simulation(std::move(run), {}).run(); }

}  // namespace

// A builder keeps references into its request: a temporary request would dangle.
static_assert(!std::is_constructible_v<ess::DecodeStepBuilder, ess::DecodeRun&&, std::int64_t>);
static_assert(!std::is_constructible_v<ess::PrefillStepBuilder, ess::PrefillRun&&>);
static_assert(!std::is_constructible_v<ess::StepBlocks, ess::RunBase&&>);

TEST_CASE("a decode run of another workload prices what a scenario written with that workload prices") {
  const ess::Scenario base = load(offload_doc());
  nlohmann::json doc = offload_doc();
  doc["workload"] = {{"batch_per_gpu", 6}, {"context_length", 300}, {"decode_steps", 3}};
  const ess::Scenario written = load(doc);
  const ess::RunResult direct = simulate(ess::decode_run(written));
  const ess::RunResult requested =
      simulate(ess::decode_run(base, written.workload, ess::CacheMode::offload, ess::MemoryBound::hardware));
  check_same_run(requested, direct);
  CHECK(requested.step_context.front() == 300);
  // The scenario the request was made from is as loaded.
  CHECK(base.workload.context_length == 100);
  CHECK(base.workload.batch_per_gpu == 4);
}

TEST_CASE("a decode run with its cache on the GPU prices what a scenario without offload prices") {
  const ess::Scenario base = load(offload_doc());
  nlohmann::json doc = offload_doc();
  doc.erase("cache");
  const ess::Scenario gpu_only = load(doc);
  const ess::RunResult requested = simulate(ess::decode_run(base, base.workload, ess::CacheMode::gpu, ess::MemoryBound::hardware));
  CHECK_FALSE(requested.offload);
  check_same_run(requested, simulate(ess::decode_run(gpu_only)));
  CHECK(base.cache.mode == ess::CacheMode::offload);
}

TEST_CASE("an unbounded decode run prices a batch the hardware's memory refuses, every request offloaded") {
  nlohmann::json doc = offload_doc();
  doc["hardware"]["gpu"]["hbm_capacity"] = "2GB";
  doc["hardware"]["cpu"]["dram_capacity_per_socket"] = "1MB";
  doc["workload"]["batch_per_gpu"] = 4096;
  const ess::Scenario s = load(doc);
  CHECK_THROWS_AS(ess::resolve_batch(ess::decode_run(s)), ess::CapacityError);
  const ess::DecodeRun unbounded = ess::decode_run(s, s.workload, ess::CacheMode::offload, ess::MemoryBound::unbounded);
  CHECK(unbounded.host_memory_threshold() == 1.0);
  CHECK(unbounded.hbm_capacity().value() > 1e15);
  const ess::MemoryBudget plan = ess::plan_memory(unbounded, 4096);
  CHECK(plan.fits());
  CHECK(plan.placement.offloaded == 4096);  // host memory holds them all
  CHECK(plan.placement.fallback == 0);
  // Bounded, 1 MB of host memory holds a few of their ~67 kB latent caches: the rest stay GPU-only.
  const ess::OffloadPlacement bounded = ess::place_requests(ess::decode_run(s), 4096);
  CHECK(bounded.offloaded < 10);
  CHECK(bounded.fallback == 4096 - bounded.offloaded);
}

TEST_CASE("a prefill run on another layout prices what a scenario with that layout prices") {
  const auto prefill_doc = [](int nodes) {
    nlohmann::json model = one_layer_model(true);
    model["moe"]["routed_experts"] = 4;
    nlohmann::json hw = overhead_only_hardware(2);
    hw["nodes"] = nodes;
    hw["gpu"]["sm_count"] = 100;
    return nlohmann::json{{"model", model},
                          {"hardware", hw},
                          {"parallelism", {{"attention_dp", 2 * nodes}, {"expert_parallel", 2 * nodes}}},
                          {"prefill", {{"prompt_length", 512}, {"tokens_per_gpu", 512}, {"steps", 1}}}};
  };
  const ess::Scenario one_node = load(prefill_doc(1));
  const ess::Scenario two_nodes = load(prefill_doc(2));
  const ess::PrefillRun requested = ess::prefill_run(one_node, 2, two_nodes.parallelism, *two_nodes.prefill);
  CHECK(requested.gpus() == 4);
  CHECK(one_node.hardware.nodes == 1);
  const ess::RunResult a = simulate(requested);
  const ess::RunResult b = simulate(ess::prefill_run(two_nodes));
  CHECK(a.gpus == 4);
  check_same_run(a, b);
}

TEST_CASE("a prefill run estimated beyond the resource limits is refused before it starts") {
  nlohmann::json doc = {{"model", one_layer_model(false)},
                        {"hardware", overhead_only_hardware(1)},
                        {"prefill", {{"prompt_length", 64}, {"tokens_per_gpu", 64}, {"steps", 1}}}};
  const ess::Scenario s = load(doc);
  ess::ResourceLimits tight;
  tight.wall_seconds = 1e-12;
  CHECK_THROWS_AS(ess::Simulation(s, ess::SimulationOptions(1, 0, tight)).run(), ess::ResourceError);
  tight.enforce = false;
  CHECK(ess::Simulation(s, ess::SimulationOptions(1, 0, tight)).run().step_time.size() == 1);
}
