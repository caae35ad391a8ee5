// The engine's recorders (sim/engine/recorder.h, recorders.h): the per-op recorder holds what the
// Chrome trace shows of GPU 0 (the derivation `ess-sim validate` used before it read the recorder),
// and a recorder sees every operator of every step the plans hold.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/engine/engine_actors.h"
#include "sim/engine/offload_source.h"
#include "sim/engine/preflight.h"
#include "sim/engine/recorder.h"
#include "sim/engine/simulation.h"
#include "sim/engine/step_plans.h"
#include "sim/graph/decode_step.h"
#include "tests/engine/test_scenarios.h"

namespace {

const std::string kRunnerScenario = std::string(ESS_SOURCE_DIR) + "/validate/scenarios/runner-h200.json";

ess::Scenario runner_scenario(const std::vector<std::string>& sets) {
  std::vector<ess::Override> overrides;
  for (const auto& s : sets) overrides.push_back(ess::parse_override(s));
  return ess::load_scenario(kRunnerScenario, overrides);
}

// "L12 fetch_overlap" -> "fetch_overlap".
std::string op_name(const std::string& name) {
  if (name.size() > 2 && name[0] == 'L' && std::isdigit(static_cast<unsigned char>(name[1])) != 0) {
    const auto space = name.find(' ');
    if (space != std::string::npos) return name.substr(space + 1);
  }
  return name;
}

// GPU 0's ops per step as its Chrome trace shows them: the slices of its compute stream (kernels;
// "segment" slices name the layer) and of its PCIe links, except waits, each step's by start time.
std::vector<ess::StepOpTimes> ops_from_trace(const ess::RunResult& r) {
  std::vector<ess::StepOpTimes> out(r.gpu_steps.size());
  const nlohmann::json trace = nlohmann::json::parse(r.trace.to_json());
  int gpu_pid = -1;
  int pcie_pid = -1;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      if (e.at("args").at("name") == "GPU 0") gpu_pid = e.at("pid").get<int>();
      if (e.at("args").at("name") == "PCIe links") pcie_pid = e.at("pid").get<int>();
    }
  }
  std::set<std::pair<int, int>> tracks;
  std::pair<int, int> compute{-1, -1};
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M" || e.at("name") != "thread_name") continue;
    const std::string n = e.at("args").at("name").get<std::string>();
    const std::pair<int, int> t{e.at("pid").get<int>(), e.at("tid").get<int>()};
    if (t.first == gpu_pid && n == "compute stream") compute = t;
    if (t == compute || (t.first == pcie_pid && (n == "GPU 0 h2d" || n == "GPU 0 d2h"))) tracks.insert(t);
  }
  REQUIRE(compute.first > 0);
  std::vector<int> max_layer(out.size(), -1);
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const std::pair<int, int> t{e.at("pid").get<int>(), e.at("tid").get<int>()};
    if (!tracks.contains(t)) continue;
    const std::string cat = e.at("cat").get<std::string>();
    if (cat == "exposed" || cat == "idle") continue;
    const double ts = e.at("ts").get<double>() * 1e-6;
    std::size_t s = 0;
    while (s + 1 < out.size() && ts >= r.gpu_steps[s + 1][0].start - 1e-12) ++s;
    if (cat == "segment") {
      max_layer[s] = std::max(max_layer[s], e.at("args").at("layer").get<int>());
      continue;
    }
    out[s].seconds[op_name(e.at("name").get<std::string>())] += e.at("dur").get<double>() * 1e-6;
    if (t == compute) {
      for (std::size_t c = 0; c < ess::kOpCategoryCount; ++c) {
        if (cat == ess::to_string(static_cast<ess::OpCategory>(c))) ++out[s].kernels[c];
      }
    }
  }
  for (std::size_t s = 0; s < out.size(); ++s) out[s].layers = max_layer[s] + 1;
  return out;
}

