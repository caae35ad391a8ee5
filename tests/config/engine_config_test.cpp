// The scenario's engine section: presets (scenarios/engines/), overrides, the default and errors.
#include "sim/config/engine_config.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/config/presets.h"
#include "tests/config/config_test_support.h"

using ess::test::config_error;
using ess::test::kOrigin;
using ess::test::load;
using ess::test::minimal_scenario;

TEST_CASE("engine: absent, the deepseek preset, recorded as the default", "[config][engine]") {
  const ess::Scenario s = load(minimal_scenario());
  CHECK(s.engine.name == "deepseek");
  REQUIRE(s.engine.mla_kernel != nullptr);
  CHECK(s.engine.mla_kernel->name == "flashmla");
  // The registry's first kernel is the default engine's: `cost attention` prices it without --mla-kernel.
  CHECK(s.engine.mla_kernel == &ess::mla_kernels().front());
  CHECK(ess::mla_kernel_names() == std::vector<std::string>{"flashmla", "fp8-mma"});
  CHECK(s.engine.kernel_gap.value() == Approx(0.58e-6));
  // The resolved scenario names the engine, and says where each value came from.
  const auto& engine = s.resolved.at("engine");
  CHECK(engine.at("name").at("value") == "deepseek");
  CHECK_THAT(engine.at("kernel_gap").at("source").get<std::string>(), Catch::Contains("ocannl issue 488"));
}

TEST_CASE("engine: a preset by name, a preset with overrides, --set", "[config][engine]") {
  auto doc = minimal_scenario();
  doc["engine"] = "vllm";
  CHECK(load(doc).engine.name == "vllm");
  doc["engine"] = {{"preset", "sglang"}, {"kernel_gap", "2us"}, {"mla_kernel", "fp8-mma"}};
  const ess::Scenario s = load(doc);
  CHECK(s.engine.name == "sglang");
  CHECK(s.engine.kernel_gap.value() == Approx(2e-6));
  CHECK(s.engine.mla_kernel->mma == ess::DType::fp8);
  const ess::Scenario t = load(minimal_scenario(), {ess::parse_override("engine=trtllm"),
                                                    ess::parse_override("engine.kernel_gap=0s")});
  CHECK(t.engine.name == "trtllm");
  CHECK(t.engine.kernel_gap.value() == 0.0);
  // A field without a preset overrides the default engine's.
  const ess::Scenario u = load(minimal_scenario(), {ess::parse_override("engine.kernel_gap=3us")});
  CHECK(u.engine.name == "deepseek");
  CHECK(u.engine.kernel_gap.value() == Approx(3e-6));
}

TEST_CASE("engine: every preset loads and names a registered MLA kernel", "[config][engine]") {
  const auto names = ess::preset_names(ess::PresetKind::engine);
  CHECK(names == std::vector<std::string>{"deepseek", "sglang", "sglang-0.4", "trtllm", "trtllm-0.17", "vllm", "vllm-0.7"});
  for (const auto& name : names) {
    auto doc = minimal_scenario();
    doc["engine"] = name;
    const ess::Scenario s = load(doc);
    CHECK(s.engine.name == name);
    CHECK(ess::find_mla_kernel(s.engine.mla_kernel->name) == s.engine.mla_kernel);
    CHECK_FALSE(s.engine.version.empty());
  }
}

TEST_CASE("engine: bad input names the path and what was expected", "[config][engine][errors]") {
  auto doc = minimal_scenario();
  doc["engine"] = "sglan";
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine", {"unknown engine preset", "sglang"}));
  doc["engine"] = {{"preset", "vllm"}, {"mla_kernel", "flashml"}};
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine/mla_kernel", {"flashmla"}));
  doc["engine"] = {{"preset", "vllm"}, {"kernel_gaps", "1us"}};
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine/kernel_gaps", {"kernel_gap"}));
  doc["engine"] = {{"preset", "vllm"}, {"kernel_gap", "5ms"}};
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine/kernel_gap", {}));
  // Values near 0 are refused too: 1e-9 once gave a 1.26e9 s prefill step and 1e-12 a step faster than at 1.
  for (const double bad : {0.0, -0.5, 1.2, 1e-9, 1e-12, 0.099}) {
    doc["engine"] = {{"preset", "sglang"}, {"prefill_alltoall_overlap_efficiency", bad}};
    CHECK_THROWS_MATCHES(load(doc), ess::ConfigError,
                         config_error(kOrigin, "/engine/prefill_alltoall_overlap_efficiency", {"in [0.1, 1]"}));
  }
  doc["engine"] = {{"preset", "sglang"}, {"prefill_alltoall_overlap_efficiency", 0.1}};
  CHECK_NOTHROW(load(doc));
}

