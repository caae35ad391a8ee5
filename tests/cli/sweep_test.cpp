// `ess-sim sweep` and `sweep-merge`: the spec reader's errors, point expansion, the ledger and CSV
// of a small sweep (each point a child process of the real ess-sim binary, ESS_SIM_BINARY), a point
// that does not fit, resume after a kill, and shards merged into the unsharded result.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/config/engine_config.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/points.h"
#include "sim/sweep/spec.h"
#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"

#ifndef ESS_SIM_BINARY
#error "ESS_SIM_BINARY (the ess-sim binary the points run) must be defined by tests/CMakeLists.txt"
#endif

namespace {

using ess::test::lines_of;

using ess::test::read_file;
using ess::test::run_cli;
using ess::test::ScratchDir;
using nlohmann::json;

ess::SweepSpec parse(const std::string& text) { return ess::parse_sweep_spec(text, "spec.json", "."); }

// The ConfigError parsing `text` throws.
ess::ConfigError spec_error(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const ess::ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError for " << text);
  throw;
}

const std::string kHead = R"("schema": "ess-sim/sweep/v1", "base": "s.json", )";

// A ledger's records without wall_s, the one field allowed to differ between runs.
std::vector<json> without_wall(const std::string& ledger) {
  std::vector<json> out;
  for (const auto& line : lines_of(ledger)) {
    json j = json::parse(line);
    REQUIRE(j.contains("wall_s"));
    j.erase("wall_s");
    out.push_back(j);
  }
  return out;
}

// The small sweep: Llama-2-7B on one A100, one step per point; batch x context, where a batch of a
// million does not fit in 80 GB and "lots" is not a batch. 8 points.
std::filesystem::path write_small_spec(const std::filesystem::path& dir) {
  const auto path = dir / "small.json";
  std::ofstream(path) << R"({"schema": "ess-sim/sweep/v1", "name": "small",
    "base": ")" << ESS_SOURCE_DIR << R"(/scenarios/llama2-7b-a100-decode.json", "steps": 1,
    "axes": [{"path": "workload.batch_per_gpu", "values": [1, 2, 1000000, "lots"]},
             {"path": "workload.context_length", "values": [512, 1024]}],
    "metrics": ["batch_per_gpu", "step_time_s.mean", "tokens_per_s_per_gpu", "memory_gpu_bytes.free", "offload.exposed_s"]})";
  return path;
}

ess::test::CliRun sweep(const std::filesystem::path& spec, const std::filesystem::path& out,
                        std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"sweep", spec.string(), "-o", out.string(), "--jobs", "2", "--executable", ESS_SIM_BINARY};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args);
}

}  // namespace

TEST_CASE("sweep spec: an unknown key is an error with its pointer and a did-you-mean") {
  const auto e = spec_error("{" + kHead + R"("axes": [{"path": "a.b", "valeus": [1]}]})");
  CHECK(e.origin() == "spec.json");
  CHECK(e.pointer() == "/axes/0");  // the axis lacks a form; the stray key is named next
  CHECK_THAT(e.message(), Catch::Contains("one of \"values\", \"range\" or \"log_range\""));
  const auto top = spec_error("{" + kHead + R"("axis": [], "axes": [{"path": "a.b", "values": [1]}]})");
  CHECK(top.pointer() == "/axis");
  CHECK_THAT(top.message(), Catch::Contains("unknown key \"axis\"") && Catch::Contains("did you mean \"axes\"?"));
  const auto inner = spec_error("{" + kHead + R"("axes": [{"path": "a.b", "range": {"from": 1, "to": 2, "stp": 1}}]})");
  CHECK(inner.pointer() == "/axes/0/range/step");  // the required key is missing; the typo is named
  CHECK_THAT(inner.message(), Catch::Contains("missing required key \"step\"") && Catch::Contains("\"stp\""));
}