void check_op_times_match_trace(const ess::Scenario& scenario) {
  ess::SimulationOptions options{4, 4};
  options.record_ops_of_gpu = 0;
  const ess::RunResult r = ess::Simulation(scenario, options).run();
  REQUIRE(r.op_times.size() == 4);
  const auto expected = ops_from_trace(r);
  for (std::size_t s = 0; s < expected.size(); ++s) {
    INFO("step " << s);
    const auto& got = r.op_times[s];
    CHECK(got.layers == expected[s].layers);
    CHECK(got.kernels == expected[s].kernels);
    std::set<std::string> names;
    for (const auto& [name, sec] : got.seconds) names.insert(name);
    for (const auto& [name, sec] : expected[s].seconds) names.insert(name);
    for (const auto& name : names) {
      INFO(name);
      REQUIRE(got.seconds.count(name) == 1);
      REQUIRE(expected[s].seconds.count(name) == 1);
      // The trace rounds each slice's ends to the picosecond.
      CHECK(got.seconds.at(name) == Approx(expected[s].seconds.at(name)).epsilon(1e-9).margin(1e-10));
    }
  }
}

}  // namespace

TEST_CASE("the per-op recorder holds GPU 0's ops as its Chrome trace shows them") {
  SECTION("on-demand fetches beside attention over the hits, write-backs") {
    const auto s = runner_scenario({});
    check_op_times_match_trace(s);
    const auto r = [&] {
      ess::SimulationOptions o{2, 0};
      o.record_ops_of_gpu = 0;
      return ess::Simulation(s, o).run();
    }();
    // The runner's op names (kernels/runner/timeline.cpp).
    for (const char* name : {"q_a_kv_a", "indexer_topk", "sparse_mla_hits", "fetch_overlap", "writeback", "lm_head"}) {
      INFO(name);
      CHECK(r.op_times.at(0).seconds.count(name) == 1);
    }
  }
  SECTION("layer-ahead prefetch") {
    check_op_times_match_trace(runner_scenario({"cache.prefetch.policy=layer-ahead", "cache.prefetch.predictor=previous-layer",
                                                "cache.prefetch.buffer_entries=512"}));
  }
  SECTION("serial fetches") { check_op_times_match_trace(runner_scenario({"cache.overlap=serial"})); }
}

TEST_CASE("the per-op recorder is off unless asked for, and refuses a GPU the run does not have") {
  const auto s = runner_scenario({});
  CHECK(ess::Simulation(s, {1, 0}).run().op_times.empty());
  ess::SimulationOptions o{1, 0};
  o.record_ops_of_gpu = 1;
  CHECK_THROWS_WITH(ess::Simulation(s, o).run(), Catch::Contains("record_ops_of_gpu is 1, the run has 1 GPUs"));
}

namespace {

// Counts what it is told, per step and GPU.
class Counting final : public ess::RunRecorder {
 public:
  struct Seen {
    std::array<std::size_t, ess::kOpCategoryCount> ops{};
    int collectives = 0;
    int writebacks = 0;
    int prefetch_waits = 0;
    int begins = 0;
    int ends = 0;
  };
  std::map<std::pair<int, int>, Seen> seen;

  void step_begins(int step, int gpu, double) override { ++seen[{step, gpu}].begins; }
  void compute(int step, int gpu, const ess::Segment& seg, double, double, ess::SmSharers) override { count(step, gpu, seg); }
  void stage(int step, int gpu, const ess::Segment& seg, const ess::StageRun&) override { count(step, gpu, seg); }
  void prefetch_waited(int step, int gpu, const ess::Segment&, const ess::TransferRun&, double, double) override {
    ++seen[{step, gpu}].prefetch_waits;
  }
  void writeback_done(int step, int gpu, int, const ess::TransferRun&) override { ++seen[{step, gpu}].writebacks; }
  void collective(int step, int gpu, const ess::Segment&, const ess::CollectiveRun&, bool) override {
    ++seen[{step, gpu}].collectives;
  }
  void step_ends(int step, int gpu, const ess::StepPlan&, double, double) override { ++seen[{step, gpu}].ends; }

