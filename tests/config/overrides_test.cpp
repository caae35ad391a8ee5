// Command-line overrides: --set dotted.path=value (parse_override and how load_scenario applies them).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/scenario.h"
#include "tests/config/config_test_support.h"

using ess::ConfigError;
using ess::Override;
using ess::parse_override;
using ess::Scenario;
using ess::test::config_error;
using ess::test::kOrigin;
using ess::test::load;
using ess::test::minimal_scenario;
using ess::test::sets;
using nlohmann::json;

TEST_CASE("parse_override splits the dotted path and reads the value as JSON when it is JSON", "[overrides]") {
  {
    const Override o = parse_override("workload.context_length=65536");
    CHECK(o.argument == "workload.context_length=65536");
    CHECK(o.path == std::vector<std::string>{"workload", "context_length"});
    CHECK(o.value == json(65536));
    CHECK(o.value.is_number_integer());
  }
  CHECK(parse_override("workload.mtp.acceptance=1.7").value == json(1.7));
  CHECK(parse_override("seed=-3").value == json(-3));
  CHECK(parse_override("x=1e3").value == json(1000.0));
  CHECK(parse_override("x=true").value == json(true));
  CHECK(parse_override("x=null").value.is_null());
  CHECK(parse_override("name=\"quoted\"").value == json("quoted"));
  CHECK(parse_override("name=\"55\"").value == json("55"));  // a quoted number stays a string
  {
    const Override o = parse_override(R"(model={"preset": "llama-2-7b", "layers": 16})");
    CHECK(o.path == std::vector<std::string>{"model"});
    CHECK(o.value == json({{"preset", "llama-2-7b"}, {"layers", 16}}));
  }
  CHECK(parse_override("x=[1,2]").value == json({1, 2}));
}

TEST_CASE("parse_override takes a value that is not JSON as a plain string", "[overrides]") {
  {
    const Override o = parse_override("hardware.pcie.h2d_bandwidth=50GB/s");
    CHECK(o.path == std::vector<std::string>{"hardware", "pcie", "h2d_bandwidth"});
    CHECK(o.value == json("50GB/s"));
  }
  CHECK(parse_override("hardware.pcie.latency=1.5 us").value == json("1.5 us"));
  CHECK(parse_override("workload.batch_per_gpu=max").value == json("max"));
  CHECK(parse_override("model=llama-2-7b").value == json("llama-2-7b"));
  CHECK(parse_override("x={broken").value == json("{broken"));
  // Only the first '=' separates path and value.
  {
    const Override o = parse_override("description=a=b");
    CHECK(o.path == std::vector<std::string>{"description"});
    CHECK(o.value == json("a=b"));
  }
}

TEST_CASE("parse_override rejects a malformed argument and names it", "[overrides]") {
  CHECK_THROWS_MATCHES(parse_override("workload.context_length"), ConfigError,
                       config_error("--set workload.context_length", "", {"expected dotted.path=value"}));
  CHECK_THROWS_MATCHES(parse_override("workload..context_length=1"), ConfigError,
                       config_error("--set workload..context_length=1", "", {"empty field name"}));
  CHECK_THROWS_MATCHES(parse_override(".seed=1"), ConfigError, config_error("--set .seed=1", "", {"empty field name"}));
  CHECK_THROWS_MATCHES(parse_override("seed.=1"), ConfigError, config_error("--set seed.=1", "", {"empty field name"}));
  CHECK_THROWS_MATCHES(parse_override("=1"), ConfigError, config_error("--set =1", "", {"empty field name"}));
  CHECK_THROWS_MATCHES(parse_override("seed="), ConfigError,
                       config_error("--set seed=", "", {"missing value after '='"}));
  CHECK_THROWS_MATCHES(parse_override(""), ConfigError, config_error("--set ", "", {"expected dotted.path=value"}));
}

