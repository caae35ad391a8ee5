// Serving's preflight and the inputs that once broke serving without a word (issue 38): absurd
// loads refused before any work (exit 2, the knob named) unless --allow-large, short requests
// that served nothing or shrank the others' caches, a batch bound above what HBM holds, NaN on the
// command line, numbers a trace cannot hold, a byte-order mark, a run with no request completed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/engine/preflight.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/serving_preflight.h"
#include "sim/serving/trace_formats.h"
#include "tests/cli/cli_run.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

TEST_CASE("serving check refuses a load whose requests would not fit in memory, before drawing them", "[serving][preflight]") {
  // 1e6/s for the bundled 600 s: 6e8 requests, about 200 GB to hold.
  const auto r = test::run_cli({"check", test::kServingEss, "--set", "serving.arrivals.rate=1e6/s"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("serving requests (600000000)") && Catch::Contains("serving.arrivals.rate x serving.duration") &&
                        Catch::Contains("--allow-large"));
  // The estimate alone, without drawing: the expected count of Poisson arrivals over rate changes.
  const Scenario s = test::serving_scenario(test::kServingEss, {"serving.duration=100s", "serving.arrivals.rate=2/s",
                                                                R"(serving.arrivals.rate_changes=[{"at": "50s", "rate": "4/s"}])"});
  const ResourceEstimate e = estimate_requests(s);
  REQUIRE(!e.memory.empty());
  CHECK_THAT(e.memory.front().what, Catch::Contains("(300)"));
}

TEST_CASE("serving check refuses step tables at contexts no run could hold", "[serving][preflight]") {
  const auto r = test::run_cli({"check", test::kServingEss, "--set", "serving.table.contexts=[1000000000]"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("largest step-table run") && Catch::Contains("cache.sampled_requests"));
}

TEST_CASE("check --estimate prints a serving run's requests, step-table runs, memory and wall time", "[serving][preflight]") {
  const auto r = test::run_cli({"check", test::kServingBaseline, "--estimate"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("requests") && Catch::Contains("step-table runs") && Catch::Contains("of wall time"));
}

TEST_CASE("a prefill scenario with absurd steps is refused by its estimate", "[serving][preflight]") {
  const std::string prefill = std::string(ESS_SOURCE_DIR) + "/scenarios/measured/ds-profile-h800-ep32-prefill.json";
  const auto r = test::run_cli({"check", prefill, "--set", "prefill.steps=1000"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("MoE routing of prompt tokens") && Catch::Contains("prefill.steps"));
}

TEST_CASE("a short request neither breaks serving nor shrinks the cache room of the others", "[serving][memory]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {});
  const std::vector<std::int64_t> long_ones(100, 32768 + 1024);
  std::vector<std::int64_t> with_short = long_ones;
  with_short.push_back(10 + 5);
  with_short.push_back(100 + 5);
  const ServingMemory a(s, long_ones, std::nullopt);
  const ServingMemory b(s, with_short, std::nullopt);
  // The room does not depend on the shortest request (it once fell from 28.4 GB to 12.9 GB).
  CHECK(b.hbm_budget() == Approx(a.hbm_budget()));
  CHECK(a.hbm_budget() > 20e9);
  // The bound counts the requests that fit: the two short ones add at most two.
  CHECK(b.batch_bound() >= a.batch_bound());
  CHECK(b.batch_bound() <= a.batch_bound() + 2);
  // Activations are charged per admitted request, so a full GPU of long requests still fits.
  const double held = a.gpu_only(32768 + 1024).hbm_held();
  CHECK(static_cast<double>(a.batch_bound()) * held <= a.hbm_budget());
  CHECK(static_cast<double>(a.batch_bound() + 1) * held > a.hbm_budget());
  CHECK(a.gpu_only(15).activations > 0.0);
}

TEST_CASE("a serving run of 15-token requests runs", "[serving][memory]") {
  const auto r = test::run_cli({"run", test::kServingBaseline, "--set", "serving.duration=5s", "--set",
                                "serving.arrivals.prompt_tokens=10", "--set", "serving.arrivals.output_tokens=5"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("TPOT mean / p99"));
}

TEST_CASE("serving.max_batch_per_gpu above what HBM holds is lowered to it, and the summary says so", "[serving][memory]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {});
  const std::vector<std::int64_t> lengths(1000, 32768 + 1024);
  const ServingMemory free(s, lengths, std::nullopt);
  const ServingMemory given(s, lengths, 65536);
  CHECK(given.batch_bound() == free.batch_bound());
  REQUIRE(given.clamped());
  CHECK(*given.clamped() == 65536);
  const ServingMemory lower(s, lengths, 3);
  CHECK(lower.batch_bound() == 3);
  CHECK(!lower.clamped());
}

TEST_CASE("NaN and infinity are refused by every floating-point command-line option", "[serving][cli]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cost", "routing", "--skew", "nan"}, std::vector<std::string>{"cost", "routing", "--drift", "-nan"},
        std::vector<std::string>{"search", "pd", test::kServingEss, "--attainment", "nan"}}) {
    const auto r = test::run_cli(args);
    INFO(args[1] + " " + args[2]);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("expected a finite number"));
  }
  // Infinity is out of any finite range too (CLI::Range catches it, unlike NaN).
  CHECK(test::run_cli({"cost", "routing", "--drift", "inf"}).code == 2);
}

TEST_CASE("a trace number beyond a double is bad input naming its line, and a byte-order mark is skipped", "[serving][trace]") {
  const std::string line1 = R"({"timestamp": 0, "input_length": 100, "output_length": 5})";
  const std::string line2 = R"({"timestamp": 1, "input_length": 1e400, "output_length": 5})";
  CHECK_THROWS_WITH(parse_trace("mooncake-jsonl", line1 + "\n" + line2 + "\n", "t.jsonl", 60.0),
                    Catch::Contains("line 2") && Catch::Contains("out of range"));
  const auto rows = parse_trace("ess-csv", "\xEF\xBB\xBF" "arrival_s,prompt_tokens,output_tokens\n0.5,1000,100\n", "bom.csv", 60.0);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].prompt_tokens == 1000);
}

TEST_CASE("a run in which no request completes prints no latency as 0 ms", "[serving][metrics]") {
  // Requests far longer than the run can decode: the drain limit ends it with all incomplete.
  const auto r = test::run_cli({"run", test::kServingBaseline, "--json", "--set", "serving.duration=1s", "--set",
                                "serving.drain_limit=1s", "--set", "serving.arrivals.output_tokens=100000", "--set",
                                "serving.arrivals.rate=4/s"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["serving"]["requests"]["completed"] == 0);
  CHECK(j["serving"]["tpot_s"]["mean"].is_null());
  CHECK(j["serving"]["ttft_s"]["p99"].is_null());
  const auto text = test::run_cli({"run", test::kServingBaseline, "--set", "serving.duration=1s", "--set", "serving.drain_limit=1s",
                                   "--set", "serving.arrivals.output_tokens=100000", "--set", "serving.arrivals.rate=4/s"});
  CHECK_THAT(text.out, Catch::Contains("no request completed") && Catch::Contains("TPOT mean / p99                    none / none") &&
                           Catch::Contains("step time mean / p99               none / none"));
}
