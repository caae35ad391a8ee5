// The capacity-planning searches against brute force: every batch (or node count) of a small grid
// simulated by the real binary (ESS_SIM_BINARY), the answer read off the scan, compared with what
// the bisection found with far fewer simulations. And fit advice that really fits, and the Pareto
// table of a ledger.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/config/scenario.h"
#include "sim/memory/memory_plan.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/search.h"
#include "tests/scratch_dir.h"
#include "tests/cli/cli_run.h"

#ifndef ESS_SIM_BINARY
#error "ESS_SIM_BINARY must be defined by tests/CMakeLists.txt"
#endif

namespace {

using ess::test::ScratchDir;

using ess::test::kScenario;

ess::SearchContext context(const ScratchDir& dir) {
  ess::SearchContext c;
  c.executable = ESS_SIM_BINARY;
  c.scenario = kScenario;
  c.steps = 1;
  c.work_dir = dir.path() / "probes";
  return c;
}

double metric(const ess::PointOutcome& o, const char* pointer) {
  return o.results.at(nlohmann::ordered_json::json_pointer(pointer)).get<double>();
}

}  // namespace

TEST_CASE("max-batch finds the batch a brute-force scan of every batch finds", "[search]") {
  ScratchDir dir("ess-search");
  const auto c = context(dir);
  const std::int64_t most = ess::resolve_batch(ess::decode_run(ess::load_scenario(kScenario, {ess::parse_override("workload.batch_per_gpu=max")})));
  REQUIRE(most >= 8);
  std::vector<double> p99(static_cast<std::size_t>(most) + 1);
  std::vector<double> tpot(static_cast<std::size_t>(most) + 1);
  for (std::int64_t b = 1; b <= most; ++b) {
    const auto o = ess::run_scenario_child(c.executable, kScenario, {"workload.batch_per_gpu=" + std::to_string(b)}, 1,
                                           {}, c.work_dir);
    REQUIRE(o.status == "ok");
    p99[static_cast<std::size_t>(b)] = metric(o, "/summary/step_time_s/p99");
    tpot[static_cast<std::size_t>(b)] = 1.0 / metric(o, "/summary/otps_per_request");
  }
  // The largest batch meeting `target` by the scan (0: none).
  const auto scan = [&](const std::vector<double>& values, double target) {
    std::int64_t best = 0;
    for (std::int64_t b = 1; b <= most; ++b) {
      if (values[static_cast<std::size_t>(b)] <= target) best = b;
    }
    return best;
  };
  for (const auto& [kind, values] : {std::pair{ess::LatencyTarget::p99_step_time, p99}, std::pair{ess::LatencyTarget::tpot, tpot}}) {
    // Targets between the grid's values, just above the smallest and the largest, and below all.
    const std::vector<double> targets = {values[1] * 0.9, values[1] * 1.0001, values[static_cast<std::size_t>(most / 3)] * 1.0001,
                                         values[static_cast<std::size_t>(2 * most / 3)] * 0.9999,
                                         values[static_cast<std::size_t>(most)] * 1.01};
    for (const double target : targets) {
      INFO("target " << target << " s");
      const ess::SearchResult r = ess::search_max_batch(c, kind, target);
      const std::int64_t expected = scan(values, target);
      CHECK(r.found == (expected > 0));
      if (expected > 0) {
        CHECK(r.answer == expected);
        CHECK(r.bound == (expected == most ? "memory" : "target"));
        // 0.01% from the target is inside any band the profile gives; 10% more than the
        // largest batch's value is outside its band of a few percent.
        if (target == values[static_cast<std::size_t>(most / 3)] * 1.0001) CHECK_THAT(r.band, Catch::Contains("inside the band"));
      }
      CHECK(r.probes.size() <= 3 + static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(most)))));
    }
  }
}

