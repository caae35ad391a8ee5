#include "sim/serving/serving_loop.h"

#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/serving/serving_metrics.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

ServingRun run_with(const Scenario& s, const std::vector<Request>& requests, const StepModel& model) {
  std::int64_t lo = 1 << 30;
  std::int64_t hi = 1;
  for (const auto& r : requests) {
    lo = std::min(lo, r.prompt_tokens + r.output_tokens);
    hi = std::max(hi, r.prompt_tokens + r.output_tokens);
  }
  const ServingMemory memory(s, lo, hi, s.serving->max_batch_per_gpu);
  ServingRun run = run_serving(s, requests, model, memory);
  // Capacity is never exceeded, in any run.
  CHECK(run.hbm_peak <= memory.hbm_budget());
  CHECK(run.host_peak <= memory.host_budget());
  return run;
}

}  // namespace

TEST_CASE("TTFT, TPOT, ITL and E2E of one request follow vLLM's and SGLang's definitions", "[serving][metrics]") {
  // Acceptance 2 of depth 2: every step gives the request 2 tokens; a constant 10 ms step.
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"workload.mtp.acceptance=2"});
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  const std::vector<Request> requests = {{0, 1.0, 1000, 10}};
  const ServingRun run = run_with(s, requests, model);
  REQUIRE(run.steps.size() == 5);  // 10 tokens, 2 per step
  const auto& r = run.requests[0];
  CHECK(r.admitted == 1.0);  // no queue: admitted on arrival
  CHECK(r.first_token == Approx(1.010));
  CHECK(r.finish == Approx(1.050));
  const auto j = serving_json(s, run, model, ServingMemory(s, 1010, 1010, std::nullopt));
  // TTFT = one step; TPOT = (E2E - TTFT) / (10 - 1) = 40 ms / 9.
  CHECK(j["ttft_s"]["mean"].get<double>() == Approx(0.010));
  CHECK(j["e2el_s"]["mean"].get<double>() == Approx(0.050));
  CHECK(j["tpot_s"]["mean"].get<double>() == Approx(0.040 / 9));
  // vLLM: one ITL entry per chunk after the first (4 chunks of 2 tokens, 10 ms apart); SGLang:
  // each chunk's gap split over its tokens (8 entries of 5 ms).
  CHECK(j["itl_s"]["count"] == 4);
  CHECK(j["itl_s"]["mean"].get<double>() == Approx(0.010));
  CHECK(j["itl_per_token_s"]["count"] == 8);
  CHECK(j["itl_per_token_s"]["mean"].get<double>() == Approx(0.005));
  // Energy: 8 GPUs x (idle + (busy - idle) x 0.25) for 50 ms, plus 8 x idle for the first 1 s.
  const GpuPower p = *s.hardware.gpu.power;
  const double expected = 8 * (p.idle.value() + (p.busy.value() - p.idle.value()) * 0.25) * 0.050 + 8 * p.idle.value() * 1.0;
  CHECK(j["energy"]["energy_j"].get<double>() == Approx(expected));
  CHECK(j["energy"]["per_output_token_j"].get<double>() == Approx(expected / 10));
}

TEST_CASE("percentiles are numpy's linear interpolation, weighted ones those of the expanded values", "[serving][metrics]") {
  CHECK(linear_percentile({4, 1, 3, 2}, 50) == Approx(2.5));
  CHECK(linear_percentile({1, 2, 3, 4}, 99) == Approx(3.97));  // numpy.percentile([1,2,3,4], 99)
  CHECK(linear_percentile({7}, 90) == 7);
  const Distribution a = distribution({1, 1, 1, 2, 5, 5});
  const Distribution b = weighted_distribution({{5, 2}, {1, 3}, {2, 1}});
  CHECK(b.count == 6);
  CHECK(b.mean == Approx(a.mean));
  CHECK(b.std == Approx(a.std));
  CHECK(b.median == Approx(a.median));
  CHECK(b.p90 == Approx(a.p90));
  CHECK(b.p99 == Approx(a.p99));
  CHECK(b.max == a.max);
}