TEST_CASE("sweep spec: schema, forms, zips and metrics are checked with what was expected") {
  CHECK_THAT(spec_error(R"({"schema": "ess-sim/sweep/v2", "base": "s", "axes": [{"path": "a", "values": [1]}]})").message(),
             Catch::Contains("expected \"ess-sim/sweep/v1\""));
  CHECK(spec_error(R"({"schema": "ess-sim/sweep/v1", "axes": [{"path": "a", "values": [1]}]})").pointer() == "/base");
  CHECK(spec_error("{" + kHead + R"("axes": []})").pointer() == "/axes");
  CHECK_THAT(spec_error("{" + kHead + R"("axes": [{"path": "a", "values": [1], "range": {"from": 1, "to": 2, "step": 1}}]})").message(),
             Catch::Contains("only one of"));
  CHECK(spec_error("{" + kHead + R"("axes": [{"path": "a", "values": []}]})").pointer() == "/axes/0/values");
  CHECK(spec_error("{" + kHead + R"("axes": [{"path": "a..b", "values": [1]}]})").pointer() == "/axes/0/path");
  CHECK_THAT(spec_error("{" + kHead + R"("axes": [{"path": "a", "values": [1]}, {"path": "a", "values": [2]}]})").message(),
             Catch::Contains("listed twice"));
  CHECK(spec_error("{" + kHead + R"("axes": [{"path": "a", "range": {"from": 1, "to": 2, "step": 0}}]})").pointer() ==
        "/axes/0/range/step");
  CHECK(spec_error("{" + kHead + R"("axes": [{"path": "a", "log_range": {"from": 0, "to": 2, "points": 3}}]})").pointer() ==
        "/axes/0/log_range/from");
  CHECK(spec_error("{" + kHead + R"("axes": [{"path": "a", "range": {"from": 0, "to": 1, "step": 1e-9}}]})").pointer() ==
        "/axes/0/range");
  const std::string two = R"("axes": [{"path": "x.a", "values": [1, 2]}, {"path": "x.b", "values": [1, 2, 3]}], )";
  const auto unequal = spec_error("{" + kHead + two + R"("zip": [["x.a", "x.b"]]})");
  CHECK(unequal.pointer() == "/zip/0/1");
  CHECK_THAT(unequal.message(), Catch::Contains("equal lengths") && Catch::Contains("3 values"));
  const auto unknown = spec_error("{" + kHead + two + R"("zip": [["x.a", "x.c"]]})");
  CHECK(unknown.pointer() == "/zip/0/1");
  CHECK_THAT(unknown.message(), Catch::Contains("did you mean \"x.a\"?"));
  const auto metric = spec_error("{" + kHead + two + R"("metrics": ["step_time_s.maen"]})");
  CHECK(metric.pointer() == "/metrics/0");
  CHECK_THAT(metric.message(), Catch::Contains("did you mean \"step_time_s.mean\"?"));
  CHECK(spec_error("{" + kHead + two + R"("steps": 0})").pointer() == "/steps");
}