TEST_CASE("min-gpus finds the node count a brute-force scan finds", "[search]") {
  ScratchDir dir("ess-search");
  auto c = context(dir);
  c.sets = {"workload.batch_per_gpu=8"};
  // 3 nodes would put EP 24 over 256 experts, which the loader rejects: the search skips it too.
  const std::vector<int> nodes = {1, 2, 4};
  std::vector<double> total;
  for (const int n : nodes) {
    const auto o = ess::run_scenario_child(c.executable, kScenario,
                                           {"workload.batch_per_gpu=8", "hardware.nodes=" + std::to_string(n),
                                            "parallelism.attention_dp=" + std::to_string(8 * n),
                                            "parallelism.expert_parallel=" + std::to_string(8 * n)},
                                           1, {}, c.work_dir);
    REQUIRE(o.status == "ok");
    total.push_back(metric(o, "/summary/tokens_per_s_total"));
  }
  const ess::SearchResult far = ess::search_max_batch(c, ess::LatencyTarget::p99_step_time, 10.0);
  CHECK_THAT(far.band, Catch::Contains("outside the band"));
  for (std::size_t i = 0; i < total.size(); ++i) {
    const double target = total[i] * 0.999;
    std::size_t expected = 0;
    while (total[expected] < target) ++expected;
    const ess::SearchResult r = ess::search_min_gpus(c, target, 4);
    INFO("target " << target << " tokens/s");
    REQUIRE(r.found);
    CHECK(r.answer == static_cast<std::int64_t>(8 * nodes[expected]));
  }
  const ess::SearchResult none = ess::search_min_gpus(c, total.back() * 10, 4);
  CHECK_FALSE(none.found);
  CHECK_THAT(none.message, Catch::Contains("32 GPUs"));
}

TEST_CASE("fit advice: each suggestion fits, the scenario as given does not", "[search]") {
  const std::string ess128 = std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-ess-128k.json";
  const std::vector<std::string> one_node = {"hardware.nodes=1", "parallelism.attention_dp=8",
                                             "parallelism.expert_parallel=8"};
  const ess::FitAdvice a = ess::fit_advice(ess128, one_node, 8);
  REQUIRE_FALSE(a.fits);
  CHECK_THAT(a.budget, Catch::Contains("does not fit"));
  REQUIRE(a.suggestions.size() >= 2);
  for (const auto& s : a.suggestions) {
    INFO(s.what);
    std::vector<ess::Override> overrides;
    for (const auto& set : one_node) overrides.push_back(ess::parse_override(set));
    for (const auto& set : s.sets) overrides.push_back(ess::parse_override(set));
    CHECK_NOTHROW(ess::resolve_batch(ess::decode_run(ess::load_scenario(ess128, overrides))));
  }
  const ess::FitAdvice fine = ess::fit_advice(kScenario, {}, 8);
  CHECK(fine.fits);
  CHECK(fine.batch_per_gpu > 0);
}

TEST_CASE("the Pareto table ranks the front of a ledger by throughput", "[search][pareto]") {
  using J = nlohmann::ordered_json;
  std::vector<J> records;
  // (tokens/s per GPU, otps): point 1 dominates point 0; point 3 is failed; 2 and 4 are on the front.
  const std::vector<std::pair<double, double>> values = {{100, 10}, {120, 20}, {300, 5}, {0, 0}, {50, 40}};
  for (std::size_t i = 0; i < values.size(); ++i) {
    J r;
    r["point"] = i;
    r["axes"] = {{"workload.batch_per_gpu", i}};
    r["status"] = i == 3 ? "failed" : "ok";
    r["tokens_per_s_per_gpu"] = i == 3 ? J() : J(values[i].first);
    r["otps_per_request_tokens_per_s"] = i == 3 ? J() : J(values[i].second);
    records.push_back(r);
  }
  const ess::ParetoTable t = ess::pareto_table(records, 0, "results.jsonl");
  CHECK(t.ok_points == 4);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].point == 2);
  CHECK(t.rows[1].point == 1);
  CHECK(t.rows[2].point == 4);
  CHECK(t.rows[2].tpot_s == Approx(1.0 / 40));
  CHECK(ess::pareto_table(records, 2, "results.jsonl").rows.size() == 2);
  std::vector<J> bare = {J{{"point", 0}, {"status", "ok"}, {"batch_per_gpu", 3}}};
  CHECK_THROWS_WITH(ess::pareto_table(bare, 0, "results.jsonl"), Catch::Contains("otps_per_request"));
}
