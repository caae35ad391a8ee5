// Contracts around the GPU runner: the configuration line `ess-sim validate --prepare` prints (and
// validate/prepare-configs.sh collects into configs.txt) parses in ess-runner's option parser
// (kernels/runner/options.h) with the scenario's values; the trace ess-runner writes for it
// (kernels/runner: timeline + trace_file, fed with synthetic event times) is read by `ess-sim
// validate` (validate/trace.h) and accepted as that scenario's run, op names aligned with the
// simulation's; and the shapes file prepare writes is what ess-bench's --gemm-shapes reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../cli/cli_run.h"
#include "../scratch_dir.h"
#include "kernels/bench/gemm_shapes.h"
#include "kernels/runner/options.h"
#include "kernels/runner/timeline.h"
#include "kernels/runner/trace_file.h"
#include "kernels/runner/version.h"
#include "sim/config/scenario.h"
#include "sim/graph/weight_gemms.h"
#include "validate/compare.h"
#include "validate/prepare.h"
#include "validate/trace.h"
#include "sim/base/error.h"

namespace {

const std::string kRunnerScenario = std::string(ESS_SOURCE_DIR) + "/validate/scenarios/runner-h200.json";

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// `ess-sim validate --prepare` as prepare-configs.sh runs it: the printed line, "NAME ARGS...".
std::string prepare_line(const std::filesystem::path& dir, const std::string& name, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"validate", "--scenario", kRunnerScenario};
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  for (const std::string& a : {std::string("--prepare"), dir.string(), std::string("--name"), name}) args.push_back(a);
  const ess::test::CliRun r = ess::test::run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return r.out;
}

// The runner's options from a prepared line, as run-runner-on-device.sh runs it (plus --out).
ess::runner::RunnerOptions parse_line(const std::string& line, const std::string& name) {
  std::vector<std::string> w = words(line);
  REQUIRE(w.size() > 1);
  CHECK(w.front() == name);
  w.erase(w.begin());
  w.push_back("--out");
  w.push_back(name + ".trace.json");
  const ess::runner::Command c = ess::runner::parse_command_line(w);
  REQUIRE(c.action == ess::runner::Command::Action::run);
  return c.options;
}

// A trace the runner would write for `o`: every layer fetches, each op 10 us after the last.
std::string synthetic_trace(const ess::runner::RunnerOptions& o, const std::vector<ess::runner::OpRecord>& drop = {}) {
  std::vector<ess::runner::TraceEvent> events;
  double t_ms = 0.0;
  for (int step = 0; step < static_cast<int>(o.steps); ++step) {
    ess::runner::StepTimeline tl(step);
    std::vector<double> event_ms;
    for (ess::runner::OpRecord op :
         ess::runner::expected_step_ops(o.overlap, std::vector<bool>(static_cast<std::size_t>(o.layers), true))) {
      const bool dropped = std::any_of(drop.begin(), drop.end(), [&](const ess::runner::OpRecord& d) {
        return d.name == op.name && d.layer == op.layer;
      });
      if (dropped) continue;
      op.start_event = tl.take_event();
      event_ms.push_back(t_ms);
      t_ms += 0.01;
      op.end_event = tl.take_event();
      event_ms.push_back(t_ms);
      tl.add(op);
    }
    const auto step_events = tl.resolve(event_ms);
    events.insert(events.end(), step_events.begin(), step_events.end());
    t_ms += 0.05;  // a gap between steps
  }
  ess::runner::TraceInfo info;
  info.tool = std::string("ess-runner ") + ess::runner::kRunnerVersion;
  info.gpu = "NVIDIA H200";
  info.driver = "580.159.03";
  info.cuda_runtime = "13.0";
  info.cublas = "13.1.0";
  info.date = "2026-12-01T10:00:00Z";
  info.host = "gpu-host";
  info.scenario_sha256 = o.scenario_sha256;
  info.config = ess::runner::config_fields(o);
  return ess::runner::render_trace(events, info);
}

}  // namespace