TEST_CASE("sweep points: values, range and log_range expand exactly") {
  const auto spec = parse("{" + kHead + R"("axes": [
      {"path": "cache.pool_ratio", "range": {"from": 0.1, "to": 0.3, "step": 0.1}},
      {"path": "workload.batch_per_gpu", "log_range": {"from": 1, "to": 64, "points": 7, "integer": true}},
      {"path": "workload.context_length", "range": {"from": 1024, "to": 4096, "step": 1024}},
      {"path": "workload.x", "log_range": {"from": 1, "to": 100, "points": 3}},
      {"path": "hardware", "values": ["h200-sxm", {"preset": "h100-sxm", "nodes": 2}]}]})");
  REQUIRE(spec.axes.size() == 5);
  CHECK(spec.axes[0].values == std::vector<json>{0.1, 0.2, 0.3});  // the doubles 0.2 and 0.3, not 0.1 + 0.1 ...
  CHECK(spec.axes[1].values == std::vector<json>{1, 2, 4, 8, 16, 32, 64});
  CHECK(spec.axes[1].values[3].is_number_integer());
  CHECK(spec.axes[2].values == std::vector<json>{1024, 2048, 3072, 4096});
  CHECK(spec.axes[3].values == std::vector<json>{1, 10, 100});
  CHECK(spec.steps == ess::kDefaultSweepSteps);
  const auto points = ess::expand_points(spec);
  CHECK(points.size() == 3 * 7 * 4 * 3 * 2);
  // The first axis changes slowest, the last fastest.
  CHECK(points[0].overrides() == std::vector<std::string>{"cache.pool_ratio=0.1", "workload.batch_per_gpu=1",
                                                          "workload.context_length=1024", "workload.x=1",
                                                          "hardware=\"h200-sxm\""});
  CHECK(points[1].overrides().back() == R"(hardware={"nodes":2,"preset":"h100-sxm"})");
  CHECK(points[2].overrides()[3] == "workload.x=10");
  CHECK(points[7 * 4 * 3 * 2].overrides()[0] == "cache.pool_ratio=0.2");
  for (std::size_t i = 0; i < points.size(); ++i) CHECK(points[i].index == i);
  // An integer log range whose rounded values repeat keeps each once.
  const auto dense = parse("{" + kHead + R"("axes": [{"path": "b", "log_range": {"from": 1, "to": 4, "points": 6, "integer": true}}]})");
  CHECK(dense.axes[0].values == std::vector<json>{1, 2, 3, 4});
}

TEST_CASE("sweep points: zipped axes advance together, in place of their first axis") {
  const auto spec = parse("{" + kHead + R"("axes": [
      {"path": "a", "values": [1, 2]},
      {"path": "mode", "values": ["gpu", "offload", "offload"]},
      {"path": "ratio", "values": [null, 0.1, 0.2]}],
    "zip": [["ratio", "mode"]]})");
  const auto points = ess::expand_points(spec);
  REQUIRE(points.size() == 6);
  std::vector<std::string> labels;
  for (const auto& p : points) labels.push_back(p.label());
  CHECK(labels == std::vector<std::string>{"a=1 mode=gpu ratio=null", "a=1 mode=offload ratio=0.1",
                                           "a=1 mode=offload ratio=0.2", "a=2 mode=gpu ratio=null",
                                           "a=2 mode=offload ratio=0.1", "a=2 mode=offload ratio=0.2"});
}

TEST_CASE("sweep metrics: every numeric summary field of results.json has a column with its unit") {
  std::set<std::string> columns;
  std::set<std::string> paths;
  for (const auto& m : ess::known_sweep_metrics()) {
    CHECK(columns.insert(m.column).second);
    paths.insert(m.path);
  }
  // The fields a GPU-only and an offload run write (results.cpp), each in the table.
  const auto gpu = run_cli({"run", ess::test::kBundledScenario, "--steps", "1", "--json"});
  const auto offload = run_cli({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-ess-32k.json", "--steps", "1",
                                "--set", "hardware.nodes=1", "--set", "parallelism.attention_dp=8", "--set",
                                "parallelism.expert_parallel=8", "--set", "workload.batch_per_gpu=8", "--json"});
  REQUIRE(gpu.code == 0);
  REQUIRE(offload.code == 0);
  std::size_t seen = 0;
  for (const auto* text : {&gpu.out, &offload.out}) {
    const json flat = json::parse(*text)["summary"].flatten();
    for (const auto& [pointer, value] : flat.items()) {
      if (!value.is_number()) continue;
      std::string dotted = pointer.substr(1);
      std::replace(dotted.begin(), dotted.end(), '/', '.');
      INFO(dotted);
      CHECK(paths.contains(dotted));
      ++seen;
    }
  }
  CHECK(seen > 50);
}

