#include "kernels/runner/access_plan.h"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tests/scratch_dir.h"

using ess::ReplayAccess;
using ess::TraceStep;
using ess::runner::AccessPlanError;
using ess::runner::AccessPlanner;
using ess::runner::check_access_trace;
using ess::runner::check_against_simulator;
using ess::runner::RunnerOptions;
using ess::runner::StepAccess;
using Positions = std::vector<std::int64_t>;

namespace {

// Selections written out by hand: (step, request) -> positions, the same in every layer.
class FixedAccess final : public ess::AccessModel {
 public:
  explicit FixedAccess(std::map<std::pair<int, int>, Positions> picks) : picks_(std::move(picks)) {}
  void select(int step, int, int request, std::int64_t, std::vector<std::int64_t>& out) override {
    out = picks_.at({step, request});
  }

 private:
  std::map<std::pair<int, int>, Positions> picks_;
};

// 1 layer, 2 requests, top_k 3; steps -2 (context 8), -1 (9), 0 (10), 1 (11).
std::map<std::pair<int, int>, Positions> picks() {
  return {
      {{-3, 0}, {0, 1, 2}}, {{-3, 1}, {4, 5, 6}},
      {{-2, 0}, {0, 1, 2}}, {{-1, 0}, {1, 2, 3}}, {{0, 0}, {2, 3, 4}}, {{1, 0}, {0, 4, 5}},
      {{-2, 1}, {5, 6, 7}}, {{-1, 1}, {6, 7, 8}}, {{0, 1}, {7, 8, 9}}, {{1, 1}, {8, 9, 10}},
  };
}

std::vector<TraceStep> steps() { return {{-2, 8}, {-1, 9}, {0, 10}, {1, 11}}; }

RunnerOptions options() {
  RunnerOptions o;
  o.layers = 1;
  o.batch = 2;
  o.top_k = 3;
  o.context = 10;
  o.steps = 2;
  o.warmup_steps = 1;
  o.pool_entries = 4;
  o.eviction = "lru";
  o.eviction_params.set("heat_decay", 0.5);
  return o;
}

struct TraceFile {
  ess::test::ScratchDir dir{"ess-runner-access"};
  std::filesystem::path path = dir.path() / "a.esstrace";
  explicit TraceFile(const std::vector<TraceStep>& recorded = steps(), int layers = 1) {
    FixedAccess model(picks());
    ess::write_access_trace(path, model, layers, 2, 3, recorded);
  }
};

std::string check_error(const RunnerOptions& o, const std::vector<TraceStep>& recorded = steps()) {
  TraceFile file(recorded);
  const ReplayAccess trace(file.path);
  try {
    (void)check_access_trace(trace, o);
  } catch (const AccessPlanError& e) {
    const std::string text = e.what();
    return text.substr(text.find(": ") + 2);  // without the file name
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a trace with warm-up windows and the recorded steps is accepted") {
  TraceFile file;
  const ReplayAccess trace(file.path);
  CHECK(check_access_trace(trace, options()) == 2);
}

TEST_CASE("a trace that does not fit the command line is refused precisely") {
  auto o = options();
  o.layers = 2;
  CHECK(check_error(o) == "the trace has 1 layers, --layers is 2");
  o = options();
  o.batch = 3;
  CHECK(check_error(o) == "the trace has 2 requests, --batch is 3 (the runner replays one recorded request per "
                          "request of the batch)");
  o = options();
  o.top_k = 4;
  CHECK(check_error(o) == "the trace has top_k 3, --top-k is 4");
  o = options();
  o.steps = 3;
  CHECK(check_error(o) == "step 2 is missing (the trace holds 4 steps, -2 to 1); --steps 3 needs steps 0 to 2");
  o = options();
  o.context = 9;  // step 0 was recorded at 10
  o.warmup_steps = 0;
  CHECK(check_error(o, {{0, 10}, {1, 11}}) ==
        "step 0 was recorded at context 10, but the runner runs it at --context + step = 9");
  o = options();
  o.warmup_steps = 3;
  CHECK(check_error(o) == "the trace holds 2 warm-up steps (negative steps), --warmup-steps 3 needs steps -3 to -1");
  CHECK(check_error(options(), {{-3, 7}, {-1, 9}, {0, 10}, {1, 11}}) ==
        "the trace's 2 warm-up steps are not exactly -2 to -1 (step -2 is missing; it holds 4 steps, -3 to 1)");
  CHECK(check_error(options(), {{-2, 9}, {-1, 9}, {0, 10}, {1, 11}}) ==
        "warm-up step -2 was recorded at context 9, but the pool warm-up runs it at --context - 2 = 8");
}

TEST_CASE("steps after the last recorded one are ignored") {
  auto o = options();
  o.steps = 1;
  CHECK(check_error(o) == "(no error)");
}

TEST_CASE("the planner replays the pools as the simulator does, window by window") {
  // Pool of 4 entries (lru), no pinned window. Request 0:
  //  window -2 (pool only): {0,1,2} all miss -> pool {0,1,2}
  //  step -1 (GPU warm-up): {1,2,3}: 3 misses -> pool {0,1,2,3}
  //  step 0: {2,3,4}: 4 misses, the pool is full: evict the least recently selected, 0
  //  step 1: {0,4,5}: 0 and 5 miss (two runs); evict 1 (last selected at -1), then 2 (selected
  //          at step 0 with 3, earlier in position order)
  // Request 1: {5,6,7} -> {6,7,8} misses 8 -> {7,8,9} misses 9, evicts 5 -> {8,9,10} misses 10, evicts 6.
  TraceFile file;
  AccessPlanner planner(options(), file.path);
  CHECK(planner.warmup_windows() == 2);
  CHECK(planner.gpu_steps() == std::vector<int>{-1, 0, 1});

  const StepAccess warm = planner.next();
  CHECK(warm.step == -1);
  CHECK(warm.context == 9);
  CHECK(warm.capacity == 4);
  CHECK(warm.layers[0][0].selected == Positions{1, 2, 3});
  CHECK(warm.layers[0][0].missed == Positions{3});
  CHECK(warm.layers[0][1].missed == Positions{8});

  const StepAccess s0 = planner.next();
  CHECK(s0.step == 0);
  CHECK(s0.context == 10);
  CHECK(s0.layers[0][0].missed == Positions{4});
  CHECK(s0.layers[0][0].result.evictions == 1);
  CHECK(s0.layers[0][0].result.hits == 2);
  CHECK(s0.layers[0][1].missed == Positions{9});
  CHECK(s0.misses(0) == 2);

  const StepAccess s1 = planner.next();
  CHECK(s1.layers[0][0].missed == Positions{0, 5});
  CHECK(s1.layers[0][0].result.runs == 2);
  CHECK(s1.layers[0][0].result.evictions == 2);
  CHECK(s1.layers[0][1].missed == Positions{10});
  CHECK_THROWS_AS(planner.next(), std::logic_error);
}

TEST_CASE("a pinned window makes recent entries hits that never enter the pool") {
  // pinned_recent 2: at context c, positions >= c - 2 are resident without the pool.
  // Request 1: window -2 (ctx 8, pinned 6, 7): 5 misses. Step -1 (ctx 9, pinned 7, 8): 6 misses.
  // Step 0 (ctx 10, pinned 8, 9): 7 was only ever selected while pinned, so it misses now.
  // Step 1 (ctx 11, pinned 9, 10): 8 misses for the same reason.
  TraceFile file;
  auto o = options();
  o.pinned_recent = 2;
  AccessPlanner planner(o, file.path);
  CHECK(planner.next().layers[0][1].missed == Positions{6});
  const StepAccess s0 = planner.next();
  CHECK(s0.layers[0][1].missed == Positions{7});
  CHECK(s0.layers[0][1].result.pinned_hits == 2);
  CHECK(planner.next().layers[0][1].missed == Positions{8});
}

TEST_CASE("without GPU warm-up steps every window only fills the pools") {
  TraceFile file;
  auto o = options();
  o.warmup_steps = 0;
  AccessPlanner planner(o, file.path);
  CHECK(planner.gpu_steps() == std::vector<int>{0, 1});
  const StepAccess s0 = planner.next();
  CHECK(s0.step == 0);
  CHECK(s0.layers[0][0].missed == Positions{4});  // the same pools as with a GPU warm-up step
}

TEST_CASE("the cross-check with the simulator fails on any difference") {
  StepAccess mine;
  mine.step = 3;
  mine.capacity = 4;
  mine.layers.resize(1, std::vector<ess::runner::RequestAccess>(2));
  mine.layers[0][0].result = {2, 0, 1, 1, 0};  // hits, pinned hits, misses, runs, evictions
  mine.layers[0][1].result = {1, 0, 2, 2, 1};
  ess::CacheStepStats theirs;
  theirs.capacity = 4;
  // Means over 2 requests: misses 1.5, hits 1.5, runs 1.5, evictions 0.5.
  theirs.layers = {ess::LayerStats{1.5, 0.5, 1.5, 1.5, 0.5, 2}};
  CHECK_NOTHROW(check_against_simulator(mine, theirs));
  auto wrong = theirs;
  wrong.layers[0].misses_mean = 1.0;
  CHECK_THROWS_WITH(check_against_simulator(mine, wrong),
                    Catch::Contains("step 3, layer 0: mean misses per request 1.500000 here, 1.000000"));
  wrong = theirs;
  wrong.layers[0].evictions_mean = 1.0;
  CHECK_THROWS_AS(check_against_simulator(mine, wrong), AccessPlanError);
  wrong = theirs;
  wrong.capacity = 5;
  CHECK_THROWS_WITH(check_against_simulator(mine, wrong), Catch::Contains("pool capacity"));
}
