#include "sim/serving/arrivals.h"

#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

ArrivalConfig poisson(double rate, std::int64_t prompt_lo = 100, std::int64_t prompt_hi = 100) {
  ArrivalConfig a;
  a.rate = rate;
  a.prompt_tokens = {prompt_lo, prompt_hi};
  a.output_tokens = {10, 20};
  return a;
}

bool same(const std::vector<Request>& x, const std::vector<Request>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].arrival != y[i].arrival || x[i].prompt_tokens != y[i].prompt_tokens || x[i].output_tokens != y[i].output_tokens) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the same seed gives identical arrivals, another seed other ones", "[serving][arrivals]") {
  const auto a = poisson_arrivals(poisson(5), 100, 42);
  const auto b = poisson_arrivals(poisson(5), 100, 42);
  const auto c = poisson_arrivals(poisson(5), 100, 43);
  CHECK(same(a, b));
  CHECK_FALSE(same(a, c));
}

TEST_CASE("arrivals of a scenario do not depend on the controller, admission or cache settings", "[serving][arrivals]") {
  const Scenario base = test::serving_scenario(test::kServingBaseline, {});
  const Scenario other = test::serving_scenario(test::kServingEss, {"serving.controller.enabled=false", "serving.max_batch_per_gpu=3",
                                                                    "serving.controller.p99_target=40ms"});
  const auto a = arrivals(*base.serving, base.seed);
  const auto b = arrivals(*other.serving, other.seed);
  REQUIRE(a.size() > 1000);
  CHECK(same(a, b));
}

TEST_CASE("a different length distribution does not move the arrival times (one stream each)", "[serving][arrivals]") {
  const auto a = poisson_arrivals(poisson(5, 100, 100), 50, 7);
  const auto b = poisson_arrivals(poisson(5, 10, 5000), 50, 7);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].arrival == b[i].arrival);
    CHECK(a[i].output_tokens == b[i].output_tokens);
    CHECK(b[i].prompt_tokens >= 10);
    CHECK(b[i].prompt_tokens <= 5000);
  }
}

TEST_CASE("Poisson arrivals come at the configured rate, and at the new rate after a change", "[serving][arrivals]") {
  ArrivalConfig cfg = poisson(10);
  cfg.rate_changes = {{1000.0, 40.0}};
  const auto r = poisson_arrivals(cfg, 2000, 1);
  double before = 0;
  double after = 0;
  for (const auto& q : r) (q.arrival < 1000 ? before : after) += 1;
  // Counts of a Poisson process: mean rate x time, standard deviation its square root; 4 sigma.
  INFO("before " << before << " (expected 10000), after " << after << " (expected 40000)");
  CHECK(std::abs(before - 10000) < 4 * 100);
  CHECK(std::abs(after - 40000) < 4 * 200);
  for (std::size_t i = 1; i < r.size(); ++i) REQUIRE(r[i].arrival >= r[i - 1].arrival);
  CHECK(r.back().arrival < 2000);
}

TEST_CASE("a zero rate gives no arrivals until the next change", "[serving][arrivals]") {
  ArrivalConfig cfg = poisson(0);
  cfg.rate_changes = {{50.0, 2.0}};
  const auto r = poisson_arrivals(cfg, 100, 3);
  REQUIRE_FALSE(r.empty());
  CHECK(r.front().arrival >= 50.0);
}

TEST_CASE("a trace gives its rows, leaves out those after the period, and names the line of a bad row", "[serving][arrivals]") {
  const auto r = parse_arrival_trace("arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n# comment\n1.0, 200 ,20\n9,1,1\n", "t.csv", 5);
  REQUIRE(r.size() == 2);
  CHECK(r[1].arrival == 1.0);
  CHECK(r[1].prompt_tokens == 200);
  CHECK(r[1].output_tokens == 20);
  const auto fails = [](const std::string& text, const std::string& needle) {
    try {
      (void)parse_arrival_trace(text, "t.csv", 100);
    } catch (const ConfigError& e) {
      INFO(e.what());
      CHECK(e.origin() == "t.csv");
      CHECK_THAT(e.message(), Catch::Contains(needle));
      return;
    }
    FAIL("no error for " << text);
  };
  fails("arrival,prompt,output\n", "expected the header");
  fails("arrival_s,prompt_tokens,output_tokens\n1,10,10\n0.5,10,10\n", "line 3: arrival times must not decrease");
  fails("arrival_s,prompt_tokens,output_tokens\n1,10.5,10\n", "line 2: prompt_tokens must be an integer");
  fails("arrival_s,prompt_tokens,output_tokens\n1,10,0\n", "output_tokens must be an integer in [1");
  fails("arrival_s,prompt_tokens,output_tokens\n-1,10,10\n", "line 2: the arrival time must be >= 0");
  fails("arrival_s,prompt_tokens,output_tokens\n1,10\n", "expected 3 comma-separated values");
  fails("", "empty trace");
}

TEST_CASE("the arrival processes are the loader's, each drawing what its expected load says", "[serving][arrivals]") {
  REQUIRE(ess::arrival_processes().size() == std::size(ess::kArrivalProcesses));
  for (std::size_t i = 0; i < std::size(ess::kArrivalProcesses); ++i) {
    CHECK(ess::arrival_processes()[i].name == ess::kArrivalProcesses[i].name);
  }
  CHECK_THROWS_AS(ess::arrival_process("poison"), ess::InternalError);
  // A closed loop draws exactly its count; Poisson about its expectation (rate x period).
  ess::ServingConfig closed;
  closed.arrivals.process = "concurrency";
  closed.arrivals.requests = 37;
  closed.arrivals.concurrency = 4;
  closed.arrivals.prompt_tokens = {100, 200};
  closed.arrivals.output_tokens = {10, 30};
  const auto& c = ess::arrival_process("concurrency");
  CHECK(c.expected(closed).requests == 37.0);
  CHECK(c.expected(closed).output_tokens == 20.0);
  CHECK(c.draw(closed, 7).size() == 37);
  ess::ServingConfig open = closed;
  open.arrivals.process = "poisson";
  open.arrivals.rate = 50.0;
  open.duration = ess::Seconds(100.0);
  open.arrivals.rate_changes = {{50.0, 10.0}};
  const auto& p = ess::arrival_process("poisson");
  CHECK(p.expected(open).requests == Approx(50.0 * 50.0 + 10.0 * 50.0));
  const double drawn = static_cast<double>(p.draw(open, 7).size());
  CHECK(drawn == Approx(3000.0).epsilon(0.1));  // 3,000 expected; a Poisson count's sigma is ~55
}