TEST_CASE("sweep: a small sweep writes the ledger and the CSV, and a batch that does not fit is out_of_memory") {
  ScratchDir dir("ess-sweep");
  const auto spec = write_small_spec(dir.path());
  const auto out = dir.path() / "out";
  const auto r = sweep(spec, out);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("8 points (0 kept from the ledger, 6 run)") &&
                        Catch::Contains("ok 4, invalid 2, out_of_memory 2, resource_limit 0, failed 0"));
  const auto lines = lines_of(read_file(out / "results.jsonl"));
  REQUIRE(lines.size() == 8);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json rec = json::parse(lines[i]);
    INFO(lines[i]);
    CHECK(rec["point"] == i);  // sorted by point at the end
    const json batch = rec["axes"]["workload.batch_per_gpu"];
    const json context = rec["axes"]["workload.context_length"];
    CHECK(context == (i % 2 == 0 ? 512 : 1024));
    CHECK(rec["ess_sim_version"] == ESS_SIM_VERSION);
    CHECK(rec["wall_s"].is_number());
    if (batch == 1 || batch == 2) {
      CHECK(rec["status"] == "ok");
      CHECK(rec["reason"].is_null());
      CHECK(rec["batch_per_gpu"] == batch);
      // One token per request per step (no MTP): tokens/s per GPU = batch / step time.
      CHECK(rec["tokens_per_s_per_gpu"].get<double>() ==
            Approx(batch.get<double>() / rec["step_time_mean_s"].get<double>()).epsilon(1e-12));
      CHECK(rec["offload_exposed_s"].is_null());  // a GPU-only point has no offload summary
      // The same point run by hand gives the same numbers and scenario hash.
      const auto by_hand = run_cli({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json",
                                    "--set", "workload.batch_per_gpu=" + batch.dump(), "--set",
                                    "workload.context_length=" + context.dump(), "--steps", "1", "--json"});
      REQUIRE(by_hand.code == 0);
      const json results = json::parse(by_hand.out);
      // Not bit for bit: SimGrid's clock is not reset between engines in one process (sim/README.md),
      // which is why a sweep runs each point in its own.
      CHECK(rec["step_time_mean_s"].get<double>() ==
            Approx(results["summary"]["step_time_s"]["mean"].get<double>()).epsilon(1e-9));
      CHECK(rec["memory_free_bytes"] == results["summary"]["memory_gpu_bytes"]["free"]);
      CHECK(rec["scenario_sha256"] == results["scenario_sha256"]);
    } else if (batch == 1000000) {
      CHECK(rec["status"] == "out_of_memory");
      CHECK(rec["reason"]["code"] == "out_of_memory");
      CHECK_THAT(rec["reason"]["message"].get<std::string>(),
                 Catch::StartsWith("batch_per_gpu 1000000 does not fit in a100-80gb-sxm-measured HBM") &&
                     Catch::Contains("HBM capacity"));
      CHECK(rec["step_time_mean_s"].is_null());
      CHECK(rec["scenario_sha256"].is_string());
    } else {
      CHECK(rec["status"] == "invalid");
      CHECK(rec["reason"]["code"] == "invalid_scenario");
      CHECK_THAT(rec["reason"]["message"].get<std::string>(), Catch::Contains("/workload/batch_per_gpu"));
      CHECK(rec["scenario_sha256"].is_null());
    }
  }
  const auto csv = lines_of(read_file(out / "results.csv"));
  REQUIRE(csv.size() == 9);
  CHECK(csv[0] == "point,workload.batch_per_gpu,workload.context_length,status,reason_code,reason,batch_per_gpu,"
                  "step_time_mean_s,tokens_per_s_per_gpu,memory_free_bytes,offload_exposed_s,scenario_sha256,ess_sim_version");
  CHECK_THAT(csv[5], Catch::StartsWith("4,1000000,512,out_of_memory,out_of_memory,batch_per_gpu 1000000 does not fit"));
  CHECK_THAT(csv[7], Catch::StartsWith("6,lots,512,invalid,invalid_scenario,"));
  const json copy = json::parse(read_file(out / "spec.json"));
  CHECK(copy["spec_sha256"] == ess::load_sweep_spec(spec).sha256);
  CHECK(copy["shard"] == "0/1");
  CHECK_FALSE(std::filesystem::exists(out / ".points"));

  SECTION("the same spec and binary give the same ledger except wall_s, and a byte-identical CSV") {
    const auto again = sweep(spec, dir.path() / "again");
    REQUIRE(again.code == 0);
    CHECK(read_file(dir.path() / "again" / "results.csv") == read_file(out / "results.csv"));
    CHECK(without_wall(read_file(dir.path() / "again" / "results.jsonl")) == without_wall(read_file(out / "results.jsonl")));
  }
  SECTION("a directory with a ledger is refused without --resume, and another spec's directory always") {
    const auto refused = sweep(spec, out);
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Catch::Contains("pass --resume"));
    const auto other = dir.path() / "other.json";
    std::ofstream(other) << R"({"schema": "ess-sim/sweep/v1", "base": ")" << ESS_SOURCE_DIR
                         << R"(/scenarios/llama2-7b-a100-decode.json", "axes": [{"path": "workload.batch_per_gpu", "values": [3]}]})";
    const auto mismatch = sweep(other, out, {"--resume"});
    CHECK(mismatch.code == 2);
    CHECK_THAT(mismatch.err, Catch::Contains("another spec"));
  }
  SECTION("resume after a kill: nothing lost, nothing repeated") {
    // The kill: points 0, 1, 2 (ok), 4 (out_of_memory) and 6 (invalid) were written, point 3 was cut
    // mid-line. Resume keeps the ok and invalid ones, re-runs the failed one and the missing ones.
    const std::string before = read_file(out / "results.jsonl");
    const auto all = lines_of(before);
    const std::string killed = all[0] + "\n" + all[1] + "\n" + all[2] + "\n" + all[4] + "\n" + all[6] + "\n" +
                               all[3].substr(0, all[3].size() / 2);
    std::ofstream(out / "results.jsonl", std::ios::binary | std::ios::trunc) << killed;
    std::filesystem::remove(out / "results.csv");
    const auto resumed = sweep(spec, out, {"--resume"});
    INFO(resumed.err);
    REQUIRE(resumed.code == 0);
    // Kept 0, 1, 2, 6; ran 3, 4, 5 (7 is invalid, recorded without a child).
    CHECK_THAT(resumed.out, Catch::Contains("8 points (4 kept from the ledger, 3 run)"));
    const auto after = lines_of(read_file(out / "results.jsonl"));
    REQUIRE(after.size() == 8);
    for (const std::size_t kept : {0, 1, 2, 6}) CHECK(after[kept] == all[kept]);  // with their wall_s: not re-run
    CHECK(without_wall(read_file(out / "results.jsonl")) == without_wall(before));
    CHECK(read_file(out / "results.csv") == read_file(dir.path() / "out" / "results.csv"));
    // Resuming a finished sweep runs nothing and changes nothing.
    const std::string finished = read_file(out / "results.jsonl");
    const auto noop = sweep(spec, out, {"--resume"});
    CHECK_THAT(noop.out, Catch::Contains("(6 kept from the ledger, 2 run)"));  // the out_of_memory points re-run
    CHECK(without_wall(read_file(out / "results.jsonl")) == without_wall(finished));
  }
  SECTION("two shards merged equal the unsharded run") {
    const std::string csv_text = read_file(out / "results.csv");
    const auto s0 = sweep(spec, dir.path() / "s0", {"--shard", "0/2"});
    const auto s1 = sweep(spec, dir.path() / "s1", {"--shard", "1/2"});
    REQUIRE(s0.code == 0);
    REQUIRE(s1.code == 0);
    CHECK_THAT(s0.out, Catch::Contains("4 points in shard 0/2"));
    CHECK(lines_of(read_file(dir.path() / "s0" / "results.jsonl")).size() == 4);
    for (const auto& rec : without_wall(read_file(dir.path() / "s1" / "results.jsonl"))) CHECK(rec["point"].get<int>() % 2 == 1);
    const auto partial = run_cli({"sweep-merge", (dir.path() / "s0").string(), "-o", (dir.path() / "partial").string()});
    CHECK(partial.code == 2);
    CHECK_THAT(partial.err, Catch::Contains("4 of 8 points are in no ledger (1, 3, 5, 7)") &&
                                Catch::Contains("--allow-missing"));
    CHECK(run_cli({"sweep-merge", (dir.path() / "s0").string(), "-o", (dir.path() / "partial").string(),
                   "--allow-missing"}).code == 0);
    const auto merged = run_cli({"sweep-merge", (dir.path() / "s1").string(), (dir.path() / "s0").string(),
                                 (dir.path() / "s0").string(), "-o", (dir.path() / "merged").string()});
    INFO(merged.err);
    REQUIRE(merged.code == 0);
    CHECK(read_file(dir.path() / "merged" / "results.csv") == csv_text);
    CHECK(without_wall(read_file(dir.path() / "merged" / "results.jsonl")) == without_wall(read_file(out / "results.jsonl")));
    CHECK(read_file(dir.path() / "merged" / "spec.json") == read_file(out / "spec.json"));
    // A shard of another spec is refused.
    const auto other = dir.path() / "other.json";
    std::ofstream(other) << R"({"schema": "ess-sim/sweep/v1", "base": ")" << ESS_SOURCE_DIR
                         << R"(/scenarios/llama2-7b-a100-decode.json", "steps": 1, "axes": [{"path": "workload.batch_per_gpu", "values": [3]}]})";
    REQUIRE(sweep(other, dir.path() / "o").code == 0);
    const auto mixed = run_cli({"sweep-merge", (dir.path() / "s0").string(), (dir.path() / "o").string(), "-o",
                                (dir.path() / "mixed").string()});
    CHECK(mixed.code == 2);
    CHECK_THAT(mixed.err, Catch::Contains("comes from another spec"));
  }
}

