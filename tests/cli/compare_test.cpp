// `ess-sim compare`: the statistics (Student-t quantiles against table values, the paired
// difference and its confidence interval by hand), the metrics of a results.json, resolved
// differences, common random numbers (the same seed gives scenarios differing only in policy the
// same top-k selections), and the command end to end (each run a child process of the real binary,
// ESS_SIM_BINARY): every metric, the CI against the per-seed values, identical scenarios, seeds
// reaching the runs, bad input and failed runs.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"
#include "sim/graph/decode_step.h"
#include "sim/offload/synthetic_access.h"
#include "sim/sweep/compare.h"
#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"
#include "sim/base/error.h"

#ifndef ESS_SIM_BINARY
#error "ESS_SIM_BINARY (the ess-sim binary the runs use) must be defined by tests/CMakeLists.txt"
#endif

namespace {

using ess::test::read_file;
using ess::test::ScratchDir;
using nlohmann::json;
using Catch::Matchers::Contains;

const std::string kEss32k = std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-ess-32k.json";
// Small runs: 2 sampled requests, 8 warm-up windows (enough to fill the pools, so that LRU and
// FIFO evict differently), 2 steps: about 0.6 s each.
const std::vector<std::string> kSmall = {"--steps", "2", "--set", "cache.sampled_requests=2", "--set",
                                         "cache.warmup_windows=8"};

// The 32K ESS scenario with `cache` fields replaced, written into `dir`.
std::string write_variant(const std::filesystem::path& dir, const std::string& name, const json& cache,
                          const json& workload = json::object()) {
  json s = json::parse(read_file(kEss32k));
  for (const auto& item : cache.items()) s["cache"][item.key()] = item.value();
  for (const auto& item : workload.items()) s["workload"][item.key()] = item.value();
  s["name"] = name;
  const auto path = dir / (name + ".json");
  std::ofstream(path) << s.dump(1);
  return path.string();
}

// `ess-sim compare ...` in-process, its stderr (progress, warnings, failed runs, which go to
// std::cerr) captured too.
ess::test::CliRun compare(std::vector<std::string> args) {
  args.insert(args.begin(), "compare");
  args.insert(args.end(), {"--executable", ESS_SIM_BINARY, "--jobs", "2"});
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  auto r = ess::test::run_cli(args);
  std::cerr.rdbuf(old);
  r.err += captured.str();
  return r;
}

std::vector<std::string> with_small(std::vector<std::string> args) {
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  return args;
}

const json& metric(const json& report, const std::string& name) {
  for (const auto& m : report["metrics"]) {
    if (m["name"] == name) return m;
  }
  FAIL("no metric " << name << " in the comparison");
  throw;
}

// The selections of a few steps, layers and requests, from the synthetic access model built as
// Simulation::run builds it (sim/engine/simulation.cpp).
std::vector<std::vector<std::int64_t>> selections(const ess::Scenario& scenario) {
  const ess::DecodeRun run = ess::decode_run(scenario);
  const ess::DecodeStepBuilder builder(run, scenario.workload.batch_per_gpu.value_or(1),
                                       scenario.workload.batch_per_gpu.value_or(1));
  ess::SyntheticAccessParams params;
  params.layers = builder.layer_count();
  params.top_k = scenario.model.indexer->top_k;
  params.seed = ess::synthetic_access_seed(scenario.seed);
  ess::SyntheticAccess access(params);
  std::vector<std::vector<std::int64_t>> out;
  for (int step = 0; step < 3; ++step) {
    for (const int layer : {0, params.layers / 2, params.layers - 1}) {
      for (int request = 0; request < 3; ++request) {
        out.emplace_back();
        access.select(step, layer, request, builder.context_at(step), out.back());
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the Student t quantile matches the table values", "[compare]") {
  // Two-sided 95% (p = 0.975) and others, from any t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
  CHECK(ess::student_t_quantile(0.975, 1) == Approx(12.706).margin(5e-4));
  CHECK(ess::student_t_quantile(0.975, 2) == Approx(4.303).margin(5e-4));
  CHECK(ess::student_t_quantile(0.975, 4) == Approx(2.776).margin(5e-4));
  CHECK(ess::student_t_quantile(0.975, 30) == Approx(2.042).margin(5e-4));
  CHECK(ess::student_t_quantile(0.95, 10) == Approx(1.812).margin(5e-4));
  CHECK(ess::student_t_quantile(0.995, 2) == Approx(9.925).margin(5e-4));
  CHECK(ess::student_t_quantile(0.9995, 1) == Approx(636.619).margin(5e-3));
  CHECK(ess::student_t_quantile(0.975, 1e6) == Approx(1.960).margin(5e-4));  // the normal's
  CHECK(ess::student_t_quantile(0.025, 4) == Approx(-2.776).margin(5e-4));
  CHECK(ess::student_t_quantile(0.5, 3) == 0.0);
  CHECK(ess::student_t_cdf(ess::student_t_quantile(0.9, 7), 7) == Approx(0.9).epsilon(1e-10));
  // Cauchy (1 dof): P(T <= 1) = 3/4.
  CHECK(ess::student_t_cdf(1.0, 1) == Approx(0.75).epsilon(1e-12));
  CHECK_THROWS_AS(ess::student_t_quantile(1.0, 3), ess::InternalError);
  CHECK_THROWS_AS(ess::student_t_quantile(0.9, 0), ess::InternalError);
}

TEST_CASE("the regularized incomplete beta has its closed forms", "[compare]") {
  CHECK(ess::regularized_incomplete_beta(3, 3, 0.5) == Approx(0.5).epsilon(1e-12));  // symmetry
  CHECK(ess::regularized_incomplete_beta(1, 1, 0.3) == Approx(0.3).epsilon(1e-12));  // uniform
  CHECK(ess::regularized_incomplete_beta(2.5, 1, 0.4) == Approx(std::pow(0.4, 2.5)).epsilon(1e-12));  // x^a
  CHECK(ess::regularized_incomplete_beta(1, 4, 0.2) == Approx(1 - std::pow(0.8, 4)).epsilon(1e-12));
  CHECK_THROWS_AS(ess::regularized_incomplete_beta(1, 1, 1.5), ess::InternalError);
}

TEST_CASE("a paired difference and its confidence interval computed by hand", "[compare]") {
  // d = b - a = {1, 2, 2}: mean 5/3, sample sd sqrt(1/3), half width t(0.975, 2) sqrt(1/3) / sqrt(3)
  // = 4.302653 / 3.
  const auto d = ess::paired_difference({1, 2, 3}, {2, 4, 5}, 0.95);
  CHECK(d.n == 3);
  CHECK(d.mean == Approx(5.0 / 3.0));
  CHECK(d.ci_low == Approx(5.0 / 3.0 - 4.302653 / 3.0).epsilon(1e-6));
  CHECK(d.ci_high == Approx(5.0 / 3.0 + 4.302653 / 3.0).epsilon(1e-6));
  CHECK(d.relative == Approx(5.0 / 3.0 / 2.0));
  CHECK(d.significant);  // [0.23, 3.10]

  const auto wide = ess::paired_difference({1, 2, 3}, {2, 1, 5}, 0.95);  // d = {1, -1, 2}
  CHECK_FALSE(wide.significant);
  CHECK(wide.ci_low < 0.0);

  const auto same = ess::paired_difference({1, 5, 9}, {1, 5, 9}, 0.95);
  CHECK(same.mean == 0.0);
  CHECK(same.ci_low == 0.0);
  CHECK(same.ci_high == 0.0);
  CHECK(same.relative == 0.0);
  CHECK_FALSE(same.significant);

  const auto one = ess::paired_difference({2}, {3}, 0.95);  // one seed: no interval
  CHECK(one.mean == 1.0);
  CHECK(std::isnan(one.ci_low));
  CHECK_FALSE(one.significant);

  const auto gap = ess::paired_difference({1, NAN, 3}, {2, 7, 4}, 0.95);  // a run without the metric
  CHECK(gap.n == 2);
  CHECK(gap.mean == 1.0);
  CHECK(std::isnan(ess::paired_difference({0, 0}, {1, 2}, 0.9).relative));  // relative to 0
}

TEST_CASE("the metrics of a results.json are its numbers, not lists, strings or the seed", "[compare]") {
  const json results = json::parse(R"({"schema": "ess-sim/results/v1", "seed": 3,
    "summary": {"model": "x", "gpus": 8, "batch_is_max": false, "step_time_s": {"mean": 0.1, "p99": 0.2},
                "offload": {"fallback_at_step": null, "prefetch": {"accuracy": 0.5}}},
    "serving": {"ttft_s": {"p50": 1.5}}, "steps": [{"time_s": 0.1}], "layers": [1, 2]})");
  const auto m = ess::result_metrics(nlohmann::ordered_json::parse(results.dump()));
  std::vector<std::string> names;
  for (const auto& [name, value] : m) names.push_back(name);
  CHECK(names == std::vector<std::string>{"serving.ttft_s.p50", "summary.gpus", "summary.offload.prefetch.accuracy",
                                          "summary.step_time_s.mean", "summary.step_time_s.p99"});
}

TEST_CASE("a comparison keeps the metrics some two runs differ in and names the constants", "[compare]") {
  auto run = [](double step, double gpus, bool with_extra) {
    auto j = nlohmann::ordered_json::parse(R"({"seed": 1, "summary": {"gpus": 0, "step_time_s": {"mean": 0}}})");
    j["summary"]["gpus"] = gpus;
    j["summary"]["step_time_s"]["mean"] = step;
    if (with_extra) j["serving"]["goodput"] = step * 10;  // a metric only some runs have
    return j;
  };
  const auto c = ess::compare_results({{"A", "a.json", {}}, {"B", "b.json", {"/cache/eviction"}}}, {1, 2},
                                      {{run(1.0, 8, false), run(2.0, 8, false)}, {run(1.5, 8, true), run(2.5, 8, true)}},
                                      0.95, 4);
  REQUIRE(c.metrics.size() == 2);
  CHECK(c.metrics[0].name == "summary.step_time_s.mean");
  CHECK(c.metrics[0].means == std::vector<double>{1.5, 2.0});
  CHECK(c.metrics[0].diffs[0].mean == 0.5);
  CHECK(c.metrics[0].diffs[0].ci_low == 0.5);  // the same difference with both seeds
  CHECK(c.metrics[0].diffs[0].significant);
  CHECK(c.metrics[1].name == "serving.goodput");
  CHECK(std::isnan(c.metrics[1].means[0]));
  CHECK(c.metrics[1].diffs[0].n == 0);
  REQUIRE(c.constants.size() == 1);
  CHECK(c.constants[0] == std::pair<std::string, double>{"summary.gpus", 8});

  const auto j = ess::comparison_json(c);
  CHECK(j["metrics"][1]["values"][0].is_null());
  CHECK(j["metrics"][1]["diffs"][0]["mean"].is_null());
  CHECK(j["constants"]["summary.gpus"] == 8);
  CHECK(j["differs"]["B"] == nlohmann::ordered_json::array({"/cache/eviction"}));
  const auto table = ess::comparison_table(c);
  CHECK_THAT(table, Contains("B = b.json (differs from A in /cache/eviction)"));
  CHECK_THAT(table, Contains("summary.step_time_s.mean"));
  CHECK_THAT(table, Contains("+0.5 *"));
  CHECK_THAT(table, Contains("[0.5, 0.5]"));
  CHECK_THAT(table, Contains("summary.gpus=8"));
  CHECK_THAT(table, Contains("1 degree of freedom"));
}

TEST_CASE("resolved differences ignore sources and free text and name each differing value", "[compare]") {
  const auto a = nlohmann::ordered_json::parse(R"({"name": {"value": "a", "source": "a.json"},
    "seed": {"value": 1, "source": "a.json"},
    "cache": {"eviction": {"value": "lru", "source": "a.json"}, "access": {"model": {"value": "synthetic", "source": "default"}}},
    "workload": {"batch_per_gpu": {"value": 160, "source": "a.json"}}})");
  const auto b = nlohmann::ordered_json::parse(R"({"name": {"value": "b", "source": "b.json"},
    "seed": {"value": 1, "source": "--set seed=1"},
    "cache": {"eviction": {"value": "heat", "source": "b.json"}, "heat_decay": {"value": 0.9, "source": "default"},
              "access": {"model": {"value": "synthetic", "source": "b.json"}}},
    "workload": {"batch_per_gpu": {"value": 100, "source": "b.json"}}})");
  CHECK(ess::resolved_differences(a, b) ==
        std::vector<std::string>{"/cache/eviction", "/cache/heat_decay", "/workload/batch_per_gpu"});
  CHECK(ess::resolved_differences(a, a).empty());
  CHECK(ess::is_policy_path("/cache/eviction"));
  CHECK(ess::is_policy_path("/serving/arrivals/rate"));
  CHECK(ess::is_policy_path("/execution"));
  CHECK_FALSE(ess::is_policy_path("/cachex"));
  CHECK_FALSE(ess::is_policy_path("/workload/batch_per_gpu"));
}

TEST_CASE("the same seed gives scenarios that differ only in policy the same top-k selections", "[compare]") {
  std::vector<ess::Override> lru_da = {ess::parse_override("cache.eviction=lru"), ess::parse_override("cache.overlap=da")};
  std::vector<ess::Override> heat_serial = {ess::parse_override("cache.eviction=heat"),
                                            ess::parse_override("cache.overlap=serial")};
  const ess::Scenario a = ess::load_scenario(kEss32k, lru_da);
  const ess::Scenario b = ess::load_scenario(kEss32k, heat_serial);
  REQUIRE(a.cache.eviction != b.cache.eviction);
  REQUIRE(a.seed == b.seed);
  const auto sa = selections(a);
  CHECK(sa.front().size() == static_cast<std::size_t>(a.model.indexer->top_k));
  CHECK(sa == selections(b));

  // The comparison can fail: another seed draws other selections.
  heat_serial.push_back(ess::parse_override("seed=2"));
  CHECK(sa != selections(ess::load_scenario(kEss32k, heat_serial)));
}

TEST_CASE("compare lru vs fifo: every metric, the CI from the per-seed values, equal metrics", "[compare]") {
  ScratchDir dir("ess-compare");
  const auto lru = write_variant(dir.path(), "lru", {{"eviction", "lru"}});
  const auto fifo = write_variant(dir.path(), "fifo", {{"eviction", "fifo"}});
  // The table on stdout, and with -o the same comparison as JSON beside it.
  const auto r = compare(with_small({lru, fifo, "--seeds", "3", "-o", (dir.path() / "out").string()}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json report = json::parse(read_file(dir.path() / "out" / "compare.json"));
  CHECK(report["seeds"] == json::array({1, 2, 3}));
  CHECK(report["scenarios"] == json::array({lru, fifo}));
  CHECK(report["differs"]["B"] == json::array({"/cache/eviction"}));
  CHECK_THAT(r.err, Contains("[6/6]"));
  CHECK_THAT(r.err, !Contains("warning"));

  // One run of A with seed 2 by hand: every metric of its results.json is in the comparison (compared
  // or equal in every run) with this very value.
  const auto one = dir.path() / "one.json";
  std::string command = std::string(ESS_SIM_BINARY) + " run " + lru + " --set seed=2";
  for (const auto& a : kSmall) command += " " + a;
  REQUIRE(std::system((command + " --json > " + one.string()).c_str()) == 0);
  const auto expected = ess::result_metrics(nlohmann::ordered_json::parse(read_file(one)));
  REQUIRE(expected.size() > 40);
  for (const auto& [name, value] : expected) {
    INFO(name);
    if (report["constants"].contains(name)) {
      CHECK(report["constants"][name].get<double>() == value);
    } else {
      CHECK(metric(report, name)["samples"][0][1].get<double>() == value);
    }
  }
  CHECK(report["metrics"].size() + report["constants"].size() == expected.size());

  // The paired difference of every compared metric, by hand from its per-seed values.
  const double t = 4.302653;  // t(0.975, 2)
  for (const auto& m : report["metrics"]) {
    INFO(m["name"]);
    double d[3], mean = 0.0, ss = 0.0;
    for (int k = 0; k < 3; ++k) {
      d[k] = m["samples"][1][k].get<double>() - m["samples"][0][k].get<double>();
      mean += d[k] / 3.0;
    }
    for (const double x : d) ss += (x - mean) * (x - mean);
    const double half = t * std::sqrt(ss / 2.0) / std::sqrt(3.0);
    const auto& diff = m["diffs"][0];
    const double scale = std::fabs(mean) + half + 1e-300;
    CHECK(diff["mean"].get<double>() == Approx(mean).margin(1e-12 * scale));
    CHECK(diff["ci_low"].get<double>() == Approx(mean - half).margin(1e-6 * scale));
    CHECK(diff["ci_high"].get<double>() == Approx(mean + half).margin(1e-6 * scale));
    CHECK(diff["significant"].get<bool>() == (mean - half > 0 || mean + half < 0));
  }
  // Misses differ by policy; the MoE GEMM time does not (it follows the routing, which the seed
  // alone draws), yet it varies over the seeds.
  CHECK(metric(report, "summary.offload.misses_per_request_per_step")["diffs"][0]["significant"] == true);
  const auto& gemm = metric(report, "summary.time_by_category_s.gemm");
  CHECK(gemm["diffs"][0]["mean"] == 0.0);
  CHECK(gemm["diffs"][0]["ci_low"] == 0.0);
  CHECK(gemm["diffs"][0]["ci_high"] == 0.0);
  CHECK(gemm["diffs"][0]["significant"] == false);
  CHECK(gemm["samples"][0][0] != gemm["samples"][0][1]);
  CHECK(gemm["samples"][0] == gemm["samples"][1]);

  // The table: a row for every compared metric, the constants named.
  CHECK(read_file(dir.path() / "out" / "compare.txt") + "\n  wrote " + (dir.path() / "out").string() +
            "/compare.json and compare.txt\n" == r.out);
  const auto& text = r;
  CHECK_THAT(text.out, Contains("B = " + fifo + " (differs from A in /cache/eviction)"));
  CHECK_THAT(text.out, Contains("metric"));
  for (const auto& m : report["metrics"]) CHECK_THAT(text.out, Contains("\n" + m["name"].get<std::string>() + " "));
  CHECK_THAT(text.out, Contains("summary.gpus=32"));
}

TEST_CASE("compare of a scenario with itself gives zero differences, and seeds reach the runs", "[compare]") {
  ScratchDir dir("ess-compare");
  const auto r = compare(with_small({kEss32k, kEss32k, "--seed-list", "4,9", "--json", "-o", (dir.path() / "out").string()}));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json report = json::parse(r.out);
  CHECK(report["seeds"] == json::array({4, 9}));
  CHECK(report["differs"]["B"].empty());
  REQUIRE(report["metrics"].size() > 10);
  std::size_t varying = 0;
  for (const auto& m : report["metrics"]) {
    INFO(m["name"]);
    // Common random numbers: the same seed gives the same run, bit for bit.
    CHECK(m["samples"][0] == m["samples"][1]);
    CHECK(m["diffs"][0]["mean"] == 0.0);
    CHECK(m["diffs"][0]["ci_low"] == 0.0);
    CHECK(m["diffs"][0]["ci_high"] == 0.0);
    CHECK(m["diffs"][0]["significant"] == false);
    // A metric is compared only when some two runs differ: here, the two seeds.
    varying += m["samples"][0][0] != m["samples"][0][1];
  }
  CHECK(varying == report["metrics"].size());
  CHECK(metric(report, "summary.step_time_s.mean")["samples"][0][0] !=
        metric(report, "summary.step_time_s.mean")["samples"][0][1]);
  // -o: the JSON printed and the table, as one set.
  CHECK(read_file(dir.path() / "out" / "compare.json") == r.out);
  CHECK_THAT(read_file(dir.path() / "out" / "compare.txt"), Contains("summary.step_time_s.mean"));
  CHECK(std::filesystem::exists(dir.path() / "out" / "manifest.json"));
}

TEST_CASE("compare rejects bad input precisely, before running anything", "[compare]") {
  ScratchDir dir("ess-compare");
  const auto out = dir.path() / "out";
  auto fails = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), {"-o", out.string()});
    const auto r = compare(args);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains(message));
    CHECK_THAT(r.err, !Contains("[1/"));  // no run started
    CHECK_FALSE(std::filesystem::exists(out));
  };
  fails({kEss32k}, "expected at least two scenarios to compare, got 1");
  fails({kEss32k, (dir.path() / "missing.json").string()}, "missing.json");
  fails({kEss32k, kEss32k, "--set", "seed=3"}, "choose the seeds with --seeds N or --seed-list");
  fails({kEss32k, kEss32k, "--set", "cache.eviction=lfu"}, "/cache/eviction");
  fails({kEss32k, kEss32k, "--seed-list", "1,1"}, "expected distinct non-negative integer seeds");
  fails({kEss32k, kEss32k, "--seed-list", "1,x"}, "--seed-list 1,x");
  fails({kEss32k, kEss32k, "--seeds", "3", "--seed-list", "1,2"}, "excludes");
  fails({kEss32k, kEss32k, "--confidence", "1.5"}, "expected a confidence level in (0, 1)");
  fails({kEss32k, kEss32k, "--set", "workload.batch_per_gpu=100000"}, "does not fit");
}