TEST_CASE("prepare's configuration lines parse in ess-runner's option parser", "[contract]") {
  ess::test::ScratchDir dir("ess-contract-prepare");
  const std::string line = prepare_line(dir.path(), "b4-serial-copy",
                                        {"workload.batch_per_gpu=4", "cache.sampled_requests=4", "cache.overlap=serial",
                                         "cache.transfer=copy", "cache.pool_entries=2048"});
  CHECK(line.back() == '\n');
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);  // one line per configuration
  const ess::runner::RunnerOptions o = parse_line(line, "b4-serial-copy");
  const ess::Scenario s = ess::load_scenario(
      kRunnerScenario, {ess::parse_override("workload.batch_per_gpu=4"), ess::parse_override("cache.sampled_requests=4"),
                        ess::parse_override("cache.overlap=serial"), ess::parse_override("cache.transfer=copy"),
                        ess::parse_override("cache.pool_entries=2048")});
  const auto& a = s.model.attention.mla;
  CHECK(o.layers == s.model.layers);
  CHECK(o.hidden == s.model.hidden);
  CHECK(o.q_lora == a.q_lora_rank);
  CHECK(o.kv_lora == a.kv_lora_rank);
  CHECK(o.heads == s.model.attention.heads);
  CHECK(o.qk_nope == a.qk_nope_head_dim);
  CHECK(o.qk_rope == a.qk_rope_head_dim);
  CHECK(o.v_head == a.v_head_dim);
  CHECK(o.indexer_heads == s.model.indexer->heads);
  CHECK(o.indexer_dim == s.model.indexer->head_dim);
  CHECK(o.top_k == s.model.indexer->top_k);
  CHECK(o.ffn == s.model.dense_intermediate);
  CHECK(o.vocab == s.model.vocab);
  CHECK(o.batch == 4);
  CHECK(o.context == s.workload.context_length);
  CHECK(o.steps == s.workload.decode_steps);
  CHECK(o.pool_entries == 2048);
  CHECK(o.overlap == ess::runner::OverlapMode::serial);
  CHECK(o.transfer == ess::runner::TransferPath::copy);
  CHECK(o.access == "b4-serial-copy.esstrace");  // relative to the list's folder
  CHECK(std::filesystem::exists(dir.path() / o.access));
  REQUIRE(o.scenario_sha256.has_value());
  CHECK(*o.scenario_sha256 == ess::scenario_identity(s));
  // The parser is strict: a line with a misspelt option (as another prepare version might print)
  // is refused, so this contract fails on drift.
  std::string drifted = line;
  drifted.replace(drifted.find("--pool-entries"), 14, "--pool-entry");
  CHECK_THROWS_AS(ess::runner::parse_command_line(words(drifted.substr(drifted.find(' ') + 1))),
                  ess::runner::OptionsError);
}

TEST_CASE("ess-runner's trace of a prepared configuration is read by validate as that scenario's run",
          "[contract]") {
  ess::test::ScratchDir dir("ess-contract-trace");
  const std::string line = prepare_line(dir.path(), "cfg", {});
  const ess::runner::RunnerOptions o = parse_line(line, "cfg");
  const std::string text = synthetic_trace(o);
  const ess::MeasuredTrace t = ess::parse_trace_text(text, "cfg.trace.json", nullptr);
  CHECK(t.format == "ess-runner");
  REQUIRE(t.steps.size() == static_cast<std::size_t>(o.steps));
  CHECK(t.metadata.at("scenario_sha256") == *o.scenario_sha256);
  CHECK(t.metadata.at("config").at("batch") == o.batch);

  // Against the resolved scenario prepare wrote: same identity, same shape (layers and the GEMM
  // and norm ops of every step), and every op name of the trace is one the simulation has.
  const ess::Scenario s = ess::load_scenario((dir.path() / "cfg.scenario.json").string());
  CHECK(ess::scenario_identity(s) == *o.scenario_sha256);
  const ess::SimulatedRun sim = ess::simulate_for_validation(s, static_cast<std::int64_t>(t.steps.size()));
  CHECK_NOTHROW(ess::compare_profiles(t.steps, sim.steps, 0.03));
  REQUIRE(t.ops.size() == sim.ops.size());
  for (std::size_t step = 0; step < t.ops.size(); ++step) {
    for (const auto& [name, seconds] : t.ops[step]) {
      INFO("step " << step << ": runner op " << name);
      CHECK(seconds > 0.0);
      CHECK(sim.ops[step].count(name) == 1);
    }
  }
  // And through the command line: the trace is accepted (0 or 1: within or above the threshold;
  // 2 would be "not this scenario's run").
  const auto trace_path = dir.path() / "cfg.trace.json";
  { std::ofstream(trace_path) << text; }
  const ess::test::CliRun r = ess::test::run_cli(
      {"validate", "--scenario", (dir.path() / "cfg.scenario.json").string(), "--trace", trace_path.string()});
  INFO(r.err);
  CHECK((r.code == 0 || r.code == 1));
  CHECK_THAT(r.out, Catch::Contains("q_a_kv_a"));
}

