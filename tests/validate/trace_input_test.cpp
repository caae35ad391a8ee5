// Hostile and malformed input to the trace and category-map readers (validate/trace.h): every case
// found by the hostile-input campaign and the fuzzers is a TraceError (exit 2) naming the file,
// the position or JSON pointer and what was expected; never another exception, a crash, exit 3 or
// a silent acceptance.
#include <catch2/catch.hpp>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../scratch_dir.h"
#include "sim/cli/cli.h"
#include "sim/config/scenario.h"
#include "validate/compare.h"
#include "validate/trace.h"

namespace {

const std::string kTraceScenario = std::string(ESS_SOURCE_DIR) + "/validate/scenarios/runner-h200.json";

// A small valid ess-runner trace: `steps` steps of 100 us, each with one GEMM of 10 us at its start.
nlohmann::json runner(int steps = 2) {
  nlohmann::json events = nlohmann::json::array();
  for (int s = 0; s < steps; ++s) {
    events.push_back({{"ph", "X"}, {"name", "step"}, {"cat", "step"}, {"ts", 100.0 * s}, {"dur", 100.0}, {"args", {{"step", s}}}});
    events.push_back({{"ph", "X"}, {"name", "q_b"}, {"cat", "gemm"}, {"ts", 100.0 * s}, {"dur", 10.0},
                      {"args", {{"step", s}, {"layer", 0}}}});
  }
  return {{"traceEvents", events}, {"otherData", {{"format", "ess-runner/v1"}}}};
}

// A small valid Kineto trace: ProfilerStep#1 [0, 100) us and #2 [100, 200) us on the GPU, each
// with one GEMM kernel; event 0 and 1 are the steps, 2 and 3 the kernels.
nlohmann::json kineto() {
  return {{"traceEvents",
           {{{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "ProfilerStep#1"}, {"ts", 0.0}, {"dur", 100.0}},
            {{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "ProfilerStep#2"}, {"ts", 100.0}, {"dur", 100.0}},
            {{"ph", "X"}, {"cat", "kernel"}, {"name", "sm90_xmma_gemm_bf16"}, {"ts", 10.0}, {"dur", 20.0}},
            {{"ph", "X"}, {"cat", "kernel"}, {"name", "sm90_xmma_gemm_bf16"}, {"ts", 110.0}, {"dur", 20.0}}}}};
}

const ess::CategoryMap& builtin() {
  static const ess::CategoryMap map = ess::CategoryMap::builtin();
  return map;
}

ess::MeasuredTrace parse(const nlohmann::json& doc) { return ess::parse_trace(doc, "t.json", &builtin()); }

// The CLI on a trace (or, with `categories`, a mapping) written to a file: exit code and stderr.
struct CliResult {
  int code;
  std::string err;
};
CliResult validate_text(const std::string& trace_text, const std::string& categories_text = "") {
  ess::test::ScratchDir dir("ess-validate-input");
  const std::string trace = (dir.path() / "t.json").string();
  std::ofstream(trace) << trace_text;
  std::vector<std::string> args = {"validate", "--scenario", kTraceScenario, "--trace", trace};
  if (!categories_text.empty()) {
    const std::string map = (dir.path() / "m.json").string();
    std::ofstream(map) << categories_text;
    args.insert(args.end(), {"--categories", map});
  }
  std::ostringstream out;
  std::ostringstream err;
  const int code = ess::run_cli(args, out, err);
  return {code, err.str()};
}

}  // namespace

TEST_CASE("valid small traces load (the fixtures below are otherwise correct)") {
  CHECK(parse(runner()).steps.size() == 2);
  const ess::MeasuredTrace k = parse(kineto());
  REQUIRE(k.steps.size() == 2);
  CHECK(k.steps[1].seconds[0] == Approx(20e-6));
  CHECK(k.steps[1].events[0] == 1);
}

