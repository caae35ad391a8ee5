// Disaggregated prefill (sim/serving/prefill_pool.h): scheduling worked out by hand on a constant
// step table, chunking, the cache transfer, TTFT through the decode loop, and the section's errors.
#include "sim/serving/prefill_pool.h"

#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_metrics.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

// Every prefill step takes `seconds`, whatever its tokens and prompts.
StepTable constant_table(double seconds) {
  return StepTable({1, 1 << 20}, {1, 1 << 30}, {{seconds, 1.0}, {seconds, 1.0}, {seconds, 1.0}, {seconds, 1.0}});
}

Scenario disaggregated(int instances, std::int64_t tokens_per_gpu) {
  return test::serving_scenario(test::kServingBaseline,
                                {"serving.prefill.mode=disaggregated", "serving.prefill.instances=" + std::to_string(instances),
                                 "serving.prefill.tokens_per_gpu=" + std::to_string(tokens_per_gpu)});
}

}  // namespace

TEST_CASE("a prefill instance steps whenever a GPU has work, and a request waits for the step in flight", "[serving][prefill]") {
  const Scenario s = disaggregated(1, 4096);
  const ServingMemory memory(s, 1000, 3000, std::nullopt);
  const std::vector<Request> requests = {{0, 0.0, 1000, 10}, {1, 0.5, 1000, 10}};
  const PrefillPoolRun run = run_prefill_pool(s, s.serving->prefill.instances, requests, constant_table(1.0), memory);
  // r0 takes GPU 0 and the step [0, 1]; r1 arrives during it, joins the GPU with the fewest pending
  // tokens (all 0: GPU 0) and runs in the next step [1, 2].
  CHECK(run.requests[0].start == 0.0);
  CHECK(run.requests[0].end == 1.0);
  CHECK(run.requests[1].start == 1.0);
  CHECK(run.requests[1].end == 2.0);
  CHECK(run.steps == 2);
  CHECK(run.busy_s == 2.0);
  CHECK(run.gpus_per_instance == 8);
  // Alone, a cache crosses at the slowest of its links: the prefill GPU's NIC (50 GB/s; PCIe onto
  // the decode GPU is 55.4 GB/s).
  const CacheTransfer t = CacheLinks(s, 8).transfer(memory, 1000);
  CHECK(t.gpu_bytes == Approx(memory.gpu_only(1000).hbm));
  CHECK(t.host_bytes == 0.0);
  CHECK(t.seconds == Approx(s.hardware.network.latency.value() + t.bytes() / s.hardware.network.bandwidth_per_gpu.value()));
  // r0's transfer (about 1 ms from t = 1) is over before r1's starts at t = 2: no link is shared.
  CHECK(run.requests[0].ready == Approx(1.0 + t.seconds));
  CHECK(run.requests[1].ready == Approx(2.0 + t.seconds));
  CHECK(run.requests[1].transfer_alone_s == Approx(t.seconds));
  CHECK(run.requests[1].transfer_s == Approx(t.seconds));
}

TEST_CASE("prompts that arrive together spread over the GPUs and share a step, and a long one is chunked", "[serving][prefill]") {
  const Scenario s = disaggregated(1, 1000);
  const ServingMemory memory(s, 1000, 3000, std::nullopt);
  const std::vector<Request> requests = {{0, 0.0, 1000, 10}, {1, 0.0, 1000, 10}, {2, 0.0, 2500, 10}};
  const PrefillPoolRun run = run_prefill_pool(s, s.serving->prefill.instances, requests, constant_table(1.0), memory);
  CHECK(run.requests[0].gpu == 0);
  CHECK(run.requests[1].gpu == 1);
  CHECK(run.requests[2].gpu == 2);
  CHECK(run.requests[0].end == 1.0);
  CHECK(run.requests[1].end == 1.0);
  CHECK(run.requests[2].end == 3.0);  // 1000 + 1000 + 500 tokens at 1000 per step
  CHECK(run.steps == 3);
}

TEST_CASE("a table point below the prompt is a chunk at the prompt's mean cached offset", "[serving][prefill]") {
  const PrefillTablePoint whole = prefill_table_point(8192, 4096);
  CHECK((whole.prompt_length == 4096 && whole.cached == 0));
  const PrefillTablePoint chunk = prefill_table_point(4096, 32768);
  CHECK(chunk.cached == (32768 - 4096) / 2);
  CHECK(chunk.prompt_length - chunk.cached == 4096);
}

TEST_CASE("disaggregated TTFT is prefill + transfer + the first decode step", "[serving][prefill]") {
  const Scenario s = disaggregated(1, 4096);
  const ServingMemory memory(s, 1010, 1010, std::nullopt);
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  const std::vector<Request> requests = {{0, 1.0, 1000, 10}};
  const ServingRun run = run_disaggregated(s, requests, model, memory, constant_table(2.0), s.serving->prefill.instances);
  REQUIRE(run.prefill);
  const double transfer = CacheLinks(s, 8).transfer(memory, 1000).seconds;
  const auto& r = run.requests[0];
  CHECK(r.request.arrival == 1.0);  // the request's own arrival, not when decode saw it
  CHECK(r.first_token == Approx(1.0 + 2.0 + transfer + 0.010));
  const auto j = serving_json(s, run, model, memory);
  CHECK(j["ttft_s"]["mean"].get<double>() == Approx(2.0 + transfer + 0.010));
  CHECK(j["queue_wait_s"]["mean"].get<double>() == Approx(0.0));  // admitted as soon as its cache arrived
  CHECK(j["prefill"]["prefill_s"]["mean"].get<double>() == Approx(2.0));
  CHECK(j["prefill"]["gpus"] == 8);
}

TEST_CASE("disaggregated prefill needs its instances, and an instance must split the experts", "[serving][prefill]") {
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaseline, {"serving.prefill.instances=null"}),
                    Catch::Contains("/serving/prefill") && Catch::Contains("instances"));
  // Instances of a run whose prompts arrive prefilled are a mistake, not ignored.
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaseline, {"serving.prefill.mode=none"}),
                    Catch::Contains("instances"));
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaseline, {"serving.prefill.mode=disaggregate"}),
                    Catch::Contains("did you mean"));
  // 3 nodes of 8 GPUs: 24 GPUs do not divide DeepSeek-V3.2's 256 experts.
  const Scenario s = test::serving_scenario(
      test::kServingBaseline, {"serving.prefill.mode=disaggregated", "serving.prefill.instances=1", "serving.prefill.nodes_per_instance=3"});
  CHECK_THROWS_WITH(prefill_instance_run(s, 4096, 4096), Catch::Contains("do not divide the 256 physical experts"));
}