TEST_CASE("sweep: a crashed point is failed with its exit status, and a torn ledger line is not a record") {
  // /bin/false as the binary: every child exits 1, which no ess-sim run does for a point (the two
  // invalid points are rejected by the loader before any child starts).
  ScratchDir dir("ess-sweep-fail");
  const auto spec = write_small_spec(dir.path());
  const auto r = run_cli({"sweep", spec.string(), "-o", (dir.path() / "out").string(), "--executable", "/bin/false"});
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("invalid 2, out_of_memory 0, resource_limit 0, failed 6"));
  const json rec = json::parse(lines_of(read_file(dir.path() / "out" / "results.jsonl"))[0]);
  CHECK(rec["status"] == "failed");
  CHECK(rec["reason"]["code"] == "exit_1");
  // classify_run maps exit codes and messages as documented.
  CHECK(ess::classify_run(2, 0, "", "error: this run would need about 9 GB of memory").status == "resource_limit");
  CHECK(ess::classify_run(2, 0, "", "error: not even one request per GPU fits in x").status == "out_of_memory");
  CHECK(ess::classify_run(2, 0, "", "error: s.json: at /a: bad").status == "invalid");
  CHECK(ess::classify_run(3, 0, "", "internal error").reason_code == "internal_error");
  CHECK(ess::classify_run(-1, 9, "", "").reason_code == "signal_9");
  CHECK(ess::classify_run(0, 0, "not json", "").reason_code == "bad_output");
  // A ledger whose middle line is damaged is an error, not silently skipped.
  std::ofstream(dir.path() / "bad.jsonl") << "{\"point\":0,\"status\":\"ok\"}\nnot json\n{\"point\":1,\"status\":\"ok\"}\n";
  CHECK_THROWS_WITH(ess::read_ledger(dir.path() / "bad.jsonl"), Catch::Contains("line 2 is not a ledger record"));
  std::ofstream(dir.path() / "torn.jsonl") << "{\"point\":0,\"status\":\"ok\"}\n{\"point\":1,\"sta";
  const auto torn = ess::read_ledger(dir.path() / "torn.jsonl");
  CHECK(torn.records.size() == 1);
  CHECK(torn.torn_tail);
}

