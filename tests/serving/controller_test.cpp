#include "sim/serving/controller.h"

#include <catch2/catch.hpp>

#include "sim/serving/arrivals.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_memory.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

ControllerConfig config(double target, std::int64_t window = 4) {
  ControllerConfig c;
  c.p99_target = Seconds(target);
  c.window = window;
  return c;
}

// The largest window P99 (consecutive windows of `window` steps) among steps starting at or
// after `from` seconds.
double worst_window_p99(const ServingRun& run, std::int64_t window, double from) {
  double worst = 0.0;
  std::vector<double> part;
  for (const auto& s : run.steps) {
    if (s.start < from) continue;
    part.push_back(s.time);
    if (static_cast<std::int64_t>(part.size()) == window) {
      worst = std::max(worst, nearest_rank(part, 0.99));
      part.clear();
    }
  }
  return worst;
}

// Step time 20 ms + 2 ms per request on the fullest GPU: 148 ms at the memory bound of 64, under
// a 100 ms target up to 40 (under 90 ms, the controller's headroom, up to 35).
struct LoadStep {
  Scenario s;
  std::vector<Request> requests;
  StepModel model;
  ServingRun run;
};

LoadStep load_step(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"serving.duration=120s",
                                   "serving.drain_limit=0s",
                                   "serving.arrivals.rate=10/s",
                                   R"(serving.arrivals.rate_changes=[{"at": "60s", "rate": "150/s"}])",
                                   "serving.arrivals.prompt_tokens=1024",
                                   "serving.arrivals.output_tokens=64",
                                   "serving.max_batch_per_gpu=64",
                                   "serving.controller.p99_target=100ms",
                                   "serving.controller.window=32"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  LoadStep l{test::serving_scenario(test::kServingBaseline, sets), {}, {}, {}};
  l.requests = arrivals(*l.s.serving, l.s.seed);
  l.model.gpu = test::linear_table(0.020, 0.002, 64);
  const ServingMemory memory(l.s, 1024 + 64, 1024 + 64, l.s.serving->max_batch_per_gpu);
  REQUIRE(memory.batch_bound() == 64);
  l.run = run_serving(l.s, l.requests, l.model, memory);
  return l;
}

}  // namespace

TEST_CASE("the controller cuts the cap to a fraction of the observed batch when the window P99 passes its headroom",
          "[serving][controller]") {
  BatchController c(config(0.100), 40, 64);
  CHECK(c.cap() == 40);
  for (int i = 0; i < 4; ++i) c.observe(i, 0.095, 40, true);  // 95 ms > 0.9 x 100 ms
  CHECK(c.cap() == 30);  // floor(40 x 0.75)
  REQUIRE(c.changes().size() == 2);
  CHECK(c.changes().back().p99 == 0.095);
  // Requests admitted before the cut still decode at batch 40: it waits for them to leave.
  for (int i = 0; i < 8; ++i) c.observe(4 + i, 0.095, 40, true);
  CHECK(c.cap() == 30);
  // Under the headroom, with the cap holding requests back in most steps: one more.
  for (int i = 0; i < 4; ++i) c.observe(12 + i, 0.050, 30, true);
  CHECK(c.cap() == 31);
  // Under the headroom but the cap never binds (no queue): it stays.
  for (int i = 0; i < 8; ++i) c.observe(16 + i, 0.050, 10, false);
  CHECK(c.cap() == 31);
}

TEST_CASE("a disabled controller keeps the cap at the admission bound", "[serving][controller]") {
  ControllerConfig cfg = config(0.010);
  cfg.enabled = false;
  BatchController c(cfg, 5, 64);
  for (int i = 0; i < 16; ++i) c.observe(i, 1.0, 64, true);
  CHECK(c.cap() == 64);
  CHECK(c.changes().size() == 1);
}

TEST_CASE("the adaptive controller holds its P99 target on a load step", "[serving][controller]") {
  // Starting from the admission bound, the feedback alone must find the cap.
  for (const char* initial : {"model", "max"}) {
    INFO("controller.initial_cap = " << initial);
    const LoadStep l = load_step({std::string("serving.controller.initial_cap=") + initial});
    // The load step fills the batch: the cap binds (a queue) after 60 s.
    std::int64_t busiest = 0;
    for (const auto& s : l.run.steps) busiest = std::max<std::int64_t>(busiest, s.batch_max);
    CHECK(busiest >= 30);
    // Settled 20 s after the step (64-token requests decode in ~40 steps of ~90 ms), every window
    // holds the target.
    const double worst = worst_window_p99(l.run, 32, 80.0);
    INFO("worst window P99 after settling: " << worst * 1e3 << " ms (target 100 ms); cap moves " << l.run.cap_changes.size() - 1);
    CHECK(worst <= 0.100);
    CHECK(worst > 0.060);  // it is loaded, not idle
    if (std::string(initial) == "max") CHECK(l.run.cap_changes.size() > 1);
  }
}

TEST_CASE("without the controller the same load step violates the target (the check can fail)", "[serving][controller]") {
  const LoadStep l = load_step({"serving.controller.enabled=false"});
  const double worst = worst_window_p99(l.run, 32, 80.0);
  INFO("worst window P99 after the step, controller off: " << worst * 1e3 << " ms (target 100 ms)");
  CHECK(worst > 0.100);
}