TEST_CASE("compare reports a failed run with its stderr tail and exits non-zero", "[compare]") {
  ScratchDir dir("ess-compare");
  // A "binary" that fails as a crashing run would: 30 lines on stderr, exit 3.
  const auto fake = dir.path() / "fake-ess-sim";
  std::ofstream(fake) << "#!/bin/sh\nfor i in $(seq 1 30); do echo \"line $i\" >&2; done\nexit 3\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  // B differs outside the policy sections: a warning, and the comparison still goes ahead.
  const auto big = write_variant(dir.path(), "batch100", json::object(), {{"batch_per_gpu", 100}});
  std::vector<std::string> args = {"compare", kEss32k, big, "--seeds", "2", "-o", (dir.path() / "out").string(),
                                   "--executable", fake.string(), "--jobs", "1"};
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const auto r = ess::test::run_cli(args);
  std::cerr.rdbuf(old);
  const std::string err = r.err + captured.str();
  INFO(err);
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK_THAT(err, Contains("warning: B (" + big + ") differs from A"));
  CHECK_THAT(err, Contains("/workload/batch_per_gpu"));
  CHECK_THAT(err, Contains("the run of A (" + kEss32k + ") with seed 1 failed (failed, internal_error)"));
  CHECK_THAT(err, Contains("line 30"));
  CHECK_THAT(err, Contains("line 11"));
  CHECK_THAT(err, !Contains("line 10\n"));  // only the last 20 lines
  CHECK_THAT(err, Contains("[1/4]"));
  CHECK_THAT(err, !Contains("[2/4]"));  // no run started after the failure
  CHECK_FALSE(std::filesystem::exists(dir.path() / "out" / "compare.json"));
}

TEST_CASE("compare of serving policies: the same seed gives every policy the same arrivals", "[compare]") {
  ScratchDir dir("ess-compare");
  const std::string base = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-baseline-32k.json";
  json tight = json::parse(read_file(base));
  tight["serving"]["controller"]["p99_target"] = "45ms";
  tight["name"] = "tight";
  const auto tight_path = (dir.path() / "tight.json").string();
  std::ofstream(tight_path) << tight.dump(1);
  const auto r = compare({base, tight_path, "--seeds", "2", "--json", "--set", "serving.duration=120s"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json report = json::parse(r.out);
  CHECK(report["differs"]["B"] == json::array({"/serving/controller/p99_target"}));
  CHECK_THAT(r.err, !Contains("warning"));
  for (const char* name : {"serving.requests.arrived", "serving.requests.total_input_tokens"}) {
    INFO(name);
    const auto& m = metric(report, name);
    CHECK(m["samples"][0] == m["samples"][1]);           // the same arrivals under both policies
    CHECK(m["samples"][0][0] != m["samples"][0][1]);     // and other arrivals with another seed
    CHECK(m["diffs"][0]["ci_low"] == 0.0);
  }
  (void)metric(report, "serving.ttft_s.p99");
}