TEST_CASE("numbers beyond the double range are bad input (exit 2), not internal errors (exit 3)") {
  std::string text = runner().dump();
  text.replace(text.find("100.0"), 5, "1e400");
  const CliResult r = validate_text(text);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("t.json: invalid JSON at line 1, column ") && Catch::Contains("number overflow parsing '1e400'"));
  const CliResult m = validate_text(kineto().dump(), R"({"schema": "ess-sim/kernel-categories/v1", "rules": [], "x": -1e400})");
  CHECK(m.code == 2);
  CHECK_THAT(m.err, Catch::Contains("m.json: invalid JSON at line 1, column ") && Catch::Contains("number overflow parsing '-1e400'"));
  CHECK_THROWS_AS(ess::parse_trace_text("[1e400]", "t.json", nullptr), ess::TraceError);
}

TEST_CASE("duplicate keys in traces and category maps are rejected with their JSON pointer") {
  std::string text = kineto().dump();
  const std::string dur = "\"dur\":20.0";
  text.replace(text.find(dur), dur.size(), dur + ",\"dur\":-20.0");
  CHECK_THROWS_WITH(ess::parse_trace_text(text, "t.json", &builtin()),
                    Catch::StartsWith("t.json: /traceEvents/2/dur: duplicate key \"dur\""));
  const CliResult r = validate_text(text);
  CHECK(r.code == 2);
  CHECK_THROWS_WITH(ess::CategoryMap::parse_text(
                        R"({"schema": "ess-sim/kernel-categories/v1", "rules": [{"pattern": "a", "pattern": "(", "category": "gemm"}]})",
                        "m.json"),
                    Catch::StartsWith("m.json: /rules/0/pattern: duplicate key"));
  CHECK_THROWS_WITH(ess::parse_trace_text(std::string(100, '[') + std::string(100, ']'), "t.json", nullptr),
                    Catch::Contains("nested deeper than 64"));
  CHECK_THROWS_WITH(ess::parse_trace_text("{\"traceEvents\": [", "t.json", nullptr), Catch::Contains("invalid JSON at line 1"));
}

TEST_CASE("Kineto traces: negative or non-finite durations, bad or overlapping steps are rejected") {
  nlohmann::json negative_kernel = kineto();
  negative_kernel["traceEvents"][2]["dur"] = -20.0;
  CHECK_THROWS_WITH(parse(negative_kernel), Catch::StartsWith("t.json: /traceEvents/2/dur: a duration must be >= 0 us"));
  nlohmann::json negative_step = kineto();
  negative_step["traceEvents"][1]["dur"] = -100.0;
  CHECK_THROWS_WITH(parse(negative_step), Catch::StartsWith("t.json: /traceEvents/1/dur: a duration must be > 0 us"));
  nlohmann::json zero_step = kineto();
  zero_step["traceEvents"][0]["dur"] = 0.0;
  CHECK_THROWS_WITH(parse(zero_step), Catch::Contains("/traceEvents/0/dur"));
  nlohmann::json overlap = kineto();
  overlap["traceEvents"][1]["ts"] = 50.0;
  CHECK_THROWS_WITH(parse(overlap), Catch::StartsWith("t.json: /traceEvents/1: ProfilerStep#2 starts before ProfilerStep#1 "
                                                      "(/traceEvents/0) ends"));
  nlohmann::json same = kineto();
  same["traceEvents"][1]["name"] = "ProfilerStep#1";
  CHECK_THROWS_WITH(parse(same), Catch::Contains("step numbers must increase"));
  nlohmann::json badname = kineto();
  badname["traceEvents"][1]["name"] = "ProfilerStep#two";
  CHECK_THROWS_WITH(parse(badname), Catch::Contains("/traceEvents/1/name"));
  nlohmann::json infinite = kineto();
  infinite["traceEvents"][2]["ts"] = 1e308;
  infinite["traceEvents"][2]["dur"] = 1e308;
  CHECK_THROWS_WITH(parse(infinite), Catch::StartsWith("t.json: /traceEvents/2: \"ts\" + \"dur\" is beyond"));
  nlohmann::json text_ts = kineto();
  text_ts["traceEvents"][3]["ts"] = "110";
  CHECK_THROWS_WITH(parse(text_ts), Catch::StartsWith("t.json: /traceEvents/3/ts: \"ts\" must be a number, found the string"));
  nlohmann::json not_object = kineto();
  not_object["traceEvents"].push_back(5);
  CHECK_THROWS_WITH(parse(not_object), Catch::StartsWith("t.json: /traceEvents/4: an event must be an object"));
  nlohmann::json number_name = kineto();
  number_name["traceEvents"][2]["name"] = 7;
  CHECK_THROWS_WITH(parse(number_name), Catch::StartsWith("t.json: /traceEvents/2/name: \"name\" must be a string"));
  nlohmann::json outside = kineto();
  outside["traceEvents"][2]["ts"] = 1000.0;
  outside["traceEvents"][3]["ts"] = 2000.0;
  CHECK_THROWS_WITH(parse(outside), Catch::Contains("no GPU kernel or memcpy starts inside a ProfilerStep#N span"));
  nlohmann::json huge_name = kineto();
  huge_name["traceEvents"][2]["name"] = std::string(ess::kMaxKernelNameBytes + 1, 'k');
  CHECK_THROWS_WITH(parse(huge_name), Catch::Contains("/traceEvents/2/name: a kernel name of 65537 bytes"));
}

TEST_CASE("ess-runner traces: negative, non-finite or misplaced times and bad indexes are rejected") {
  const auto rejects = [](const nlohmann::json& doc, const std::string& start) {
    CHECK_THROWS_AS(parse(doc), ess::TraceError);
    CHECK_THROWS_WITH(parse(doc), Catch::StartsWith(start));
  };
  nlohmann::json d = runner();
  d["traceEvents"][1]["ts"] = -5.0;
  rejects(d, "t.json: /traceEvents/1/ts: \"ts\" must be >= 0");
  d = runner();
  d["traceEvents"][1].erase("ts");
  rejects(d, "t.json: /traceEvents/1/ts: \"ts\" must be a number, found nothing");
  d = runner();
  d["traceEvents"][0]["dur"] = 0.0;
  rejects(d, "t.json: /traceEvents/0/dur: a duration must be > 0 us");
  d = runner();
  d["traceEvents"][1]["dur"] = 500.0;  // ends after its step
  rejects(d, "t.json: /traceEvents/1: the event [0.000000, 500.000000] us lies outside its step 0");
  d = runner();
  d["traceEvents"][2]["ts"] = 50.0;  // step 1 starts inside step 0
  d["traceEvents"][3]["ts"] = 50.0;
  rejects(d, "t.json: /traceEvents/2: step 1 starts at 50.000000 us, before step 0 ends");
  d = runner();
  d["traceEvents"][1]["args"]["layer"] = -2;
  rejects(d, "t.json: /traceEvents/1/args/layer: expected an integer layer in [-1, 100000), found the number -2");
  d = runner();
  d["traceEvents"][1]["args"]["layer"] = std::numeric_limits<std::uint64_t>::max();
  rejects(d, "t.json: /traceEvents/1/args/layer: expected an integer layer");
  d = runner();
  d["traceEvents"][1]["args"]["layer"] = "0";
  rejects(d, "t.json: /traceEvents/1/args/layer");
  d = runner();
  d["traceEvents"][1]["args"]["step"] = 1.5;
  rejects(d, "t.json: /traceEvents/1/args/step: expected an integer step in [0, 100000)");
  d = runner();
  d["traceEvents"][1]["name"] = nlohmann::json::array();
  rejects(d, "t.json: /traceEvents/1/name: \"name\" must be a string, found an array");
  d = runner();
  d["otherData"]["scenario_sha256"] = 5;
  rejects(d, "t.json: /otherData/scenario_sha256: expected a string");
  d = runner();
  d["traceEvents"].push_back(nullptr);
  rejects(d, "t.json: /traceEvents/4: an event must be an object, found null");
}

TEST_CASE("category maps: unknown keys and wrong types are rejected") {
  CHECK_THROWS_WITH(ess::CategoryMap::parse_text(
                        R"({"schema": "ess-sim/kernel-categories/v1", "rules": [{"patern": "x", "pattern": "y", "category": "gemm"}]})",
                        "m.json"),
                    Catch::StartsWith("m.json: /rules/0/patern: unknown key in a rule"));
  CHECK_THROWS_WITH(
      ess::CategoryMap::parse_text(R"({"schema": "ess-sim/kernel-categories/v1", "rulez": [], "rules": []})", "m.json"),
      Catch::StartsWith("m.json: /rulez: unknown key"));
  CHECK_THROWS_WITH(ess::CategoryMap::parse_text(R"({"schema": "ess-sim/kernel-categories/v1", "rules": [{"pattern": 5, "category": "gemm"}]})",
                                                 "m.json"),
                    Catch::StartsWith("m.json: /rules/0: a rule is"));
  const CliResult r = validate_text(kineto().dump(), R"({"schema": "ess-sim/kernel-categories/v1", "rules": [{"pattern": "a{2}", "category": "gemm"}]})");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("/rules/0/pattern: unsupported pattern at character 2: counted repetition"));
}

