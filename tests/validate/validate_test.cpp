// ess-sim validate: trace import, comparison and the runner configuration, without a GPU.
// Synthetic traces are built from the simulation's own profile with known per-category factors,
// so the report must find exactly the errors put in: a real time of sim x (1 + p) gives the error
// (sim - real) / real = 1 / (1 + p) - 1.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../scratch_dir.h"
#include "sim/cli/cli.h"
#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"
#include "sim/offload/access_trace.h"
#include "validate/compare.h"
#include "validate/prepare.h"
#include "validate/trace.h"

namespace {

using ess::StepProfile;
using ess::ValidationCategory;

const std::string kRunnerScenario = std::string(ESS_SOURCE_DIR) + "/validate/scenarios/runner-h200.json";

std::size_t at(ValidationCategory c) { return static_cast<std::size_t>(c); }

// An ess-runner trace whose per-step totals are `profile`, with optional metadata: per category as
// many events as the profile's step records (the simulation's op counts, so that the trace has
// the scenario's shape), two when it records none (to check that events of one category add up),
// spread over the profile's layers; plus the step span.
nlohmann::json runner_trace(const std::vector<StepProfile>& profile, const nlohmann::json& other_data) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "compute"}}}});
  double ts = 0.0;
  const char* cats[] = {"gemm", "norm", "indexer", "attention", "elementwise", "transfer", "wait"};
  for (std::size_t s = 0; s < profile.size(); ++s) {
    events.push_back({{"ph", "X"}, {"name", "step"}, {"cat", "step"}, {"pid", 0}, {"tid", 1}, {"ts", ts},
                      {"dur", profile[s].step_time * 1e6}, {"args", {{"step", s}}}});
    const std::size_t layers = std::max<std::size_t>(profile[s].layers, 2);
    for (std::size_t c = 0; c < ess::kValidationCategories; ++c) {
      if (profile[s].seconds[c] <= 0.0) continue;
      const std::size_t n = profile[s].events[c] > 0 ? profile[s].events[c] : 2;
      for (std::size_t i = 0; i < n; ++i) {
        events.push_back({{"ph", "X"}, {"name", std::string(cats[c]) + "_op"}, {"cat", cats[c]}, {"pid", 0}, {"tid", 1},
                          {"ts", ts}, {"dur", profile[s].seconds[c] * 1e6 / static_cast<double>(n)},
                          {"args", {{"step", s}, {"layer", i % layers}}}});
      }
    }
    ts += profile[s].step_time * 1e6;
  }
  nlohmann::json other = other_data;
  other["format"] = "ess-runner/v1";
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

std::vector<StepProfile> scaled(std::vector<StepProfile> p, double step_factor,
                                const std::vector<std::pair<ValidationCategory, double>>& factors) {
  for (auto& s : p) {
    s.step_time *= step_factor;
    for (const auto& [c, f] : factors) s.seconds[at(c)] *= f;
  }
  return p;
}