TEST_CASE("goodput counts the completed requests that meet every objective", "[serving][metrics]") {
  // One GPU's worth of queueing: batch cap 1 per GPU, so the ninth request waits a whole request.
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"workload.mtp.acceptance=2", "serving.max_batch_per_gpu=1",
                                                                     "serving.slo.ttft=50ms", "serving.slo.tpot=10ms",
                                                                     "serving.controller.enabled=false"});
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64);
  std::vector<Request> requests;
  for (int i = 0; i < 9; ++i) requests.push_back({i, 0.0, 1000, 10});
  const ServingRun run = run_with(s, requests, model);
  const auto j = serving_json(s, run, model, ServingMemory(s, 1010, 1010, 1));
  CHECK(j["requests"]["completed"] == 9);
  // Eight start at once (one per GPU, TTFT 10 ms); the ninth waits 50 ms, TTFT 60 ms > 50 ms.
  CHECK(j["goodput"]["good_requests"] == 8);
  CHECK(j["goodput"]["requests_per_s"].get<double>() == Approx(8 / 0.100));
  CHECK(j["ttft_s"]["max"].get<double>() == Approx(0.060));
  CHECK(j["concurrency"]["sessions_per_node_max"].get<double>() == 8);
}

TEST_CASE("memory protection keeps requests GPU-only above the host-memory threshold under load", "[serving][memory]") {
  // 200 GB of DRAM per socket, 90% usable: 32K-token requests of ~1.4 GB latent cache each fill
  // it with ~130 per socket, far below what the GPUs' pools could hold.
  const Scenario s = test::serving_scenario(test::kServingEss, {"hardware.cpu.dram_capacity_per_socket=200GB",
                                                                "serving.duration=60s", "serving.arrivals.rate=40/s",
                                                                "serving.arrivals.output_tokens=512"});
  const auto requests = arrivals(*s.serving, s.seed);
  StepModel model;
  model.offload = test::linear_table(0.030, 0.001, 256);
  model.gpu = test::linear_table(0.020, 0.001, 256);
  std::int64_t hi = 0;
  for (const auto& r : requests) hi = std::max(hi, r.prompt_tokens + r.output_tokens);
  const ServingMemory memory(s, 28672 + 512, hi, std::nullopt);
  REQUIRE(memory.fallback_possible());
  const ServingRun run = run_serving(s, requests, model, memory);
  INFO("host peak " << run.host_peak / 1e9 << " GB of budget " << memory.host_budget() / 1e9 << " GB; " << run.fallback_requests
                    << " GPU-only");
  CHECK(run.fallback_requests > 0);
  CHECK(run.host_peak <= memory.host_budget());
  CHECK(run.host_peak > 0.8 * memory.host_budget());  // the threshold is what bound it
  CHECK(run.hbm_peak <= memory.hbm_budget());
  std::int64_t gpu_only = 0;
  for (const auto& r : run.requests) gpu_only += r.admitted >= 0 && !r.offloaded ? 1 : 0;
  CHECK(gpu_only == run.fallback_requests);
}

TEST_CASE("the serving loop conserves memory, drains its queue and never exceeds the cap", "[serving][loop]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"serving.duration=120s", "serving.arrivals.rate=20/s"});
  StepModel model;
  model.gpu = test::linear_table(0.020, 0.001, 64);
  const auto requests = arrivals(*s.serving, s.seed);
  const ServingRun run = run_with(s, requests, model);
  for (const auto& r : run.requests) {
    REQUIRE(r.completed());
    CHECK(r.generated == r.request.output_tokens);
    CHECK(r.admitted >= r.request.arrival);
    CHECK(r.first_token > r.admitted);
    CHECK(r.finish >= r.first_token);
  }
  double t = 0.0;
  for (const auto& st : run.steps) {
    REQUIRE(st.start >= t);  // time monotonic
    CHECK(st.batch_max <= st.cap);
    t = st.start + st.time;
  }
}

TEST_CASE("a request that no empty GPU can hold is a ConfigError naming the arrivals", "[serving][loop]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"serving.arrivals.prompt_tokens=2000000"});
  StepModel model;
  model.gpu = test::linear_table(0.020, 0.001, 64);
  const std::vector<Request> requests = {{0, 0.0, 2000000, 10}};
  try {
    (void)run_with(s, requests, model);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.pointer() == "/serving/arrivals");
    CHECK_THAT(e.message(), Catch::Contains("of HBM for its caches"));
  }
}