TEST_CASE("a runner trace missing a GEMM of the simulation is refused", "[contract]") {
  // The check must be able to fail: without one layer's q_b the step's GEMM ops differ.
  ess::test::ScratchDir dir("ess-contract-trace-bad");
  const ess::runner::RunnerOptions o = parse_line(prepare_line(dir.path(), "cfg", {}), "cfg");
  const ess::runner::OpRecord q_b{"q_b", "gemm", ess::runner::kComputeTid, 2, 0, 0};
  const ess::MeasuredTrace t = ess::parse_trace_text(synthetic_trace(o, {q_b}), "bad.trace.json", nullptr);
  const ess::Scenario s = ess::load_scenario((dir.path() / "cfg.scenario.json").string());
  const ess::SimulatedRun sim = ess::simulate_for_validation(s, static_cast<std::int64_t>(t.steps.size()));
  CHECK_THROWS_AS(ess::compare_profiles(t.steps, sim.steps, 0.03), ess::InputError);
}

TEST_CASE("the runner's GEMMs are the simulator's weight GEMMs of its model", "[contract]") {
  const ess::Scenario s = ess::load_scenario(kRunnerScenario);
  std::set<std::string> listed;
  for (const ess::WeightGemm& g : ess::weight_gemms(s.model, 1, 1, 1)) listed.emplace(g.name);
  std::set<std::string> runner;
  for (const auto& op : ess::runner::expected_step_ops(ess::runner::OverlapMode::da, {true, false})) {
    if (op.category == "gemm") runner.insert(op.name);
  }
  CHECK(runner == listed);
}

TEST_CASE("the shapes file prepare writes is what ess-bench --gemm-shapes reads", "[contract]") {
  ess::test::ScratchDir dir("ess-contract-shapes");
  // Two configurations of one model, then another model's scenario through the same function.
  (void)prepare_line(dir.path(), "a", {});
  (void)prepare_line(dir.path(), "b", {"cache.overlap=serial"});
  const auto path = dir.path() / ess::kGemmShapesFile;
  const std::string once = ess::test::read_file(path);
  const ess::bench::GemmShapesFile file = ess::bench::read_gemm_shapes(path.string());
  const ess::Scenario s = ess::load_scenario(kRunnerScenario);
  std::vector<ess::WeightGemm> expected;
  for (const ess::WeightGemm& g : ess::weight_gemms(s.model, 1, 1, 1)) {
    if (g.form != ess::WeightGemmForm::per_head) expected.push_back(g);
  }
  REQUIRE(file.shapes.size() == expected.size());  // the same rows once, not twice
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(expected[i].name);
    CHECK(file.shapes[i].model == s.model.name);
    CHECK(file.shapes[i].layer == expected[i].name);
    CHECK(file.shapes[i].n == expected[i].n);
    CHECK(file.shapes[i].k == expected[i].k);
  }
  CHECK(file.shapes.front().layer == "q_a_kv_a");
  CHECK(file.shapes.front().n == 2112);
  CHECK(file.left_out.size() == 2);  // q_absorb and v_up, batched
  // A second model adds its rows; the first model's stay.
  const ess::Scenario llama = ess::load_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json");
  ess::add_gemm_shapes(llama, dir.path());
  const ess::bench::GemmShapesFile both = ess::bench::read_gemm_shapes(path.string());
  CHECK(both.shapes.size() == expected.size() + 5);
  CHECK(both.shapes.back().model == "llama-2-7b");
  CHECK(ess::test::read_file(path).rfind(once, 0) == 0);  // appended, nothing rewritten
}