const ess::CategoryError& category(const ess::ValidationReport& r, ValidationCategory c) {
  for (const auto& e : r.categories) {
    if (e.category == c) return e;
  }
  FAIL("category " << ess::to_string(c) << " missing from the report");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("validate finds exactly the errors put into a synthetic ess-runner trace") {
  const ess::Scenario scenario = ess::load_scenario(kRunnerScenario);
  const auto sim = ess::simulated_profile(scenario, 4);
  REQUIRE(sim.size() == 4);
  REQUIRE(sim[0].seconds[at(ValidationCategory::gemm)] > 0.0);
  REQUIRE(sim[0].seconds[at(ValidationCategory::transfer)] > 0.0);
  // Real = sim x factor: gemm 10% slower in reality (error 1/1.1 - 1 = -9.0909%), norm 20% faster
  // (1/0.8 - 1 = +25%), transfer 25% slower (1/1.25 - 1 = -20%), step time 2% slower (-1.9608%).
  const auto real = scaled(sim, 1.02,
                           {{ValidationCategory::gemm, 1.1}, {ValidationCategory::norm, 0.8}, {ValidationCategory::transfer, 1.25}});
  const nlohmann::json doc = runner_trace(real, {{"gpu", "test GPU"}});
  const ess::MeasuredTrace trace = ess::parse_trace(doc, "synthetic.json", nullptr);
  CHECK(trace.format == "ess-runner");
  REQUIRE(trace.steps.size() == 4);
  const ess::ValidationReport r = ess::compare_profiles(trace.steps, sim, 0.03);
  CHECK(r.step_errors.median_abs == Approx(1.0 - 1.0 / 1.02).epsilon(1e-9));
  CHECK(r.step_errors.bias == Approx(1.0 / 1.02 - 1.0).epsilon(1e-9));
  CHECK(category(r, ValidationCategory::gemm).errors.bias == Approx(1.0 / 1.1 - 1.0).epsilon(1e-9));
  CHECK(category(r, ValidationCategory::gemm).errors.max_abs == Approx(1.0 - 1.0 / 1.1).epsilon(1e-9));
  CHECK(category(r, ValidationCategory::norm).errors.bias == Approx(0.25).epsilon(1e-9));
  CHECK(category(r, ValidationCategory::transfer).errors.bias == Approx(-0.2).epsilon(1e-9));
  CHECK(category(r, ValidationCategory::attention).errors.max_abs == Approx(0.0).margin(1e-12));
  CHECK(category(r, ValidationCategory::gemm).steps_compared == 4);
  CHECK(r.passed);  // 1.96% <= 3%
}

TEST_CASE("validate aligns operations by name: one op made slower shows up on that op alone") {
  const ess::Scenario scenario = ess::load_scenario(kRunnerScenario);
  const ess::SimulatedRun sim = ess::simulate_for_validation(scenario, 2);
  REQUIRE(sim.ops.size() == 2);
  // The simulation's trace names the runner's ops: GEMMs, the indexer, attention and the fetch
  // (its "L<layer> " prefix removed).
  for (const char* name : {"q_b", "gate_up", "indexer_topk", "sparse_mla_hits", "fetch_overlap", "attn_norm"}) {
    INFO(name);
    CHECK(sim.ops[0].count(name) == 1);
  }
  // A real run identical except q_b 25% slower: q_b's error is 1/1.25 - 1 = -20%, the others 0.
  auto real = sim.ops;
  for (auto& step : real) step.at("q_b") *= 1.25;
  const auto ops = ess::compare_ops(real, sim.ops);
  for (const auto& op : ops) {
    INFO(op.name);
    CHECK(op.error == Approx(op.name == "q_b" ? -0.2 : 0.0).margin(1e-12));
  }
  // Largest real time first.
  for (std::size_t i = 1; i < ops.size(); ++i) CHECK(ops[i - 1].real >= ops[i].real);
  // The runner-format reader collects per-op times by step.
  nlohmann::json doc = runner_trace({StepProfile{1e-3, {}}}, {});
  doc["traceEvents"].push_back({{"ph", "X"}, {"name", "q_b"}, {"cat", "gemm"}, {"ts", 0.0}, {"dur", 10.0}, {"args", {{"step", 0}, {"layer", 0}}}});
  doc["traceEvents"].push_back({{"ph", "X"}, {"name", "q_b"}, {"cat", "gemm"}, {"ts", 20.0}, {"dur", 5.0}, {"args", {{"step", 0}, {"layer", 1}}}});
  const ess::MeasuredTrace t = ess::parse_trace(doc, "x.json", nullptr);
  CHECK(t.ops.at(0).at("q_b") == Approx(15e-6));
}

TEST_CASE("a trace 5% slower than the simulation fails the 3% threshold and passes at 6%") {
  const ess::Scenario scenario = ess::load_scenario(kRunnerScenario);
  const auto sim = ess::simulated_profile(scenario, 4);
  const auto real = scaled(sim, 1.05, {});
  // |1/1.05 - 1| = 4.762%
  CHECK_FALSE(ess::compare_profiles(real, sim, 0.03).passed);
  CHECK(ess::compare_profiles(real, sim, 0.06).passed);
}

TEST_CASE("ess-sim validate exits 1 above the threshold, 0 below, 2 for a trace of another scenario") {
  ess::test::ScratchDir dir("ess-validate");
  const ess::Scenario scenario = ess::load_scenario(kRunnerScenario);
  const auto sim = ess::simulated_profile(scenario, 4);
  const auto write = [&](const std::string& name, const nlohmann::json& doc) {
    const auto path = (dir.path() / name).string();
    std::ofstream(path) << doc.dump();
    return path;
  };
  const std::string sha = ess::scenario_identity(scenario);
  const std::string good = write("good.json", runner_trace(scaled(sim, 1.01, {}), {{"scenario_sha256", sha}}));
  const std::string bad = write("bad.json", runner_trace(scaled(sim, 1.10, {}), {{"scenario_sha256", sha}}));
  const std::string other = write("other.json", runner_trace(sim, {{"scenario_sha256", std::string(64, '0')}}));
  std::ostringstream out;
  std::ostringstream err;
  CHECK(ess::run_cli({"validate", "--scenario", kRunnerScenario, "--trace", good}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("PASS"));
  out.str("");
  CHECK(ess::run_cli({"validate", "--scenario", kRunnerScenario, "--trace", bad}, out, err) == 1);
  CHECK_THAT(out.str(), Catch::Contains("FAIL: step-time median |error| 9.1% > threshold 3.0%"));
  out.str("");
  CHECK(ess::run_cli({"validate", "--scenario", kRunnerScenario, "--trace", bad, "--threshold", "10%"}, out, err) == 0);
  err.str("");
  CHECK(ess::run_cli({"validate", "--scenario", kRunnerScenario, "--trace", other}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("different configuration"));
}

TEST_CASE("a trace's scenario identity ignores the hardware's cost parameters, not the workload") {
  const ess::Scenario base = ess::load_scenario(kRunnerScenario);
  const ess::Scenario recalibrated =
      ess::load_scenario(kRunnerScenario, {ess::parse_override("hardware.kernels.gemm.compute_efficiency=0.5")});
  const ess::Scenario other_batch = ess::load_scenario(
      kRunnerScenario, {ess::parse_override("workload.batch_per_gpu=4"), ess::parse_override("cache.sampled_requests=4")});
  CHECK(ess::scenario_identity(recalibrated) == ess::scenario_identity(base));
  CHECK(ess::scenario_identity(other_batch) != ess::scenario_identity(base));
}

TEST_CASE("traces of unknown formats are clear errors") {
  CHECK_THROWS_WITH(ess::parse_trace(nlohmann::json{{"foo", 1}}, "x.json", nullptr),
                    Catch::Contains("unknown trace format"));
  CHECK_THROWS_WITH(ess::parse_trace(nlohmann::json{{"traceEvents", nlohmann::json::array({{{"ph", "X"}, {"cat", "cpu_op"}}})}},
                                     "x.json", nullptr),
                    Catch::Contains("neither an ess-runner trace"));
  ess::test::ScratchDir dir("ess-validate-format");
  const auto path = (dir.path() / "t.json").string();
  std::ofstream(path) << "not json";
  CHECK_THROWS_WITH(ess::read_trace(path, nullptr), Catch::Contains("invalid JSON at line 1, column 2"));
  CHECK_THROWS_WITH(ess::read_trace((dir.path() / "missing.json").string(), nullptr), Catch::Contains("missing.json: no such file"));
  // An ess-runner event with an unknown category, and a step without its span.
  nlohmann::json doc = runner_trace({StepProfile{1e-3, {}}}, {});
  doc["traceEvents"].push_back({{"ph", "X"}, {"cat", "magic"}, {"dur", 1.0}, {"ts", 0.0}, {"args", {{"step", 0}}}});
  CHECK_THROWS_WITH(ess::parse_trace(doc, "x.json", nullptr), Catch::Contains("unknown category \"magic\""));
  nlohmann::json gap = runner_trace({StepProfile{1e-3, {}}}, {});
  gap["traceEvents"].push_back({{"ph", "X"}, {"cat", "gemm"}, {"dur", 1.0}, {"ts", 0.0}, {"args", {{"step", 2}}}});
  CHECK_THROWS_WITH(ess::parse_trace(gap, "x.json", nullptr), Catch::Contains("step 1 has events but no \"step\" event"));
  // A field of the wrong type is malformed input, reported with its pointer.
  nlohmann::json typed = runner_trace({StepProfile{1e-3, {}}}, {});
  typed["traceEvents"].push_back({{"ph", 5}});
  CHECK_THROWS_WITH(ess::parse_trace(typed, "x.json", nullptr),
                    Catch::Contains("/traceEvents/2/ph: \"ph\" must be a string, found the number 5"));
}

TEST_CASE("PyTorch profiler traces: steps from ProfilerStep spans, categories from the mapping, idle time as exposed wait") {
  const ess::CategoryMap map =
      ess::CategoryMap::parse(nlohmann::json::parse(ess::kDefaultKinetoCategories), "built-in");
  // Step 0 spans [100, 200) us, step 1 [200, 260) us (GPU annotations; a CPU annotation is ignored
  // when GPU ones exist). Step 0: a GEMM [100, 130), an RMSNorm [130, 140), an unknown kernel
  // [150, 160): busy 50 us of 100 -> exposed 50 us. Step 1: flash-MLA [200, 240) and an HtoD memcpy
  // [210, 250) overlapping it: busy union [200, 250) = 50 of 60 -> exposed 10 us.
  nlohmann::json events = nlohmann::json::array({
      {{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#7"}, {"ts", 0.0}, {"dur", 500.0}},
      {{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "ProfilerStep#7"}, {"ts", 100.0}, {"dur", 100.0}},
      {{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "ProfilerStep#8"}, {"ts", 200.0}, {"dur", 60.0}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "sm90_xmma_gemm_bf16bf16_bf16f32"}, {"ts", 100.0}, {"dur", 30.0}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "void vllm::rms_norm_kernel<c10::BFloat16>"}, {"ts", 130.0}, {"dur", 10.0}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "my_mystery_kernel"}, {"ts", 150.0}, {"dur", 10.0}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "flash_fwd_splitkv_mla_kernel"}, {"ts", 200.0}, {"dur", 40.0}},
      {{"ph", "X"}, {"cat", "gpu_memcpy"}, {"name", "Memcpy HtoD (Pinned -> Device)"}, {"ts", 210.0}, {"dur", 40.0}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "late_kernel"}, {"ts", 900.0}, {"dur", 5.0}},
  });
  const ess::MeasuredTrace t = ess::parse_trace(nlohmann::json{{"traceEvents", events}}, "k.json", &map);
  CHECK(t.format == "kineto");
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].step_time == Approx(100e-6));
  CHECK(t.steps[0].seconds[at(ValidationCategory::gemm)] == Approx(30e-6));
  CHECK(t.steps[0].seconds[at(ValidationCategory::norm)] == Approx(10e-6));
  CHECK(t.steps[0].seconds[at(ValidationCategory::exposed_wait)] == Approx(50e-6));
  CHECK(t.steps[1].seconds[at(ValidationCategory::attention)] == Approx(40e-6));
  CHECK(t.steps[1].seconds[at(ValidationCategory::transfer)] == Approx(40e-6));
  CHECK(t.steps[1].seconds[at(ValidationCategory::exposed_wait)] == Approx(10e-6));
  CHECK(t.uncategorised.at("my_mystery_kernel") == Approx(10e-6));
  CHECK(t.events_outside_steps == 1);
  CHECK_THROWS_WITH(ess::parse_trace(nlohmann::json{{"traceEvents", events}}, "k.json", nullptr),
                    Catch::Contains("needs a kernel-category mapping"));
}