TEST_CASE("a trace whose shape cannot be the scenario's is refused (exit 2)") {
  const ess::Scenario scenario = ess::load_scenario(kTraceScenario);
  const ess::SimulatedRun sim = ess::simulate_for_validation(scenario, 2);
  REQUIRE(sim.steps[0].layers == 4);
  // The runner's ops per step (kernels/runner/timeline.cpp): 9 GEMMs per layer and the LM head,
  // 4 norms per layer and the final norm.
  CHECK(sim.steps[0].events[static_cast<std::size_t>(ess::ValidationCategory::gemm)] == 9 * 4 + 1);
  CHECK(sim.steps[0].events[static_cast<std::size_t>(ess::ValidationCategory::norm)] == 4 * 4 + 1);
  const auto with = [&](auto change) {
    std::vector<ess::StepProfile> real = sim.steps;
    for (auto& p : real) change(p);
    return real;
  };
  CHECK_NOTHROW(ess::compare_profiles(sim.steps, sim.steps, 0.03));
  CHECK_THROWS_WITH(ess::compare_profiles(with([](ess::StepProfile& p) { p.layers = 61; }), sim.steps, 0.03),
                    Catch::Contains("step 0 of the trace has events for 61 layers, the scenario's step 4"));
  CHECK_THROWS_WITH(ess::compare_profiles(with([](ess::StepProfile& p) { p.events[1] += 1; }), sim.steps, 0.03),
                    Catch::Contains("has 18 norm ops, a step of the scenario 17"));
  // Kineto kernels: within a factor 4 of the GEMM ops is accepted, beyond it refused.
  const auto kernels = [&](std::size_t n) {
    return with([n](ess::StepProfile& p) {
      p.events_are_ops = false;
      p.layers = 0;
      p.events[0] = n;
    });
  };
  CHECK_NOTHROW(ess::compare_profiles(kernels(10), sim.steps, 0.03));   // 10 x 4 >= 37
  CHECK_NOTHROW(ess::compare_profiles(kernels(148), sim.steps, 0.03));  // 37 x 4
  CHECK_THROWS_WITH(ess::compare_profiles(kernels(9), sim.steps, 0.03), Catch::Contains("has 9 GEMM kernels"));
  CHECK_THROWS_WITH(ess::compare_profiles(kernels(149), sim.steps, 0.03), Catch::Contains("has 149 GEMM kernels"));
  // More steps than the scenario decodes: refused before simulating anything.
  CHECK_THROWS_WITH(ess::simulate_for_validation(scenario, scenario.workload.decode_steps + 1),
                    Catch::Contains("decodes 4 (workload.decode_steps)"));
  // Through the CLI: the Kineto fixture has 1 GEMM kernel per step, far from 37.
  const CliResult few = validate_text(kineto().dump());
  CHECK(few.code == 2);
  // The error names the trace file (the comparison itself knows no file names).
  CHECK_THAT(few.err, Catch::Contains("/t.json: step 0 of the trace has 1 GEMM kernels"));
  // An ess-runner trace of one layer with one GEMM per step is another model.
  const CliResult runner_few = validate_text(runner().dump());
  CHECK(runner_few.code == 2);
  CHECK_THAT(runner_few.err, Catch::Contains("/t.json: step 0 of the trace has events for 1 layers, the scenario's step 4"));
  const CliResult too_many = validate_text(runner(5).dump());
  CHECK(too_many.code == 2);
  CHECK_THAT(too_many.err, Catch::Contains("/t.json: the trace holds 5 decode steps"));
}