TEST_CASE("sweep: --shard must be i/n with i < n") {
  ScratchDir dir("ess-sweep-shard");
  const auto spec = write_small_spec(dir.path());
  for (const std::string bad : {"2/2", "1", "a/2", "0/0"}) {
    const auto r = sweep(spec, dir.path() / "out", {"--shard", bad});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("expected i/n"));
  }
}

TEST_CASE("the bundled sweep spec parses: 20 points of baseline and ESS at 8K to 128K") {
  const auto spec = ess::load_sweep_spec(std::string(ESS_SOURCE_DIR) + "/scenarios/sweeps/ess-vs-baseline.json");
  CHECK(ess::expand_points(spec).size() == 20);
  CHECK(spec.steps == 4);
  CHECK(std::filesystem::exists(spec.base_dir / spec.base));
}

TEST_CASE("sweep constraints: checked against the axes, and matching points are skipped with the reason") {
  const std::string axes = R"("axes": [{"path": "a.b", "values": [1, 2]}, {"path": "c", "values": ["x", "y"]}], )";
  const auto unknown = spec_error("{" + kHead + axes + R"("constraints": [{"when": {"a.bb": 1}, "reason": "r"}]})");
  CHECK(unknown.pointer() == "/constraints/0/when/a.bb");
  CHECK_THAT(unknown.message(), Catch::Contains("not an axis") && Catch::Contains("did you mean \"a.b\"?"));
  CHECK_THAT(spec_error("{" + kHead + axes + R"("constraints": [{"when": {"a.b": 3}, "reason": "r"}]})").message(),
             Catch::Contains("3 is not a value of axis \"a.b\""));
  CHECK(spec_error("{" + kHead + axes + R"("constraints": [{"when": {"a.b": 1}, "reason": ""}]})").pointer() ==
        "/constraints/0/reason");
  CHECK(spec_error("{" + kHead + axes + R"("constraints": [{"when": {}, "reason": "r"}]})").pointer() ==
        "/constraints/0/when");
  const auto spec = parse("{" + kHead + axes + R"("constraints": [{"when": {"a.b": [2], "c": "y"}, "reason": "no"}]})");
  REQUIRE(spec.constraints.size() == 1);
  CHECK(spec.constraints[0].when.size() == 2);

  // A real sweep: the constrained points are invalid with code "constraint" and no run.
  ScratchDir dir("ess-sweep-constraint");
  const auto path = dir.path() / "c.json";
  std::ofstream(path) << R"({"schema": "ess-sim/sweep/v1", "name": "c",
    "base": ")" << ESS_SOURCE_DIR << R"(/scenarios/llama2-7b-a100-decode.json", "steps": 1,
    "axes": [{"path": "workload.batch_per_gpu", "values": [1, 2]}, {"path": "workload.context_length", "values": [512, 1024]}],
    "constraints": [{"when": {"workload.batch_per_gpu": 2, "workload.context_length": [1024]}, "reason": "not this one"}]})";
  const auto r = sweep(path, dir.path() / "out");
  REQUIRE(r.code == 0);
  const auto records = without_wall(read_file(dir.path() / "out" / "results.jsonl"));
  REQUIRE(records.size() == 4);
  for (const auto& rec : records) {
    const bool skipped = rec["point"] == 3;
    INFO(rec.dump());
    CHECK(rec["status"] == (skipped ? "invalid" : "ok"));
    if (skipped) {
      CHECK(rec["reason"]["code"] == "constraint");
      CHECK(rec["reason"]["message"] == "not this one");
    }
  }
}