TEST_CASE("kernel-category mappings are checked") {
  CHECK_THROWS_WITH(ess::CategoryMap::parse(nlohmann::json{{"rules", nlohmann::json::array()}}, "m.json"),
                    Catch::Contains("not a kernel-category mapping"));
  const nlohmann::json bad_category = {{"schema", "ess-sim/kernel-categories/v1"},
                                       {"rules", {{{"pattern", "x"}, {"category", "gemms"}}}}};
  CHECK_THROWS_WITH(ess::CategoryMap::parse(bad_category, "m.json"), Catch::Contains("unknown category \"gemms\""));
  const nlohmann::json bad_regex = {{"schema", "ess-sim/kernel-categories/v1"},
                                    {"rules", {{{"pattern", "("}, {"category", "gemm"}}}}};
  CHECK_THROWS_WITH(ess::CategoryMap::parse(bad_regex, "m.json"), Catch::Contains("/rules/0/pattern"));
  const nlohmann::json order = {{"schema", "ess-sim/kernel-categories/v1"},
                                {"rules", {{{"pattern", "norm"}, {"category", "norm"}}, {{"pattern", "."}, {"category", "gemm"}}}}};
  const auto m = ess::CategoryMap::parse(order, "m.json");
  CHECK(*m.category_of("RMSNORM_kernel") == "norm");  // case-insensitive, first rule wins
  CHECK(*m.category_of("anything") == "gemm");
}

