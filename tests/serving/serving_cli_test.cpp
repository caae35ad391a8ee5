// The serving mode through the command line, in-process: `check` prints the serving section,
// `run` writes results.json with its "serving" object and prints the serving table.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

TEST_CASE("check prints the resolved serving section", "[serving][cli]") {
  const auto r = test::run_cli({"check", test::kServingBaseline});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("\"serving\": {"));
  CHECK_THAT(r.out, Catch::Contains("\"p99_target\": {\"value\": \"0.5s\""));
}

TEST_CASE("run of a serving scenario writes results.json with the serving metrics", "[serving][cli]") {
  const test::ScratchDir dir("serving-cli");
  const auto out = (dir.path() / "out").string();
  // A short period keeps the test fast; the table still comes from Simulation runs.
  const auto r = test::run_cli({"run", test::kServingBaseline, "-o", out, "--set", "serving.duration=20s", "--set",
                                "serving.arrivals.rate=2/s", "--set", R"(serving.table.batches=[1, 8, 20])"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("TPOT mean / p99"));
  CHECK_THAT(r.out, Catch::Contains("energy per output token"));
  const auto j = nlohmann::json::parse(test::read_file(std::filesystem::path(out) / "results.json"));
  CHECK(j["mode"] == "serving");
  for (const char* k : {"ttft_s", "tpot_s", "itl_s", "itl_per_token_s", "e2el_s", "throughput", "goodput", "concurrency",
                        "controller", "energy", "memory", "step_table"}) {
    INFO(k);
    CHECK(j["serving"].contains(k));
  }
  CHECK(j["serving"]["requests"]["completed"].get<int>() > 20);
  CHECK(j["serving"]["energy"]["per_output_token_j"].get<double>() > 0);
  CHECK(j["serving"]["cost"].is_null());  // no prices given
  // The band: the calibration band through the step tables (decode steps for TPOT and throughput,
  // the prefill pool's steps for TTFT), the engine's own error in quadrature.
  CHECK_THAT(r.out, Catch::Contains("band (1 sigma)"));
  const auto& band = j["serving"]["band"];
  CHECK(band["calibrated"] == true);
  for (const char* m : {"ttft", "tpot", "output_throughput"}) {
    INFO(m);
    const double cal = band[m]["calibration"].get<double>();
    CHECK(cal > 0.001);
    CHECK(cal < 0.2);
    const double engine = band[m]["engine"].is_null() ? 0.0 : band[m]["engine"].get<double>();
    CHECK(band[m]["sigma"].get<double>() == Approx(std::hypot(cal, engine)));
  }
  CHECK(band["tpot"]["mean_low_s"].get<double>() < j["serving"]["tpot_s"]["mean"].get<double>());
}

TEST_CASE("serving cost: the bill at the user's prices, per million output tokens", "[serving][cli][cost]") {
  const test::ScratchDir dir("serving-cost");
  const auto out = (dir.path() / "out").string();
  const auto r = test::run_cli({"run", test::kServingBaseline, "-o", out, "--set", "serving.duration=20s", "--set",
                                "serving.arrivals.rate=2/s", "--set", R"(serving.table.batches=[1, 8, 20])", "--set",
                                "serving.cost.gpu_hour_usd=3.5", "--set", "serving.cost.energy_kwh_usd=0.12"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("per million output tokens"));
  const auto j = nlohmann::json::parse(test::read_file(std::filesystem::path(out) / "results.json"))["serving"];
  const double hours = j["duration_s"].get<double>() / 3600.0;
  const auto& c = j["cost"];
  // The decode node and the prefill instances (serving.prefill: 8 instances of 8 GPUs).
  CHECK(j["prefill"]["gpus"] == 64);
  CHECK(c["items"]["gpus"]["usd"].get<double>() == Approx(3.5 * (8 + 64) * hours));
  CHECK(c["items"]["energy"]["usd"].get<double>() == Approx(0.12 * j["energy"]["energy_j"].get<double>() / 3.6e6));
  CHECK_FALSE(c["items"].contains("host_dram"));  // not priced
  const double total = c["total_usd"].get<double>();
  CHECK(total == Approx(c["items"]["gpus"]["usd"].get<double>() + c["items"]["energy"]["usd"].get<double>()));
  CHECK(c["per_million_output_tokens_usd"].get<double>() ==
        Approx(total / j["requests"]["total_output_tokens"].get<double>() * 1e6));
  const auto bad = test::run_cli({"check", test::kServingBaseline, "--set", "serving.cost.gpu_hour=3"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("gpu_hour_usd"));
}

TEST_CASE("search pd: the fewest prefill instances meeting the SLOs, or no answer and why", "[serving][cli][prefill]") {
  const std::vector<std::string> load = {"--set", "serving.duration=30s", "--set", "serving.arrivals.rate=1/s", "--set",
                                         "serving.table.batches=[1, 8, 21]"};
  std::vector<std::string> found = {"search", "pd", test::kServingBaseline, "--set", "serving.slo.ttft=60s", "--max-instances", "4"};
  found.insert(found.end(), load.begin(), load.end());
  const auto ok = test::run_cli(found);
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("answer: ") && Catch::Contains("prefill instance(s)"));
  std::vector<std::string> none = {"search", "pd", test::kServingBaseline, "--set", "serving.slo.ttft=1s", "--max-instances", "2"};
  none.insert(none.end(), load.begin(), load.end());
  const auto no = test::run_cli(none);
  CHECK(no.code == 1);
  CHECK_THAT(no.out, Catch::Contains("no answer, because") && Catch::Contains("TTFT p99"));
  const auto bad = test::run_cli({"search", "pd", std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-baseline-32k.json"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("disaggregated"));
}

TEST_CASE("search pd: decode node counts and the colocated alternative, the answer the fewest GPUs", "[serving][cli][prefill]") {
  std::vector<std::string> args = {"search", "pd", test::kServingBaseline, "--set", "serving.slo.ttft=60s", "--set",
                                   "serving.slo.tpot=2s", "--set", "serving.duration=30s", "--set", "serving.arrivals.rate=0.2/s",
                                   "--set", "serving.table.batches=[1, 8, 21]", "--max-instances", "2", "--decode-nodes", "1",
                                   "--colocated", "--colocated-tokens", "2048", "--json"};
  const auto r = test::run_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["colocated"].size() == 1);
  const auto& c = j["colocated"][0];
  CHECK(c["decode_nodes"] == 1);
  CHECK(c["gpus"] == 8);
  // Disaggregated needs a prefill node beside the decode node: 16 GPUs at least. The answer is the
  // fewest GPUs among the configurations that meet the SLOs.
  const auto& a = j["answer"];
  if (c["meets"].get<bool>()) {
    CHECK(a["kind"] == "colocated");
    CHECK(a["gpus"] == 8);
  } else {
    CHECK(a["kind"] == "disaggregated");
    CHECK(a["gpus"].get<int>() >= 16);
  }
  for (const auto& p : j["probes"]) CHECK(p["decode_nodes"] == 1);
  const auto bad = test::run_cli({"search", "pd", test::kServingBaseline, "--decode-nodes", "0"});
  CHECK(bad.code != 0);
}