TEST_CASE("sweep --timeout: a point past it is killed and recorded as a timeout, the others complete") {
  ScratchDir dir("ess-sweep-timeout");
  const auto path = dir.path() / "t.json";
  // This ESS point takes several seconds (cache warm-up and 16 steps on 32 GPUs), ten times the
  // timeout on a fast machine; the Llama points below take a few hundredths.
  std::ofstream(path) << R"({"schema": "ess-sim/sweep/v1", "name": "t",
    "base": ")" << ESS_SOURCE_DIR << R"(/scenarios/dsv32-ess-32k.json", "steps": 16,
    "axes": [{"path": "workload.context_length", "values": [32768]}]})";
  const auto r = sweep(path, dir.path() / "out", {"--timeout", "0.3s"});
  CHECK(r.code == 0);
  const auto records = without_wall(read_file(dir.path() / "out" / "results.jsonl"));
  REQUIRE(records.size() == 1);
  CHECK(records[0]["status"] == "resource_limit");
  CHECK(records[0]["reason"]["code"] == "timeout");
  CHECK_THAT(records[0]["reason"]["message"].get<std::string>(), Catch::Contains("sweep --timeout"));
  // The small sweep's points all finish well within a minute.
  const auto small = write_small_spec(dir.path());
  const auto ok = sweep(small, dir.path() / "small", {"--timeout", "60s"});
  CHECK(ok.code == 0);
  CHECK_THAT(read_file(dir.path() / "small" / "results.csv"), !Catch::Contains("timeout"));
  CHECK(sweep(small, dir.path() / "bad", {"--timeout", "10min"}).code == 2);
  CHECK(sweep(small, dir.path() / "bad", {"--timeout", "-1s"}).code == 2);
}