TEST_CASE("validate --prepare writes the runner arguments and the simulator's own selections") {
  ess::test::ScratchDir dir("ess-validate-prepare");
  const ess::Scenario scenario = ess::load_scenario(kRunnerScenario);
  const ess::RunnerConfig rc = ess::prepare_runner(scenario, dir.path(), "cfg");
  CHECK_THAT(rc.arguments, Catch::Contains("--layers 4 --hidden 7168"));
  CHECK_THAT(rc.arguments, Catch::Contains("--batch 8 --context 32768 --steps 4 --pool-entries 4096"));
  CHECK_THAT(rc.arguments, Catch::Contains("--overlap da --transfer gather --access cfg.esstrace"));
  CHECK_THAT(rc.arguments, Catch::Contains("--scenario-sha256 " + ess::scenario_identity(scenario)));
  ess::ReplayAccess replay(rc.access_trace);
  CHECK(replay.layers() == 4);
  CHECK(replay.requests() == 8);
  REQUIRE(replay.steps().size() == 8 + 4);  // warmup_windows 8, then 4 steps
  CHECK(replay.steps().front().step == -8);
  CHECK(replay.steps().front().context == 32768 - 8);
  CHECK(replay.steps().back().step == 3);
  CHECK(replay.steps().back().context == 32768 + 3);  // one accepted token per step
  // Simulating with the recorded selections gives the synthetic generator's results: the same
  // misses; the floating-point sums agree to 12 digits, not to the last bit.
  const auto synthetic = ess::simulated_profile(scenario, 4);
  const ess::Scenario replayed = ess::load_scenario(
      kRunnerScenario, {ess::parse_override("cache.access.model=replay"),
                  ess::parse_override("cache.access.file=" + rc.access_trace.string())});
  const auto from_trace = ess::simulated_profile(replayed, 4);
  for (std::size_t s = 0; s < 4; ++s) {
    CHECK(from_trace[s].step_time == Approx(synthetic[s].step_time).epsilon(1e-12));
    for (std::size_t c = 0; c < ess::kValidationCategories; ++c) {
      CHECK(from_trace[s].seconds[c] == Approx(synthetic[s].seconds[c]).epsilon(1e-12));
    }
  }
  // Scenarios the runner cannot execute are refused with the field to change.
  CHECK_THROWS_WITH(ess::prepare_runner(ess::load_scenario(kRunnerScenario, {ess::parse_override("cache.overlap=dba")}),
                                        dir.path(), "x"),
                    Catch::Contains("/cache/overlap"));
  CHECK_THROWS_WITH(ess::prepare_runner(ess::load_scenario(kRunnerScenario, {ess::parse_override("cache.sampled_requests=4")}),
                                        dir.path(), "x"),
                    Catch::Contains("sampled_requests to the batch (8)"));
}