 private:
  void count(int step, int gpu, const ess::Segment& seg) {
    for (const auto& op : seg.ops) ++seen[{step, gpu}].ops[static_cast<std::size_t>(op.category)];
  }
};

// What the step plans hold, counted the same way.
Counting::Seen planned(const ess::GpuStepPlan& plan) {
  Counting::Seen s;
  for (const auto& seg : plan.segments) {
    for (const auto& op : seg.ops) ++s.ops[static_cast<std::size_t>(op.category)];
    s.collectives += seg.kind == ess::SegmentKind::alltoall || seg.kind == ess::SegmentKind::allreduce;
    s.writebacks += seg.kind == ess::SegmentKind::writeback;
    s.prefetch_waits += seg.kind == ess::SegmentKind::prefetch_wait;
  }
  s.begins = 1;
  s.ends = 1;
  return s;
}

void check_recorder_sees_every_op(const ess::Scenario& scenario, std::int64_t steps) {
  const ess::DecodeRun run = ess::decode_run(scenario);
  ess::Preflight checked = ess::preflight(run, steps, 0, {});
  const bool offload = run.offload();
  const auto& placement = checked.memory.placement;
  const ess::DecodeStepBuilder builder(run, checked.batch_per_gpu, offload ? placement.offloaded : 0,
                                       placement.cold_fraction);
  std::vector<std::vector<Counting::Seen>> expected;
  {
    // The same plans, built apart (each step has its own random stream; the cache simulation is deterministic).
    ess::OffloadSource source(run, builder, steps, {}, std::move(checked.access));
    ess::PlanCache plans(builder, scenario.seed, builder.gpus(), source.access());
    for (int step = 0; step < steps; ++step) {
      auto& per_gpu = expected.emplace_back();
      for (const auto& g : plans.get(step).gpus) per_gpu.push_back(planned(g));
    }
  }
  ess::Preflight again = ess::preflight(run, steps, 0, {});
  ess::OffloadSource source(run, builder, steps, {}, std::move(again.access));
  ess::PlanCache plans(builder, scenario.seed, builder.gpus(), source.access());
  Counting counting;
  (void)ess::run_engine(run, offload, plans, steps, true, counting);
  REQUIRE(counting.seen.size() == static_cast<std::size_t>(steps * builder.gpus()));
  for (int step = 0; step < steps; ++step) {
    for (int gpu = 0; gpu < builder.gpus(); ++gpu) {
      INFO("step " << step << ", GPU " << gpu);
      const auto& got = counting.seen.at({step, gpu});
      const auto& want = expected[static_cast<std::size_t>(step)][static_cast<std::size_t>(gpu)];
      CHECK(got.ops == want.ops);
      CHECK(got.collectives == want.collectives);
      CHECK(got.writebacks == want.writebacks);
      CHECK(got.prefetch_waits == want.prefetch_waits);
      CHECK(got.begins == 1);
      CHECK(got.ends == 1);
    }
  }
}

}  // namespace

TEST_CASE("a recorder sees every operator, collective, write-back and prefetch wait of every step") {
  SECTION("two GPUs, expert parallelism") {
    check_recorder_sees_every_op(ess::test::load({{"model", ess::test::one_layer_model(true)},
                                                  {"hardware", ess::test::overhead_only_hardware(2)},
                                                  {"parallelism", {{"attention_dp", 2}, {"expert_parallel", 2}}},
                                                  {"workload", {{"batch_per_gpu", 2}, {"context_length", 8}, {"decode_steps", 2}}}}),
                                 2);
  }
  SECTION("two GPUs, two micro-batches") {
    check_recorder_sees_every_op(ess::test::load({{"model", ess::test::one_layer_model(true)},
                                                  {"hardware", ess::test::overhead_only_hardware(2)},
                                                  {"parallelism", {{"attention_dp", 2}, {"expert_parallel", 2}}},
                                                  {"execution", {{"micro_batches", 2}}},
                                                  {"workload", {{"batch_per_gpu", 2}, {"context_length", 8}, {"decode_steps", 2}}}}),
                                 2);
  }
  SECTION("offload with layer-ahead prefetch") {
    check_recorder_sees_every_op(runner_scenario({"cache.prefetch.policy=layer-ahead", "cache.prefetch.predictor=previous-layer",
                                                  "cache.prefetch.buffer_entries=512"}),
                                 2);
  }
}
