// Regressions: inputs that once misbehaved in sim/config (found by review and fuzzing), now precise errors.
#include <catch2/catch.hpp>
#include "sim/config/quantity.h"
#include "sim/config/reader.h"
#include "tests/config/config_test_support.h"
using ess::ConfigError; using ess::Dimension; using ess::test::config_error; using ess::test::kOrigin;
using ess::test::load; using ess::test::minimal_scenario; using ess::test::sets; using nlohmann::json;

TEST_CASE("regression: decimal quantities are the correctly rounded value of the decimal", "[regression]") {
  CHECK(*ess::parse_quantity("4.1GB", Dimension::bytes).value == 4.1e9);        // 4100000000 B, an integer
  CHECK(*ess::parse_quantity("8.2GB/s", Dimension::bytes_per_second).value == 8.2e9);
  CHECK(*ess::parse_quantity("1.1PB", Dimension::bytes).value == 1.1e15);
  CHECK(*ess::parse_quantity("1.6us", Dimension::seconds).value == 1.6e-6);
  CHECK(ess::format_quantity(4.1e9, Dimension::bytes) == "4.1GB");
  CHECK(ess::format_quantity(1.6e-6, Dimension::seconds) == "1.6us");
}
TEST_CASE("regression: a plus followed by a minus is not a number", "[regression]") {
  CHECK_FALSE(ess::parse_quantity("+-5GB/s", Dimension::bytes_per_second).value.has_value());
}
TEST_CASE("regression: a percentage takes no unit prefix", "[regression]") {
  const json v = json::parse(R"({"a": "90k%", "b": "0.5Ki%"})");
  const ess::Origins o("doc.json");
  for (const char* k : {"a", "b"}) {
    ess::ObjectReader r(v, "", o);
    CHECK_THROWS_AS(r.number(k, ess::Range::any()), ConfigError);
  }
}
TEST_CASE("regression: huge integers for int fields are ConfigErrors, not wrapped ints", "[regression]") {
  for (const char* s : {"hardware.pcie.gpus_per_switch=9223372036854775807", "hardware.pcie.gpus_per_switch=2147483649",
                        "hardware.cpu.gpus_per_socket=4294967296"}) {
    INFO(s);
    CHECK_THROWS_WITH(load(minimal_scenario(), sets({s})), !Catch::Contains("(-") && !Catch::Contains("x 0)"));
    CHECK_THROWS_AS(load(minimal_scenario(), sets({s})), ConfigError);
  }
}
TEST_CASE("regression: gpus_per_switch of 2^32 is a ConfigError, not SIGFPE", "[regression]") {
  CHECK_THROWS_AS(load(minimal_scenario(), sets({"hardware.pcie.gpus_per_switch=4294967296"})), ConfigError);
}
TEST_CASE("regression: gpus_per_socket of 2^30 is a ConfigError without signed overflow", "[regression]") {
  CHECK_THROWS_AS(load(minimal_scenario(), sets({"hardware.cpu.gpus_per_socket=1073741824"})), ConfigError);
}
TEST_CASE("regression: mtp_layers of INT64_MAX is a ConfigError without signed overflow", "[regression]") {
  CHECK_THROWS_AS(load(minimal_scenario(), sets({"model.mtp_layers=9223372036854775807"})), ConfigError);
}
TEST_CASE("regression: a GQA head_dim whose cache size overflows is a ConfigError", "[regression]") {
  auto doc = minimal_scenario(); doc["model"] = "llama-2-7b";
  CHECK_THROWS_AS(load(doc, sets({"model.attention.head_dim=288230376151711744"})), ConfigError);
}
TEST_CASE("regression: a --set number beyond double range is a ConfigError naming the --set", "[regression]") {
  CHECK_THROWS_AS(load(minimal_scenario(), sets({"seed=1e400"})), ConfigError);
}
TEST_CASE("regression: an error at a section added by an override names the scenario, not the preset", "[regression]") {
  CHECK_THROWS_MATCHES(
      load(json::parse(R"({"model": {"preset": "llama-2-7b", "indexer": {"heads": 64, "head_dim": 128, "top_k": 2048,
           "cache_bytes_per_token": "132B"}}, "hardware": "h200-sxm", "workload": {"batch_per_gpu": 1, "context_length": 8}})")),
      ConfigError, config_error(kOrigin, "/model/indexer", {"needs MLA attention"}));
}
TEST_CASE("regression: a --set of a wrapped value names the --set as source", "[regression]") {
  const auto s = load(minimal_scenario(), sets({"hardware.gpu.count.value=4"}));
  CHECK(s.resolved["hardware"]["gpu"]["count"]["source"] == "--set hardware.gpu.count.value=4");
}
TEST_CASE("regression: a stated GQA cache_bytes_per_token is not silently ignored", "[regression]") {
  CHECK_THROWS_AS(load(json::parse(R"({"model": {"preset": "llama-2-7b", "attention": {"cache_bytes_per_token": "999B"}},
      "hardware": "h200-sxm", "workload": {"batch_per_gpu": 1, "context_length": 8}})")), ConfigError);
}