TEST_CASE("an override changes a scenario value and names its --set as the source", "[overrides]") {
  const Scenario s = load(minimal_scenario(), sets({"workload.context_length=65536", "seed=7"}));
  CHECK(s.workload.context_length == 65536);
  CHECK(s.seed == 7);
  CHECK(s.resolved["workload"]["context_length"] ==
        nlohmann::ordered_json({{"value", 65536}, {"source", "--set workload.context_length=65536"}}));
  CHECK(s.resolved["seed"]["source"] == "--set seed=7");
  // Untouched values keep the file as their source.
  CHECK(s.resolved["workload"]["batch_per_gpu"]["source"] == kOrigin);
}

TEST_CASE("an override reaches into a preset given by name", "[overrides]") {
  const Scenario s = load(minimal_scenario(), sets({"hardware.pcie.h2d_bandwidth=50GB/s"}));
  CHECK(s.hardware.name == "h200-sxm");
  CHECK(s.hardware.pcie.h2d_bandwidth.value() == 50e9);
  CHECK(s.hardware.pcie.d2h_bandwidth.value() == 55.06e9);  // the rest of the preset is kept
  CHECK(s.hardware.gpu.hbm_bandwidth.value() == 4.8e12);
  CHECK(s.resolved["hardware"]["pcie"]["h2d_bandwidth"] ==
        nlohmann::ordered_json({{"value", "50GB/s"}, {"source", "--set hardware.pcie.h2d_bandwidth=50GB/s"}}));
  CHECK(s.resolved["hardware"]["pcie"]["d2h_bandwidth"]["source"] != "--set hardware.pcie.h2d_bandwidth=50GB/s");
  // The same on the bundled scenario file.
  const Scenario b = ess::load_scenario(ess::test::bundled_scenario_path(), sets({"hardware.pcie.h2d_bandwidth=50GB/s"}));
  CHECK(b.hardware.pcie.h2d_bandwidth.value() == 50e9);
  CHECK(b.resolved["hardware"]["pcie"]["h2d_bandwidth"]["source"] == "--set hardware.pcie.h2d_bandwidth=50GB/s");
}

TEST_CASE("an override reaches into a preset with overrides and into the model", "[overrides]") {
  json doc = minimal_scenario();
  doc["hardware"] = json::parse(R"({"preset": "h200-sxm", "nodes": 2})");
  const Scenario s = load(doc, sets({"hardware.gpu.count=4", "model.indexer.top_k=1024", "model.mtp_layers=3"}));
  CHECK(s.hardware.nodes == 2);
  CHECK(s.hardware.gpu.count == 4);
  CHECK(s.hardware.total_gpus() == 8);
  CHECK(s.model.indexer->top_k == 1024);
  CHECK(s.model.mtp_layers == 3);
  CHECK(s.resolved["hardware"]["nodes"]["source"] == kOrigin);
  CHECK(s.resolved["hardware"]["gpu"]["count"]["source"] == "--set hardware.gpu.count=4");
  CHECK(s.resolved["model"]["indexer"]["top_k"]["source"] == "--set model.indexer.top_k=1024");
}

TEST_CASE("an override can replace a whole preset or section", "[overrides]") {
  const Scenario s = load(minimal_scenario(), sets({"model=llama-2-7b", "hardware=a100-80gb-sxm"}));
  CHECK(s.model.name == "llama-2-7b");
  CHECK(s.hardware.name == "a100-80gb-sxm");
  const Scenario t = load(minimal_scenario(), sets({R"(model={"preset": "llama-3.1-70b", "layers": 40})"}));
  CHECK(t.model.name == "llama-3.1-70b");
  CHECK(t.model.layers == 40);
  const Scenario u = load(minimal_scenario(), sets({"workload.mtp={\"depth\": 2, \"acceptance\": 1.5}"}));
  CHECK(u.workload.mtp.depth == 2);
  CHECK(u.workload.mtp.acceptance == 1.5);
}

TEST_CASE("a later --set of the same key wins", "[overrides]") {
  const Scenario s = load(minimal_scenario(), sets({"seed=2", "seed=3"}));
  CHECK(s.seed == 3);
  CHECK(s.resolved["seed"]["source"] == "--set seed=3");
}

