// Colocated prefill (serving.prefill.mode "colocated"): the chunk model's arithmetic, and the
// serving loop's chunked prefill beside decode worked out by hand on constant tables.
#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/table_builder.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

// A chunk slice at `batch` whose mixed steps take `mixed` seconds whatever the chunk, beside a
// reference step of `reference` seconds (utilisation 1 and 0.5).
ChunkSlice constant_slice(std::int64_t batch, double mixed, double reference, std::vector<std::int64_t> cached) {
  std::vector<StepPoint> points(2 * cached.size(), StepPoint{mixed, 1.0});
  return ChunkSlice{batch, StepTable({256, 8192}, std::move(cached), std::move(points)), StepPoint{reference, 0.5}};
}

Scenario colocated(std::int64_t budget) {
  return test::serving_scenario(test::kServingBaselineColocated,
                                {"serving.prefill.tokens_per_gpu=" + std::to_string(budget), "workload.mtp.depth=1",
                                 "workload.mtp.acceptance=1", "serving.controller.enabled=false"});
}

}  // namespace

TEST_CASE("a chunk adds the mixed step's excess over its reference, in proportion below the grid", "[serving][colocated]") {
  ChunkModel m;
  m.slices.push_back(constant_slice(1, 1.0, 0.1, {0, 1 << 20}));
  CHECK(m.added(1, 4096, 100).time == Approx(0.9));
  CHECK(m.added(1, 4096, 100).busy == Approx(1.0 - 0.05));
  CHECK(m.added(1, 128, 0).time == Approx(0.45));  // half the smallest chunk on the grid
  CHECK(m.added(1, 0, 0).time == 0.0);
  // A second slice at batch 9 where the chunk adds 0.5 s: halfway (batch 5) it adds 0.7 s; beyond
  // the last slice, the last slice's.
  m.slices.push_back(constant_slice(9, 1.0, 0.5, {1000}));
  CHECK(m.added(5, 4096, 100).time == Approx(0.7));
  CHECK(m.added(9, 4096, 100).time == Approx(0.5));
  CHECK(m.added(20, 4096, 100).time == Approx(0.5));
  CHECK(m.added(1, 4096, 100).time == Approx(0.9));
}

TEST_CASE("colocated: a prompt prefills in chunks of the budget, its first token at the last chunk's end", "[serving][colocated]") {
  const Scenario s = colocated(1000);
  const ServingMemory memory(s, 2503, 2503, std::nullopt);
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  ChunkModel chunks;
  chunks.slices.push_back(constant_slice(1, 1.0, 0.1, {0, 1 << 20}));
  const std::vector<Request> requests = {{0, 0.0, 2500, 3}};
  const ServingRun run = run_serving(s, requests, model, memory, &chunks);
  // Chunks of 1000, 1000 and 500 tokens in steps with no decode request: the mixed step, 1 s each.
  const auto& r = run.requests[0];
  CHECK(r.first_token == Approx(3.0));
  CHECK(r.generated == 3);
  CHECK(r.finish == Approx(3.0 + 2 * 0.010));  // two decode steps for the other two tokens
  REQUIRE(run.steps.size() == 5);
  CHECK(run.steps[0].prefill_tokens == 1000);
  CHECK(run.steps[2].prefill_tokens == 500);
  CHECK(run.steps[3].prefill_tokens == 0);
  const auto j = serving_json(s, run, model, memory);
  CHECK(j["ttft_s"]["mean"].get<double>() == Approx(3.0));
  CHECK(j["prefill"]["steps_with_prefill"] == 3);
  CHECK(j["prefill"]["prefill_tokens"].get<double>() == 2500.0);
}

TEST_CASE("colocated: a prompt on one GPU slows the decode steps of every GPU (interference in TPOT)", "[serving][colocated]") {
  const Scenario s = colocated(1000);
  const ServingMemory memory(s, 261, 1502, std::nullopt);
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  ChunkModel chunks;
  chunks.slices.push_back(constant_slice(1, 1.0, 0.1, {0, 1 << 20}));
  // r0 (256-token prompt) prefills in step [0, 1] on GPU 0 and decodes from t = 1; r1 arrives at
  // 0.5, is admitted at 1.0 on GPU 1, and its 1500 tokens take two steps, each costing r0's decode
  // step (10 ms) plus the 0.9 s its chunk adds.
  const std::vector<Request> requests = {{0, 0.0, 256, 5}, {1, 0.5, 1500, 2}};
  const ServingRun run = run_serving(s, requests, model, memory, &chunks);
  CHECK(run.requests[0].first_token == Approx(1.0));
  CHECK(run.requests[1].gpu == 1);
  CHECK(run.requests[1].first_token == Approx(1.0 + 2 * 0.910));
  CHECK(run.steps[1].prefill_tokens == 1000);
  CHECK(run.steps[1].time == Approx(0.910));
  CHECK(run.steps[1].prefill_time == Approx(0.9));
  // r0's tokens 2 and 3 came in those slow steps; 4 and 5 at 10 ms.
  CHECK(run.requests[0].finish == Approx(1.0 + 2 * 0.910 + 2 * 0.010));
}