TEST_CASE("engine: the prefill all-to-all's rate beside compute, read from the preset or set", "[config][engine]") {
  auto doc = minimal_scenario();
  doc["engine"] = "sglang";
  const ess::Scenario s = load(doc);
  CHECK(s.engine.prefill_alltoall_overlap_efficiency > 0.0);
  CHECK(s.engine.prefill_alltoall_overlap_efficiency < 1.0);  // the presets carry a fit below alone's rate
  CHECK_THAT(s.resolved.at("engine").at("prefill_alltoall_overlap_efficiency").at("source").get<std::string>(),
             Catch::Contains("fit-prefill-overlap.sh"));
  const ess::Scenario t = load(doc, {ess::parse_override("engine.prefill_alltoall_overlap_efficiency=1")});
  CHECK(t.engine.prefill_alltoall_overlap_efficiency == 1.0);
}

TEST_CASE("engine: EPLB per engine, and redundant experts only with it", "[config][engine][eplb]") {
  auto doc = minimal_scenario();
  CHECK(load(doc).engine.eplb);  // deepseek
  doc["engine"] = "vllm";
  CHECK_FALSE(load(doc).engine.eplb);
  doc["engine"] = {{"preset", "sglang"}, {"eplb", "on"}};
  CHECK(load(doc).engine.eplb);
  doc["engine"] = {{"preset", "sglang"}, {"eplb", "yes"}};
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine/eplb", {"on", "off"}));
}

TEST_CASE("engine: redundant experts without EPLB are refused with the way out", "[config][engine][eplb]") {
  auto doc = minimal_scenario();
  doc["parallelism"] = {{"attention_dp", 8}, {"expert_parallel", 8}, {"redundant_experts", 8}};
  CHECK(load(doc).parallelism.redundant_experts == 8);  // deepseek runs EPLB
  doc["engine"] = "vllm";
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError,
                       config_error(kOrigin, "/parallelism/redundant_experts", {"eplb", "\"on\"", "redundant_experts to 0"}));
}

TEST_CASE("workload: expert skew and drift default to the fitted values and are range-checked", "[config][workload]") {
  auto doc = minimal_scenario();
  const ess::Scenario s = load(doc);
  CHECK(s.workload.expert_skew == ess::kDefaultExpertSkew);
  CHECK(s.workload.expert_drift == ess::kDefaultExpertDrift);
  doc["workload"]["expert_skew"] = 0;
  CHECK(load(doc).workload.expert_skew == 0.0);
  doc["workload"]["expert_skew"] = -0.5;
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/workload/expert_skew", {}));
  doc["workload"]["expert_skew"] = 0.5;
  doc["workload"]["expert_drfit"] = 0.1;
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/workload/expert_drfit", {"expert_drift"}));
}

TEST_CASE("engine: CUDA-graph padding to the engine's captured batch sizes", "[config][engine][cuda_graph]") {
  auto doc = minimal_scenario();
  doc["engine"] = "vllm";
  const auto v = load(doc).engine;
  CHECK(v.graph_batch(1) == 1);
  CHECK(v.graph_batch(3) == 4);
  CHECK(v.graph_batch(9) == 16);
  CHECK(v.graph_batch(249) == 256);
  CHECK(v.graph_batch(257) == 272);
  CHECK(v.graph_batch(512) == 512);
  CHECK(v.graph_batch(513) == 513);  // above the largest captured size: eager, unpadded
  doc["engine"] = "sglang";
  const auto s = load(doc).engine;
  CHECK(s.graph_batch(9) == 12);
  CHECK(s.graph_batch(14) == 16);
  CHECK(s.graph_batch(20) == 24);
  CHECK(s.graph_batch(256) == 256);
  CHECK(s.graph_batch(300) == 300);  // max 256 in the preset
  doc["engine"] = {{"preset", "sglang"}, {"cuda_graph_max_batch", 1024}};
  CHECK(load(doc).engine.graph_batch(300) == 304);
  CHECK(load(doc).engine.graph_batch(600) == 608);
  doc["engine"] = "deepseek";
  CHECK(load(doc).engine.graph_batch(13) == 13);
  doc["engine"] = {{"preset", "vllm"}, {"cuda_graph_sizes", "vllm2"}};
  CHECK_THROWS_MATCHES(load(doc), ess::ConfigError, config_error(kOrigin, "/engine/cuda_graph_sizes", {"vllm"}));
}