TEST_CASE("an override creates sections the scenario leaves out", "[overrides]") {
  const Scenario s = load(minimal_scenario(), sets({"parallelism.expert_parallel=4", "workload.mtp.depth=2",
                                                    "workload.mtp.acceptance=1.5", "cache.mode=gpu"}));
  CHECK(s.parallelism.expert_parallel == 4);
  CHECK(s.parallelism.attention_dp == 8);
  CHECK(s.workload.mtp.depth == 2);
  CHECK(s.resolved["cache"]["mode"]["source"] == "--set cache.mode=gpu");
}

TEST_CASE("a --set value that fails validation is reported with the --set argument as origin", "[overrides]") {
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"hardware.pcie.h2d_bandwidth=50GB"})), ConfigError,
                       config_error("--set hardware.pcie.h2d_bandwidth=50GB", "/hardware/pcie/h2d_bandwidth",
                                    {"expected a bandwidth", "a size"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"workload.context_length=abc"})), ConfigError,
                       config_error("--set workload.context_length=abc", "/workload/context_length",
                                    {"expected an integer", "the string \"abc\""}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"workload.batch_per_gpu=maximum"})), ConfigError,
                       config_error("--set workload.batch_per_gpu=maximum", "/workload/batch_per_gpu",
                                    {"\"max\"", "\"maximum\""}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"hardware.nvlink.bandwidth=-1GB/s"})), ConfigError,
                       config_error("--set hardware.nvlink.bandwidth=-1GB/s", "/hardware/nvlink/bandwidth",
                                    {"must be in [1MB/s, 1000000TB/s]"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"cache.mode=offlaod"})), ConfigError,
                       config_error("--set cache.mode=offlaod", "/cache/mode", {"did you mean \"offload\""}));
}

TEST_CASE("a --set naming an unknown preset is reported with the --set argument as origin", "[overrides]") {
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"hardware=h200-sx"})), ConfigError,
                       config_error("--set hardware=h200-sx", "/hardware",
                                    {"unknown hardware preset \"h200-sx\"", "did you mean \"h200-sxm\"?"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"model=llama-2-7"})), ConfigError,
                       config_error("--set model=llama-2-7", "/model", {"did you mean \"llama-2-7b\"?"}));
}

TEST_CASE("setting a field inside a number, a string or an array fails and names the --set", "[overrides]") {
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"workload.context_length.x=1"})), ConfigError,
                       config_error("--set workload.context_length.x=1", "/workload/context_length",
                                    {"cannot set a field inside the number 4096"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"name.first=x"})), ConfigError,
                       config_error("--set name.first=x", "/name", {"cannot set a field inside the string \"minimal\""}));
  json doc = minimal_scenario();
  doc["tags"] = json::array({"a"});
  CHECK_THROWS_MATCHES(load(doc, sets({"tags.x=1"})), ConfigError,
                       config_error("--set tags.x=1", "/tags", {"cannot set a field inside an array"}));
}

TEST_CASE("a --set of an unknown key is rejected with a did-you-mean and the --set as origin", "[overrides]") {
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"workload.context_lenght=1"})), ConfigError,
                       config_error("--set workload.context_lenght=1", "/workload/context_lenght",
                                    {"unknown key \"context_lenght\"", "did you mean \"context_length\"?"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"hardware.pcie.h2d_bandwith=50GB/s"})), ConfigError,
                       config_error("--set hardware.pcie.h2d_bandwith=50GB/s", "/hardware/pcie/h2d_bandwith",
                                    {"did you mean \"h2d_bandwidth\"?"}));
  CHECK_THROWS_MATCHES(load(minimal_scenario(), sets({"sed=1"})), ConfigError,
                       config_error("--set sed=1", "/sed", {"did you mean \"seed\"?"}));
}

TEST_CASE("overrides are applied before validation, so they can repair an invalid file", "[overrides]") {
  json doc = minimal_scenario();
  doc["workload"]["context_length"] = 0;
  CHECK_THROWS_AS(load(doc), ConfigError);
  CHECK(load(doc, sets({"workload.context_length=8"})).workload.context_length == 8);
}