TEST_CASE("colocated mode takes a token budget, and the chunk grid spans the budget and the prompts", "[serving][colocated]") {
  const Scenario s = colocated(2048);
  CHECK(s.serving->prefill.colocated());
  CHECK(s.serving->prefill.tokens_per_gpu == 2048);
  const std::vector<Request> requests = {{0, 0.0, 9000, 10}};
  const TableGrid g = chunk_table_grid(s, requests);
  CHECK(g.batches == std::vector<std::int64_t>{256, 512, 1024, 2048});
  CHECK(g.contexts == std::vector<std::int64_t>{0, 2048, 4096, 8192, 8999});
  CHECK_THROWS_AS(test::serving_scenario(test::kServingBaselineColocated, {"serving.prefill.tokens_per_gpu=0"}), ConfigError);
  // Prefill instances belong to disaggregated mode: named, not ignored.
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaselineColocated, {"serving.prefill.instances=2"}),
                    Catch::Contains("/serving/prefill/instances") && Catch::Contains("unknown key"));
}

TEST_CASE("a chunk of several prompts, with fewer key pairs than one chunk, is extrapolated along the cached axis", "[serving][colocated]") {
  // Mixed steps of 1 s with nothing cached and 2 s with 1,000 tokens cached, beside a 0.1 s reference.
  ChunkModel m;
  m.slices.push_back(ChunkSlice{1, StepTable({256, 8192}, {0, 1000}, {{1.0, 1.0}, {2.0, 1.0}, {1.0, 1.0}, {2.0, 1.0}}),
                                StepPoint{0.1, 0.5}});
  CHECK(m.added(1, 4096, 500).time == Approx(1.5 - 0.1));
  CHECK(m.added(1, 4096, -500).time == Approx(0.5 - 0.1));  // half a causal chunk's pairs fewer: 1 - 0.5
  CHECK(m.added(1, 4096, -500).busy == Approx(0.5 - 0.05));
  CHECK(m.added(1, 4096, -5000).time == 0.0);  // never below nothing added
}

TEST_CASE("prefill_first: a replica with a prompt waiting runs its chunks alone, its decoding requests wait", "[serving][colocated]") {
  // One TP8 replica; the engine key against the mixed schedule of the test above.
  const auto scenario = [](const std::string& schedule) {
    return test::serving_scenario(test::kServingBaselineColocated,
                                  {"serving.prefill.tokens_per_gpu=1000", "workload.mtp.depth=1", "workload.mtp.acceptance=1",
                                   "serving.controller.enabled=false", "parallelism.attention_dp=1",
                                   "parallelism.tensor_parallel=8", "parallelism.expert_parallel=1",
                                   "engine.prefill_schedule=" + schedule});
  };
  const Scenario s = scenario("prefill_first");
  REQUIRE(s.engine.prefill_first);
  CHECK_FALSE(scenario("mixed").engine.prefill_first);
  CHECK_THROWS_WITH(scenario("decode_first"), Catch::Contains("/engine/prefill_schedule") && Catch::Contains("prefill_first"));
  const ServingMemory memory(s, 261, 1502, std::nullopt);
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  ChunkModel chunks;
  chunks.slices.push_back(constant_slice(1, 1.0, 0.1, {0, 1 << 20}));
  // r0 prefills in [0, 1]. r1 (1,500 tokens) is admitted at 1 to the same replica: its chunks of
  // 1,000 and 500 run alone in [1, 2] and [2, 3] (the mixed step, 1 s each) while r0 waits; then
  // both decode at 10 ms a step.
  const std::vector<Request> requests = {{0, 0.0, 256, 5}, {1, 0.5, 1500, 2}};
  const ServingRun run = run_serving(s, requests, model, memory, &chunks);
  CHECK(run.requests[0].first_token == Approx(1.0));
  CHECK(run.requests[1].gpu == 0);
  CHECK(run.requests[1].first_token == Approx(3.0));
  CHECK(run.requests[1].finish == Approx(3.010));
  CHECK(run.requests[0].finish == Approx(3.0 + 4 * 0.010));
  REQUIRE(run.steps.size() >= 4);
  CHECK(run.steps[1].time == Approx(1.0));
  CHECK(run.steps[1].prefill_tokens == 1000);
  CHECK(run.steps[1].chunks == std::vector<std::int32_t>{0, 0});  // r0 got nothing
  // r0's second token spans the two prefill steps: one gap of 2.01 s, not two 10 ms steps.
  REQUIRE(run.steps[3].stalled.size() == 1);
  CHECK(run.steps[3].stalled[0].gap == Approx(2.010));
  CHECK(run.steps[3].stalled[0].tokens == 1);
  const auto j = serving_json(s, run, model, memory);
  CHECK(j["itl_s"]["max"].get<double>() == Approx(2.010));
}
