// Fixed-concurrency benchmarks (serving.arrivals.process "concurrency"): the closed loop's
// requests, its arrivals following completions worked out by hand on constant tables, its limit,
// and its configuration errors.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/config/config_error.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_metrics.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

// The bundled benchmark with prompts prefilled elsewhere (prefill "none"), one token per step, a
// fixed cap: `concurrency` in flight, `requests` in all, fixed lengths.
Scenario closed_loop(std::int64_t concurrency, std::int64_t requests, std::vector<std::string> more = {}) {
  std::vector<std::string> sets = {"serving.prefill={\"mode\":\"none\"}", "workload.mtp.depth=1", "workload.mtp.acceptance=1",
                                   "serving.controller.enabled=false", "serving.arrivals.prompt_tokens=1000",
                                   "serving.arrivals.output_tokens=5",
                                   "serving.arrivals.concurrency=" + std::to_string(concurrency),
                                   "serving.arrivals.requests=" + std::to_string(requests)};
  sets.insert(sets.end(), more.begin(), more.end());
  return test::serving_scenario(test::kServingBaselineConcurrency, sets);
}

ServingRun run_closed(const Scenario& s, const StepModel& model) {
  const auto requests = arrivals(*s.serving, s.seed);
  const ServingMemory memory(s, 1005, 1005, s.serving->max_batch_per_gpu);
  return run_serving(s, requests, model, memory);
}

std::string closed_loop_error(const std::vector<std::string>& sets) {
  try {
    (void)test::serving_scenario(test::kServingBaselineConcurrency, sets);
  } catch (const ConfigError& e) {
    return e.pointer() + ": " + e.message();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a closed loop sends its first requests at 0 and the rest when they are due", "[serving][closed-loop]") {
  const Scenario s = closed_loop(3, 10);
  const auto requests = arrivals(*s.serving, s.seed);
  REQUIRE(requests.size() == 10);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CHECK(requests[i].id == static_cast<std::int64_t>(i));
    CHECK(requests[i].arrival == (i < 3 ? 0.0 : kNotSent));
    CHECK(requests[i].prompt_tokens == 1000);
    CHECK(requests[i].output_tokens == 5);
  }
  // Lengths drawn from the bundled ranges, the same on every call (their own streams).
  const Scenario bundled = test::serving_scenario(test::kServingBaselineConcurrency, {});
  const auto a = arrivals(*bundled.serving, bundled.seed);
  const auto b = arrivals(*bundled.serving, bundled.seed);
  REQUIRE(a.size() == 512);
  bool varied = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].prompt_tokens == b[i].prompt_tokens);
    CHECK(a[i].prompt_tokens >= 28672);
    CHECK(a[i].prompt_tokens <= 32768);
    varied = varied || a[i].output_tokens != a[0].output_tokens;
  }
  CHECK(varied);
}

TEST_CASE("concurrency 1: each request is sent the moment the one before finishes", "[serving][closed-loop]") {
  const Scenario s = closed_loop(1, 3);
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  const ServingRun run = run_closed(s, model);
  // 5 tokens, one per 10 ms step: r0 runs [0, 0.05], r1 [0.05, 0.10], r2 [0.10, 0.15].
  REQUIRE(run.requests.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& r = run.requests[i];
    CHECK(r.request.arrival == Approx(0.05 * static_cast<double>(i)));
    CHECK(r.admitted == Approx(0.05 * static_cast<double>(i)));
    CHECK(r.first_token == Approx(0.05 * static_cast<double>(i) + 0.010));
    CHECK(r.finish == Approx(0.05 * static_cast<double>(i + 1)));
  }
  CHECK(run.steps.size() == 15);
  CHECK(run.idle_time == 0.0);
  const auto j = serving_json(s, run, model, ServingMemory(s, 1005, 1005, std::nullopt));
  CHECK(j["period_s"].is_null());
  CHECK(j["closed_loop"]["concurrency"] == 1);
  CHECK(j["requests"]["arrived"] == 3);
  CHECK(j["ttft_s"]["mean"].get<double>() == Approx(0.010));
  CHECK(j["duration_s"].get<double>() == Approx(0.15));
  CHECK(j["throughput"]["output_tokens_per_s"].get<double>() == Approx(15 / 0.15));
}

TEST_CASE("a closed loop never has more requests in flight than its concurrency", "[serving][closed-loop]") {
  const Scenario s = closed_loop(4, 40, {"serving.arrivals.output_tokens={\"min\":2,\"max\":9}"});
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.002, 64);
  const ServingRun run = run_closed(s, model);
  std::int64_t peak = 0;
  for (const auto& st : run.steps) {
    CHECK(st.active + st.queued <= 4);
    peak = std::max<std::int64_t>(peak, st.active);
  }
  CHECK(peak == 4);
  // Every request after the first four arrives at another's finish.
  std::vector<double> finishes;
  for (const auto& r : run.requests) {
    REQUIRE(r.completed());
    finishes.push_back(r.finish);
  }
  for (std::size_t i = 4; i < run.requests.size(); ++i) {
    const double t = run.requests[i].request.arrival;
    CHECK(std::count_if(finishes.begin(), finishes.end(), [t](double f) { return f == t; }) >= 1);
    CHECK(t >= run.requests[i - 1].request.arrival);
  }
}

TEST_CASE("a closed loop stops at its limit and counts the requests it never finished", "[serving][closed-loop]") {
  // 10 requests one at a time, 50 ms each, stopped at 0.12 s: r0 and r1 finish, r2 is in flight.
  const Scenario s = closed_loop(1, 10, {"serving.drain_limit=0.12s"});
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64);
  const ServingRun run = run_closed(s, model);
  const auto j = serving_json(s, run, model, ServingMemory(s, 1005, 1005, std::nullopt));
  CHECK(j["requests"]["completed"] == 2);
  CHECK(j["requests"]["arrived"] == 3);
  CHECK(j["requests"]["incomplete"] == 8);
  CHECK(run.requests[3].request.arrival == kNotSent);
}

TEST_CASE("closed-loop configuration errors name the field", "[serving][closed-loop][config]") {
  CHECK_THAT(closed_loop_error({"serving.duration=600s"}),
             Catch::StartsWith("/serving/duration: ") && Catch::Contains("runs until its requests finish"));
  CHECK_THAT(closed_loop_error({"serving.prefill={\"mode\":\"disaggregated\",\"instances\":2}"}),
             Catch::StartsWith("/serving/prefill/mode: ") && Catch::Contains("prefill \"none\" or \"colocated\""));
  CHECK_THAT(closed_loop_error({"serving.arrivals.concurrency=0"}), Catch::StartsWith("/serving/arrivals/concurrency: "));
  CHECK_THAT(closed_loop_error({"serving.arrivals.requests=2.5"}), Catch::StartsWith("/serving/arrivals/requests: "));
  CHECK_THAT(closed_loop_error({"serving.arrivals.process=concurency"}), Catch::Contains("did you mean \"concurrency\""));
  CHECK_THAT(closed_loop_error({"serving.arrivals.rate=2/s"}), Catch::Contains("unknown key \"rate\""));
  CHECK(closed_loop_error({}) == "no error");
  CHECK(test::serving_scenario(test::kServingBaselineConcurrency, {}).serving->drain_limit.value() == 86400.0);
}
