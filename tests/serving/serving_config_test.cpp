#include "sim/config/serving_config.h"

#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

std::string error_of(const std::vector<std::string>& sets, std::string* pointer = nullptr) {
  try {
    (void)test::serving_scenario(test::kServingBaseline, sets);
  } catch (const ConfigError& e) {
    if (pointer != nullptr) *pointer = e.pointer();
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("the bundled serving scenarios read with their defaults recorded", "[serving][config]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {});
  REQUIRE(s.serving);
  CHECK(s.serving->duration.value() == 600.0);
  CHECK(s.serving->arrivals.rate == 8.0);
  CHECK(s.serving->arrivals.prompt_tokens.min == 28672);
  CHECK(s.serving->controller.p99_target.value() == 0.5);
  CHECK(s.serving->controller.enabled);
  CHECK(s.serving->slo.tpot->value() == Approx(0.05));
  CHECK_FALSE(s.serving->slo.e2el);
  CHECK(s.resolved.at("serving").at("drain_limit").at("source") == "default: requests in flight get 600 s after the arrivals end");
  CHECK(s.resolved.at("serving").at("arrivals").at("rate").at("value") == "8/s");
  const Scenario ess = test::serving_scenario(test::kServingEss, {});
  CHECK(ess.cache.mode == CacheMode::offload);
  // A scenario without the section has none, and nothing about it in its resolved form.
  const Scenario plain = test::serving_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-baseline-32k.json", {});
  CHECK_FALSE(plain.serving);
  CHECK_FALSE(plain.resolved.contains("serving"));
}

TEST_CASE("rates and powers are quantities with units", "[serving][config][quantity]") {
  CHECK(*parse_quantity("2/s", Dimension::per_second).value == 2.0);
  CHECK(*parse_quantity("120/min", Dimension::per_second).value == Approx(2.0));
  CHECK(*parse_quantity("7200/h", Dimension::per_second).value == Approx(2.0));
  CHECK(*parse_quantity("700W", Dimension::watts).value == 700.0);
  CHECK(*parse_quantity("1.2kW", Dimension::watts).value == 1200.0);
  CHECK(format_quantity(8.0, Dimension::per_second) == "8/s");
  CHECK(format_quantity(700.0, Dimension::watts) == "700W");
  CHECK_THAT(parse_quantity("2", Dimension::per_second).error, Catch::Contains("the unit is missing"));
  CHECK_THAT(parse_quantity("2/sec", Dimension::per_second).error, Catch::Contains("unknown unit"));
  CHECK_THAT(parse_quantity("700", Dimension::watts).error, Catch::Contains("the unit is missing"));
  CHECK_THAT(parse_quantity("2s", Dimension::per_second).error, Catch::Contains("which is a duration"));
}

TEST_CASE("bad serving values are ConfigErrors naming the field and what was expected", "[serving][config]") {
  std::string pointer;
  CHECK_THAT(error_of({"serving.duration=10min"}, &pointer), Catch::Contains("write seconds"));
  CHECK(pointer == "/serving/duration");
  CHECK_THAT(error_of({"serving.arrivals.rate=8"}, &pointer), Catch::Contains("a rate such as \"2/s\""));
  CHECK(pointer == "/serving/arrivals/rate");
  CHECK_THAT(error_of({"serving.arrivals.process=poison"}), Catch::Contains("did you mean \"poisson\""));
  CHECK_THAT(error_of({R"(serving.arrivals={"process": "trace", "file": "t.jsonl", "format": "mooncake"})"}, &pointer),
             Catch::Contains("did you mean \"mooncake-jsonl\""));
  CHECK(pointer == "/serving/arrivals/format");
  CHECK_THAT(error_of({"serving.controler.enabled=false"}, &pointer), Catch::Contains("did you mean \"controller\""));
  CHECK(pointer == "/serving/controler");
  CHECK_THAT(error_of({"serving.controller.enabled=1"}), Catch::Contains("expected true or false"));
  CHECK_THAT(error_of({"serving.arrivals.output_tokens={\"min\": 10, \"max\": 5}"}), Catch::Contains("must be at least min"));
  CHECK_THAT(error_of({R"(serving.arrivals.rate_changes=[{"at": "700s", "rate": "1/s"}])"}), Catch::Contains("inside the serving period"));
  CHECK_THAT(error_of({R"(serving.arrivals.rate_changes=[{"at": "10s", "rat": "1/s"}])"}), Catch::Contains("unknown key \"rat\""));
  CHECK_THAT(error_of({"serving.table.batches=[4, 2]"}), Catch::Contains("does not increase"));
  CHECK_THAT(error_of({"serving.max_batch_per_gpu=0"}), Catch::Contains("\"max\""));
  CHECK_THAT(error_of({"serving.slo.ttft=-1s"}), Catch::Contains("must be in (0s"));
  CHECK_THAT(error_of({"serving.controller.decrease=1"}), Catch::Contains("must be in (0, 1)"));
}

TEST_CASE("a GPU power with busy below idle is an error, and a hardware without power has none", "[serving][config]") {
  std::string pointer;
  CHECK_THAT(error_of({"hardware.gpu.power.idle=800W"}, &pointer), Catch::Contains("at least the idle power"));
  CHECK(pointer == "/hardware/gpu/power/busy");
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"hardware.gpu.power=null"});
  CHECK_FALSE(s.hardware.gpu.power);
  const Scenario p = test::serving_scenario(test::kServingBaseline, {});
  REQUIRE(p.hardware.gpu.power);
  CHECK(p.hardware.gpu.power->busy.value() == 700.0);
}