TEST_CASE("sweep: a serving scenario's points record its serving.* metrics, each the run's own value") {
  ScratchDir dir("ess-sweep");
  const auto path = dir.path() / "serving.json";
  std::ofstream(path) << R"({"schema": "ess-sim/sweep/v1", "name": "serving-small",
    "base": ")" << ESS_SOURCE_DIR << R"(/scenarios/serving-baseline-32k.json",
    "axes": [{"path": "serving.duration", "values": ["20s"]},
             {"path": "serving.table", "values": [{"batches": [1, 8, 21]}]},
             {"path": "serving.arrivals.rate", "values": ["1/s", "4/s"]}],
    "metrics": ["serving.ttft_s.p99", "serving.throughput.output_tokens_per_s", "serving.requests.completed"]})";
  const auto r = sweep(path, dir.path() / "out");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto records = without_wall(read_file(dir.path() / "out" / "results.jsonl"));
  REQUIRE(records.size() == 2);
  for (const auto& rec : records) {
    CHECK(rec["status"] == "ok");
    const std::string rate = rec["axes"]["serving.arrivals.rate"].get<std::string>();
    const auto direct = run_cli({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/serving-baseline-32k.json", "--set",
                                 "serving.duration=20s", "--set", "serving.table={\"batches\": [1, 8, 21]}", "--set",
                                 "serving.arrivals.rate=" + rate, "--json"});
    REQUIRE(direct.code == 0);
    const json s = json::parse(direct.out)["serving"];
    // The in-process run follows other Simulations of this test process, and SimGrid's clock does
    // not restart between them (engine_actors.cpp: times are clock - t0), so its last digits may
    // differ from the sweep's child process (a fresh process, like every `ess-sim run`).
    CHECK(rec["serving_ttft_p99_s"].get<double>() == Approx(s["ttft_s"]["p99"].get<double>()).epsilon(1e-12));
    CHECK(rec["serving_output_tokens_per_s"].get<double>() ==
          Approx(s["throughput"]["output_tokens_per_s"].get<double>()).epsilon(1e-12));
    CHECK(rec["serving_completed_requests"] == s["requests"]["completed"]);
  }
  CHECK(records[1]["serving_completed_requests"].get<int>() > records[0]["serving_completed_requests"].get<int>());
}

TEST_CASE("engine keys: a sweep has a column for each number decode summaries show", "[config][engine][sweep]") {
  std::set<std::string> columns;
  for (const auto& m : ess::known_sweep_metrics()) columns.insert(m.column);
  for (const ess::EngineKey& k : ess::engine_keys()) {
    INFO(k.name);
    const bool expected = k.number && k.shown != ess::KeyShown::prefill;
    CHECK(columns.count("engine_" + std::string(k.summary)) == (expected ? 1U : 0U));
  }
  CHECK(columns.count("engine_graph_batch") == 1);
}
