#include "sim/config/scenario.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "tests/config/config_test_support.h"

using ess::ConfigError;
using ess::Scenario;
using ess::test::config_error;
using ess::test::kOrigin;
using ess::test::load;
using ess::test::minimal_scenario;
using nlohmann::json;

namespace {

const std::string kH200 = "built-in preset scenarios/hardware/h200-sxm.json";
const std::string kDsv32 = "built-in preset scenarios/models/deepseek-v3.2-exp.json";

// Every typed value two scenarios must share to be "the same scenario".
void check_same(const Scenario& a, const Scenario& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.seed == b.seed);
  const auto& ma = a.model;
  const auto& mb = b.model;
  CHECK(ma.name == mb.name);
  CHECK(ma.description == mb.description);
  CHECK(ma.layers == mb.layers);
  CHECK(ma.hidden == mb.hidden);
  CHECK(ma.vocab == mb.vocab);
  CHECK(ma.mtp_layers == mb.mtp_layers);
  CHECK(ma.dense_intermediate == mb.dense_intermediate);
  CHECK(ma.norm == mb.norm);
  CHECK(ma.weight_dtype == mb.weight_dtype);
  CHECK(ma.activation_dtype == mb.activation_dtype);
  CHECK(ma.attention.kind == mb.attention.kind);
  CHECK(ma.attention.heads == mb.attention.heads);
  CHECK(ma.attention.mla.q_lora_rank == mb.attention.mla.q_lora_rank);
  CHECK(ma.attention.mla.kv_lora_rank == mb.attention.mla.kv_lora_rank);
  CHECK(ma.attention.mla.qk_nope_head_dim == mb.attention.mla.qk_nope_head_dim);
  CHECK(ma.attention.mla.qk_rope_head_dim == mb.attention.mla.qk_rope_head_dim);
  CHECK(ma.attention.mla.v_head_dim == mb.attention.mla.v_head_dim);
  CHECK(ma.attention.gqa.kv_heads == mb.attention.gqa.kv_heads);
  CHECK(ma.attention.gqa.head_dim == mb.attention.gqa.head_dim);
  CHECK(ma.attention.cache_dtype == mb.attention.cache_dtype);
  CHECK(ma.attention.cache_bytes_per_token == mb.attention.cache_bytes_per_token);
  REQUIRE(ma.indexer.has_value() == mb.indexer.has_value());
  if (ma.indexer) {
    CHECK(ma.indexer->heads == mb.indexer->heads);
    CHECK(ma.indexer->head_dim == mb.indexer->head_dim);
    CHECK(ma.indexer->top_k == mb.indexer->top_k);
    CHECK(ma.indexer->cache_bytes_per_token == mb.indexer->cache_bytes_per_token);
  }
  REQUIRE(ma.moe.has_value() == mb.moe.has_value());
  if (ma.moe) {
    CHECK(ma.moe->routed_experts == mb.moe->routed_experts);
    CHECK(ma.moe->shared_experts == mb.moe->shared_experts);
    CHECK(ma.moe->experts_per_token == mb.moe->experts_per_token);
    CHECK(ma.moe->expert_intermediate == mb.moe->expert_intermediate);
    CHECK(ma.moe->first_dense_layers == mb.moe->first_dense_layers);
  }
  const auto& ha = a.hardware;
  const auto& hb = b.hardware;
  CHECK(ha.name == hb.name);
  CHECK(ha.nodes == hb.nodes);
  CHECK(ha.gpu.kind == hb.gpu.kind);
  CHECK(ha.gpu.count == hb.gpu.count);
  CHECK(ha.gpu.hbm_capacity == hb.gpu.hbm_capacity);
  CHECK(ha.gpu.hbm_bandwidth == hb.gpu.hbm_bandwidth);
  CHECK(ha.gpu.peak_compute.fp32 == hb.gpu.peak_compute.fp32);
  CHECK(ha.gpu.peak_compute.bf16 == hb.gpu.peak_compute.bf16);
  CHECK(ha.gpu.peak_compute.fp16 == hb.gpu.peak_compute.fp16);
  CHECK(ha.gpu.peak_compute.fp8 == hb.gpu.peak_compute.fp8);
  CHECK(ha.pcie.generation == hb.pcie.generation);
  CHECK(ha.pcie.h2d_bandwidth == hb.pcie.h2d_bandwidth);
  CHECK(ha.pcie.d2h_bandwidth == hb.pcie.d2h_bandwidth);
  CHECK(ha.pcie.latency == hb.pcie.latency);
  CHECK(ha.pcie.h2d_call_overhead == hb.pcie.h2d_call_overhead);
  CHECK(ha.pcie.d2h_call_overhead == hb.pcie.d2h_call_overhead);
  CHECK(ha.pcie.gpus_per_switch == hb.pcie.gpus_per_switch);
  CHECK(ha.pcie.switch_uplink_bandwidth == hb.pcie.switch_uplink_bandwidth);
  CHECK(ha.nvlink.bandwidth == hb.nvlink.bandwidth);
  CHECK(ha.nvlink.latency == hb.nvlink.latency);
  CHECK(ha.network.bandwidth_per_gpu == hb.network.bandwidth_per_gpu);
  CHECK(ha.network.latency == hb.network.latency);
  CHECK(ha.cpu.sockets == hb.cpu.sockets);
  CHECK(ha.cpu.gpus_per_socket == hb.cpu.gpus_per_socket);
  CHECK(ha.cpu.dram_capacity_per_socket == hb.cpu.dram_capacity_per_socket);
  CHECK(ha.cpu.dram_bandwidth_per_socket == hb.cpu.dram_bandwidth_per_socket);
  for (auto k : {&ess::KernelParams::gemm, &ess::KernelParams::attention, &ess::KernelParams::indexer,
                        &ess::KernelParams::memory_bound}) {
    const auto& ka = ha.kernels.*k;
    const auto& kb = hb.kernels.*k;
    CHECK(ka.compute_efficiency == kb.compute_efficiency);
    CHECK(ka.compute_ramp == kb.compute_ramp);
    CHECK(ka.memory_efficiency == kb.memory_efficiency);
    CHECK(ka.memory_ramp == kb.memory_ramp);
    CHECK(ka.kernel_overhead == kb.kernel_overhead);
  }
  CHECK(ha.kernels.topk_passes == hb.kernels.topk_passes);
  CHECK(ha.collectives.allreduce_bus_bandwidth == hb.collectives.allreduce_bus_bandwidth);
  CHECK(ha.collectives.allreduce_latency == hb.collectives.allreduce_latency);
  CHECK(ha.collectives.alltoall_nvlink_efficiency == hb.collectives.alltoall_nvlink_efficiency);
  CHECK(ha.collectives.alltoall_network_efficiency == hb.collectives.alltoall_network_efficiency);
  CHECK(ha.collectives.alltoall_latency == hb.collectives.alltoall_latency);
  CHECK(a.parallelism.attention_dp == b.parallelism.attention_dp);
  CHECK(a.parallelism.tensor_parallel == b.parallelism.tensor_parallel);
  CHECK(a.parallelism.expert_parallel == b.parallelism.expert_parallel);
  CHECK(a.workload.batch_per_gpu == b.workload.batch_per_gpu);
  CHECK(a.workload.context_length == b.workload.context_length);
  CHECK(a.workload.decode_steps == b.workload.decode_steps);
  CHECK(a.workload.mtp.depth == b.workload.mtp.depth);
  CHECK(a.workload.mtp.acceptance == b.workload.mtp.acceptance);
  CHECK(a.cache.mode == b.cache.mode);
}

// The minimal scenario with `patch` merged in (RFC 7386: null deletes a key).
json patched(const json& patch) {
  json doc = minimal_scenario();
  doc.merge_patch(patch);
  return doc;
}

}  // namespace

TEST_CASE("the bundled dsv32-baseline-32k scenario loads with the values it states", "[scenario]") {
  const std::string path = ess::test::bundled_scenario_path();
  const Scenario s = ess::load_scenario(path);
  CHECK(s.origin == path);
  CHECK(s.name == "dsv32-baseline-32k");
  CHECK_FALSE(s.description.empty());
  CHECK(s.seed == 1);
  CHECK(s.model.name == "deepseek-v3.2-exp");
  CHECK(s.model.layers == 61);
  CHECK(s.model.mtp_layers == 1);
  CHECK(s.model.attention.kind == ess::AttentionKind::mla);
  CHECK(s.model.attention.cache_bytes_per_token.value() == 656.0);
  REQUIRE(s.model.indexer.has_value());
  CHECK(s.model.indexer->top_k == 2048);
  REQUIRE(s.model.moe.has_value());
  CHECK(s.model.moe->routed_experts == 256);
  CHECK(s.hardware.name == "h200-sxm-measured");  // the calibrated profile of its GPU
  CHECK_THAT(s.hardware_calibration, Catch::StartsWith("calibrated"));
  CHECK(s.hardware.total_gpus() == 8);
  CHECK(s.hardware.gpu.hbm_capacity.value() == 143771.0 * 1048576.0);
  CHECK(s.hardware.gpu.hbm_bandwidth.value() == 4.8e12);
  CHECK(s.hardware.pcie.h2d_bandwidth.value() == 55.43e9);
  CHECK(s.parallelism.attention_dp == 8);
  CHECK(s.parallelism.tensor_parallel == 1);
  CHECK(s.parallelism.expert_parallel == 8);
  CHECK_FALSE(s.workload.batch_per_gpu.has_value());  // "max"
  CHECK(s.workload.context_length == 32768);
  CHECK(s.workload.decode_steps == 16);
  CHECK(s.workload.mtp.depth == 2);
  CHECK(s.workload.mtp.acceptance == 1.7);
  CHECK(s.cache.mode == ess::CacheMode::gpu);
  // Provenance: the scenario's own values name the file, preset values their datasheet source.
  CHECK(s.resolved["workload"]["context_length"] == nlohmann::ordered_json({{"value", 32768}, {"source", path}}));
  CHECK(s.resolved["workload"]["batch_per_gpu"] == nlohmann::ordered_json({{"value", "max"}, {"source", path}}));
  CHECK(s.resolved["hardware"]["gpu"]["hbm_bandwidth"] ==
        nlohmann::ordered_json({{"value", "4.8TB/s"}, {"source", "NVIDIA H200 datasheet (SXM)"}}));
  CHECK(s.resolved["hardware"]["gpu"]["kind"]["source"] ==
        "built-in preset calibration/profiles/h200-sxm-measured.json");  // a profile value without its own source
  CHECK(s.resolved["model"]["norm"]["source"] == kDsv32);
  CHECK(s.resolved["schema"]["value"] == "ess-sim/scenario/v1");
}

TEST_CASE("load_scenario and load_scenario_text of the same text agree", "[scenario]") {
  const std::string path = ess::test::bundled_scenario_path();
  const Scenario from_file = ess::load_scenario(path);
  const Scenario from_text = ess::load_scenario_text(ess::read_json_file(path).dump(), path);
  check_same(from_file, from_text);
  CHECK(from_file.resolved == from_text.resolved);
}

TEST_CASE("file-level errors of load_scenario name the file", "[scenario]") {
  const ess::test::TempDir dir;
  const auto missing = dir.path() / "missing.json";
  CHECK_THROWS_MATCHES(ess::load_scenario(missing.string()), ConfigError,
                       config_error(missing.string(), "", {"no such file"}));
  CHECK_THROWS_MATCHES(ess::load_scenario(dir.path().string()), ConfigError,
                       config_error(dir.path().string(), "", {"is a directory"}));
  const auto broken = dir.write("broken.json", "{\n  \"model\": \"deepseek-v3.2-exp\",\n  \"hardware\" \"h200-sxm\"\n}");
  // Line 3 is `  "hardware" "h200-sxm"`: the second string token ends at its closing quote, column 25.
  CHECK_THROWS_MATCHES(ess::load_scenario(broken.string()), ConfigError,
                       config_error(broken.string(), "", {"invalid JSON at line 3"}));
  const auto unknown = dir.write("unknown.json", patched({{"sed", 3}}).dump(2));
  CHECK_THROWS_MATCHES(ess::load_scenario(unknown.string()), ConfigError,
                       config_error(unknown.string(), "/sed", {"unknown key \"sed\"", "did you mean \"seed\"?"}));
  const Scenario ok = ess::load_scenario(dir.write("ok.json", minimal_scenario().dump()).string());
  CHECK(ok.origin == (dir.path() / "ok.json").string());
}

TEST_CASE("a preset given by name is used as is", "[scenario]") {
  const Scenario s = load(minimal_scenario());
  CHECK(s.model.name == "deepseek-v3.2-exp");
  CHECK(s.hardware.name == "h200-sxm");
  CHECK(s.hardware.pcie.h2d_bandwidth.value() == 55.43e9);
  CHECK(s.workload.batch_per_gpu == 32);
  CHECK(s.workload.context_length == 4096);
}

TEST_CASE("a preset with overrides: the override wins and its source is the scenario file", "[scenario]") {
  const Scenario s = load(patched(json::parse(R"({
    "hardware": {"preset": "h200-sxm", "gpu": {"count": 4}, "pcie": {"h2d_bandwidth": "50GB/s"},
                 "nvlink": {"bandwidth": {"value": "450GB/s", "source": "datasheet, not measured"}}},
    "model": {"preset": "deepseek-v3.2-exp", "indexer": {"top_k": 1024}}
  })")));
  CHECK(s.hardware.gpu.count == 4);
  CHECK(s.hardware.pcie.h2d_bandwidth.value() == 50e9);
  CHECK(s.hardware.nvlink.bandwidth.value() == 450e9);
  CHECK(s.model.indexer->top_k == 1024);
  // Untouched values keep the preset's.
  CHECK(s.hardware.pcie.d2h_bandwidth.value() == 55.06e9);
  CHECK(s.hardware.gpu.hbm_bandwidth.value() == 4.8e12);
  CHECK(s.model.indexer->heads == 64);
  CHECK(s.parallelism.attention_dp == 4);  // defaults follow the overridden GPU count
  CHECK(s.parallelism.expert_parallel == 4);
  const auto& hw = s.resolved["hardware"];
  CHECK(hw["gpu"]["count"] == nlohmann::ordered_json({{"value", 4}, {"source", kOrigin}}));
  CHECK(hw["pcie"]["h2d_bandwidth"] == nlohmann::ordered_json({{"value", "50GB/s"}, {"source", kOrigin}}));
  CHECK(hw["nvlink"]["bandwidth"]["source"] == "datasheet, not measured");
  CHECK(hw["pcie"]["d2h_bandwidth"]["source"] != kOrigin);
  CHECK(s.resolved["model"]["indexer"]["top_k"]["source"] == kOrigin);
}

TEST_CASE("an override may remove an optional preset value with null", "[scenario]") {
  const Scenario s = load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm"}})")));
  REQUIRE(s.hardware.gpu.peak_compute.fp8.has_value());
  json doc = minimal_scenario();
  doc["hardware"] = json::parse(R"({"preset": "h200-sxm", "gpu": {"peak_compute": {"fp8": null}}})");
  const Scenario without = load(doc);
  CHECK_FALSE(without.hardware.gpu.peak_compute.fp8.has_value());
  CHECK(without.hardware.gpu.peak_compute.bf16.has_value());
}

TEST_CASE("check's resolved output is itself a scenario that loads to the same values", "[scenario]") {
  const std::vector<json> sources = {
      ess::read_json_file(ess::test::bundled_scenario_path()),
      patched({{"model", "llama-3.1-70b"}, {"hardware", "a100-80gb-sxm"}}),  // GQA (derived cache), no fp8
      patched({{"model", "deepseek-v3"}, {"hardware", "h20"}, {"parallelism", nullptr}}),
      patched({{"model", "llama-2-7b"}, {"hardware", "h800-sxm"}}),
  };
  for (const auto& source : sources) {
    const Scenario first = load(source);
    INFO(first.model.name << " on " << first.hardware.name);
    // Both the compact dump and the one-pair-per-line text `check` prints.
    for (const std::string& text : {first.resolved.dump(), ess::format_resolved(first.resolved)}) {
      const Scenario again = ess::load_scenario_text(text, "resolved.json");
      check_same(first, again);
      CHECK(again.resolved == first.resolved);  // values and sources
    }
  }
}

TEST_CASE("a fully inline model and hardware are read as written", "[scenario]") {
  const Scenario base = load(patched({{"model", "llama-2-7b"}}));
  json doc = json::parse(base.resolved.dump());
  // Inline means no preset: the value written here is the value used.
  doc["model"]["layers"] = 40;
  doc["hardware"]["gpu"]["hbm_bandwidth"] = "5TB/s";
  const Scenario s = ess::load_scenario_text(doc.dump(), kOrigin);
  CHECK(s.model.layers == 40);
  CHECK(s.hardware.gpu.hbm_bandwidth.value() == 5e12);
  CHECK(s.resolved["model"]["layers"]["source"] == kOrigin);
  // And an inline section with a missing field is an error, with no preset to fill it.
  doc["hardware"]["gpu"].erase("hbm_bandwidth");
  CHECK_THROWS_MATCHES(ess::load_scenario_text(doc.dump(), kOrigin), ConfigError,
                       config_error(kOrigin, "/hardware/gpu/hbm_bandwidth", {"missing required key \"hbm_bandwidth\""}));
}

TEST_CASE("format_resolved prints one value-source pair per line and valid JSON", "[scenario]") {
  const Scenario s = load(minimal_scenario());
  const std::string text = ess::format_resolved(s.resolved);
  CHECK(json::parse(text) == json::parse(s.resolved.dump()));
  CHECK(text.back() == '\n');
  CHECK_THAT(text, Catch::Contains("\"context_length\": {\"value\": 4096, \"source\": \"" + kOrigin + "\"}"));
}

TEST_CASE("an unknown preset is rejected with a did-you-mean and the list of presets", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"hardware", "h200-sx"}})), ConfigError,
                       config_error(kOrigin, "/hardware",
                                    {"unknown hardware preset \"h200-sx\"", "did you mean \"h200-sxm\"?",
                                     "\"a100-80gb-sxm\", \"a100-80gb-sxm-measured\", \"h100-sxm\", \"h100-sxm-measured\", \"h20\", "
                                     "\"h20-measured\", \"h200-sxm\", \"h200-sxm-measured\", \"h800-sxm\" or \"h800-sxm-measured\""}));
  CHECK_THROWS_MATCHES(load(patched({{"model", "llama-3.1-70"}})), ConfigError,
                       config_error(kOrigin, "/model",
                                    {"unknown model preset \"llama-3.1-70\"", "did you mean \"llama-3.1-70b\"?"}));
  CHECK_THROWS_MATCHES(load(patched({{"model", {{"preset", "Llama-2-7B"}}}})), ConfigError,
                       config_error(kOrigin, "/model/preset", {"did you mean \"llama-2-7b\"?"}));
  CHECK_THROWS_MATCHES(load(patched({{"model", "gpt-4"}})), ConfigError,
                       config_error(kOrigin, "/model", {"unknown model preset \"gpt-4\"", "presets:"}));
}

TEST_CASE("a model or hardware section that is neither a name nor an object is rejected", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"model", 5}})), ConfigError,
                       config_error(kOrigin, "/model", {"preset name or an object", "the number 5"}));
  CHECK_THROWS_MATCHES(load(patched({{"hardware", json::array()}})), ConfigError,
                       config_error(kOrigin, "/hardware", {"an array"}));
  CHECK_THROWS_MATCHES(load(patched({{"hardware", {{"preset", 200}}}})), ConfigError,
                       config_error(kOrigin, "/hardware/preset", {"preset name (a string)", "the number 200"}));
  json doc = minimal_scenario();
  doc.erase("hardware");
  CHECK_THROWS_MATCHES(load(doc), ConfigError, config_error(kOrigin, "/hardware", {"missing", "\"hardware\""}));
  doc = minimal_scenario();
  doc.erase("workload");
  CHECK_THROWS_MATCHES(load(doc), ConfigError, config_error(kOrigin, "/workload", {"missing", "\"workload\""}));
}

TEST_CASE("unknown keys are rejected at every depth with the right pointer and a did-you-mean", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"seeed", 2}})), ConfigError,
                       config_error(kOrigin, "/seeed", {"unknown key \"seeed\"", "did you mean \"seed\"?"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 1.5, "acceptence": 1.5}}})"))),
      ConfigError,
      config_error(kOrigin, "/workload/mtp/acceptence", {"unknown key \"acceptence\"", "did you mean \"acceptance\"?"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "pcie": {"h2d_bandwith": "50GB/s"}}})"))),
      ConfigError,
      config_error(kOrigin, "/hardware/pcie/h2d_bandwith",
                   {"unknown key \"h2d_bandwith\"", "did you mean \"h2d_bandwidth\"?", "\"d2h_bandwidth\""}));
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"parallelism": {"tensor_paralel": 1}})"))), ConfigError,
                       config_error(kOrigin, "/parallelism/tensor_paralel", {"did you mean \"tensor_parallel\"?"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "deepseek-v3.2-exp", "moe": {"routed_expert": 128}}})"))),
      ConfigError, config_error(kOrigin, "/model/moe/routed_expert", {"did you mean \"routed_experts\"?"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "kernels": {"gemm": {"overhead": "1us"}}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/kernels/gemm/overhead", {"unknown key \"overhead\""}));
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"cache": {"mode": "gpu", "policy": "lru"}})"))), ConfigError,
                       config_error(kOrigin, "/cache/policy", {"unknown key \"policy\""}));
  // A key with '/' in it is escaped in the pointer.
  CHECK_THROWS_MATCHES(load(patched({{"a/b", 1}})), ConfigError, config_error(kOrigin, "/a~1b", {"unknown key"}));
}

TEST_CASE("a negative or zero bandwidth is rejected at its pointer", "[scenario]") {
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "pcie": {"h2d_bandwidth": "-5GB/s"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/pcie/h2d_bandwidth", {"must be in [1MB/s, 1000000TB/s]", "\"-5GB/s\""}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nvlink": {"bandwidth": "0GB/s"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/nvlink/bandwidth", {"must be in [1MB/s, 1000000TB/s]"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nvlink": {"latency": "-1us"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/nvlink/latency", {"must be in [0s, 10ms]"}));
}

TEST_CASE("a value with the wrong unit is rejected naming its dimension", "[scenario]") {
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "pcie": {"h2d_bandwidth": "55GB"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/pcie/h2d_bandwidth", {"expected a bandwidth", "a size"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "pcie": {"latency": "1.5"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/pcie/latency", {"unit is missing"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "gpu": {"hbm_capacity": 141}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/gpu/hbm_capacity", {"a string with a unit", "the number 141"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "network": {"bandwidth_per_gpu": "400Gb/s"}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/network/bandwidth_per_gpu", {"ambiguous"}));
}

TEST_CASE("batch_per_gpu takes an integer >= 1 or \"max\" and nothing else", "[scenario]") {
  CHECK_FALSE(load(patched({{"workload", {{"batch_per_gpu", "max"}}}})).workload.batch_per_gpu.has_value());
  CHECK(load(patched({{"workload", {{"batch_per_gpu", 1}}}})).workload.batch_per_gpu == 1);
  CHECK(load(patched({{"workload", {{"batch_per_gpu", {{"value", 64}, {"source", "sweep"}}}}}}))
            .workload.batch_per_gpu == 64);
  for (const json& bad : {json(0), json(-1), json("maximum"), json(1.5), json("32"), json(true)}) {
    INFO(bad.dump());
    CHECK_THROWS_MATCHES(load(patched({{"workload", {{"batch_per_gpu", bad}}}})), ConfigError,
                         config_error(kOrigin, "/workload/batch_per_gpu",
                                      {"expected an integer >= 1 or \"max\"", ess::describe_json(bad)}));
  }
  json doc = minimal_scenario();
  doc["workload"].erase("batch_per_gpu");
  CHECK_THROWS_MATCHES(load(doc), ConfigError,
                       config_error(kOrigin, "/workload/batch_per_gpu", {"missing required key \"batch_per_gpu\""}));
}

TEST_CASE("mtp.depth cannot exceed the model's MTP layers plus one", "[scenario]") {
  // DeepSeek-V3.2-Exp has one MTP module: depth 2 is fine, 3 is not.
  CHECK(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 1.8}}})"))).workload.mtp.depth == 2);
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 3, "acceptance": 2}}})"))),
                       ConfigError,
                       config_error(kOrigin, "/workload/mtp/depth",
                                    {"mtp.depth 3", "deepseek-v3.2-exp has 1", "at most 2"}));
  // Llama has none.
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": "llama-2-7b", "workload": {"mtp": {"depth": 2, "acceptance": 1.5}}})"))),
      ConfigError, config_error(kOrigin, "/workload/mtp/depth", {"llama-2-7b has 0", "at most 1"}));
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 0}}})"))), ConfigError,
                       config_error(kOrigin, "/workload/mtp/depth", {"must be in [1, 64]"}));
}

TEST_CASE("mtp.acceptance is required when depth > 1 and must lie between 1 and depth", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2}}})"))), ConfigError,
                       config_error(kOrigin, "/workload/mtp/acceptance",
                                    {"missing required key \"acceptance\"", "in [1, 2]"}));
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 2.5}}})"))),
                       ConfigError, config_error(kOrigin, "/workload/mtp/acceptance", {"must be in [1, 2]", "2.5"}));
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 0.9}}})"))),
                       ConfigError, config_error(kOrigin, "/workload/mtp/acceptance", {"must be in [1, 2]", "0.9"}));
  // The bounds themselves are allowed.
  CHECK(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 1}}})"))).workload.mtp.acceptance == 1.0);
  CHECK(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 2, "acceptance": 2}}})"))).workload.mtp.acceptance == 2.0);
  // Without speculation the acceptance is 1 (default) and nothing else.
  const Scenario plain = load(minimal_scenario());
  CHECK(plain.workload.mtp.depth == 1);
  CHECK(plain.workload.mtp.acceptance == 1.0);
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"workload": {"mtp": {"depth": 1, "acceptance": 1.5}}})"))),
                       ConfigError, config_error(kOrigin, "/workload/mtp/acceptance", {"must be in [1, 1]"}));
}

TEST_CASE("attention_dp x tensor_parallel must equal the number of GPUs", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"attention_dp", 4}, {"tensor_parallel", 1}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/attention_dp",
                                    {"attention_dp x tensor_parallel (4 x 1)", "8 GPUs (1 node(s) x 8)"}));
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"attention_dp", 8}, {"tensor_parallel", 2}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/attention_dp", {"(8 x 2)"}));
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"tensor_parallel", 3}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/tensor_parallel", {"tensor_parallel (3) must divide the 8 GPUs"}));
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"tensor_parallel", 16}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/tensor_parallel", {"must be in [1, 8]"}));
  // Tensor parallelism needs a dense model (MoE models run with DP attention and EP).
  const Scenario tp2 = load(patched({{"model", "llama-3.1-70b"}, {"parallelism", {{"tensor_parallel", 2}}}}));
  CHECK(tp2.parallelism.attention_dp == 4);  // default: GPUs / tensor_parallel
  CHECK(tp2.parallelism.tensor_parallel == 2);
  const Scenario two_nodes = load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nodes": 2},
                                                       "parallelism": {"attention_dp": 16}})")));
  CHECK(two_nodes.hardware.total_gpus() == 16);
  CHECK(two_nodes.parallelism.expert_parallel == 16);
}

TEST_CASE("MoE models under tensor-parallel attention split experts over the replica or shard them", "[scenario]") {
  // The MoE group is the replica: by default its GPUs split the experts (expert_parallel = tp).
  const Scenario dflt = load(patched({{"parallelism", {{"tensor_parallel", 2}}}}));
  CHECK(dflt.parallelism.expert_parallel == 2);
  CHECK(dflt.parallelism.moe_tensor_parallel == 1);
  // EP over the 8 GPUs with TP2 replicas: refused, naming the layouts that work.
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"tensor_parallel", 2}, {"expert_parallel", 8}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/expert_parallel",
                                    {"with tensor_parallel 2", "must divide tensor_parallel", "tensor_parallel 1 (DP attention)"}));
  const Scenario split = load(patched({{"parallelism", {{"tensor_parallel", 2}, {"expert_parallel", 2}}}}));
  CHECK(split.parallelism.attention_dp == 4);
  const Scenario sharded = load(patched({{"parallelism", {{"tensor_parallel", 8}, {"expert_parallel", 1}}}}));
  CHECK(sharded.parallelism.expert_parallel == 1);
  CHECK(sharded.parallelism.moe_tensor_parallel == 8);
  // TensorRT-LLM's --tp_size 8 --ep_size 4: attention TP8, experts EP4 x TP2.
  const Scenario mixed = load(patched({{"parallelism", {{"tensor_parallel", 8}, {"expert_parallel", 4}}}}));
  CHECK(mixed.parallelism.moe_tensor_parallel == 2);
  CHECK(mixed.parallelism.moe_group() == 8);
  CHECK_FALSE(mixed.parallelism.gathers_tokens());
  CHECK_THROWS_MATCHES(
      load(patched({{"parallelism", {{"tensor_parallel", 8}, {"expert_parallel", 4}, {"moe_tensor_parallel", 4}}}})),
      ConfigError, config_error(kOrigin, "/parallelism/moe_tensor_parallel", {"(4 x 4) must equal tensor_parallel (8)"}));
}

TEST_CASE("DP attention with a tensor-parallel MoE gathers the MoE group's tokens", "[scenario]") {
  // SGLang's --tp 8 --dp 8 --enable-dp-attention: attention DP8, experts TP8.
  const Scenario dp = load(patched({{"parallelism", {{"attention_dp", 8}, {"expert_parallel", 1}, {"moe_tensor_parallel", 8}}}}));
  CHECK(dp.parallelism.tensor_parallel == 1);
  CHECK(dp.parallelism.moe_group() == 8);
  CHECK(dp.parallelism.gathers_tokens());
  // The default under DP attention: experts not split, EP over all GPUs (an all-to-all).
  const Scenario ep = load(patched({{"parallelism", {{"attention_dp", 8}}}}));
  CHECK(ep.parallelism.moe_tensor_parallel == 1);
  CHECK_FALSE(ep.parallelism.gathers_tokens());
  // moe_tensor_parallel alone: expert_parallel must be said too.
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"attention_dp", 8}, {"moe_tensor_parallel", 8}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/expert_parallel", {"moe_tensor_parallel is 8", "state expert_parallel"}));
  CHECK_THROWS_MATCHES(
      load(patched({{"parallelism", {{"attention_dp", 8}, {"expert_parallel", 4}, {"moe_tensor_parallel", 4}}}})), ConfigError,
      config_error(kOrigin, "/parallelism/moe_tensor_parallel", {"(4 x 4) must divide the 8 GPUs"}));
  CHECK_THROWS_MATCHES(
      load(patched({{"parallelism", {{"attention_dp", 8}, {"expert_parallel", 1}, {"moe_tensor_parallel", 3}}}})), ConfigError,
      config_error(kOrigin, "/parallelism/moe_tensor_parallel", {"must divide"}));
  // A dense model has no experts to split.
  CHECK_THROWS_MATCHES(load(patched({{"model", "llama-3.1-70b"}, {"parallelism", {{"moe_tensor_parallel", 2}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/moe_tensor_parallel", {"has no experts", "must be 1"}));
}

TEST_CASE("expert_parallel must divide the GPUs and the routed experts", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"parallelism", {{"expert_parallel", 3}}}})), ConfigError,
                       config_error(kOrigin, "/parallelism/expert_parallel",
                                    {"expert_parallel (3) must divide the 8 GPUs"}));
  // 3 nodes x 8 = 24 GPUs: 24 divides the GPUs but not DeepSeek's 256 routed experts.
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nodes": 3},
                                                  "parallelism": {"expert_parallel": 24}})"))),
                       ConfigError,
                       config_error(kOrigin, "/parallelism/expert_parallel",
                                    {"expert_parallel (24) must divide the 256 routed experts of deepseek-v3.2-exp"}));
  CHECK(load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nodes": 3},
                                     "parallelism": {"expert_parallel": 8}})")))
            .parallelism.expert_parallel == 8);
}

TEST_CASE("expert_parallel above 1 is rejected on a dense model", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"model", "llama-2-7b"}, {"parallelism", {{"expert_parallel", 2}}}})),
                       ConfigError, config_error(kOrigin, "/parallelism/expert_parallel", {"no experts", "must be 1", "the number 2"}));
  const Scenario dense = load(patched({{"model", "llama-2-7b"}}));
  CHECK(dense.parallelism.expert_parallel == 1);
  CHECK(dense.resolved["parallelism"]["expert_parallel"]["source"] == "default");
}

TEST_CASE("tensor_parallel must divide the attention heads, and with GQA the kv heads too", "[scenario]") {
  // 3 nodes: tensor_parallel 3 divides the 24 GPUs but not DeepSeek's 128 heads.
  CHECK_THROWS_MATCHES(load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "nodes": 3},
                                                  "parallelism": {"tensor_parallel": 3, "expert_parallel": 8}})"))),
                       ConfigError,
                       config_error(kOrigin, "/parallelism/tensor_parallel",
                                    {"tensor_parallel (3) must divide the 128 attention heads of deepseek-v3.2-exp"}));
  // 48 heads in 12 kv groups: tensor_parallel 8 divides neither way with 12.
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "llama-3.1-70b", "attention": {"heads": 48, "kv_heads": 12}},
                                 "parallelism": {"tensor_parallel": 8}})"))),
      ConfigError,
      config_error(kOrigin, "/parallelism/tensor_parallel", {"tensor_parallel (8) and the 12 kv heads", "divide one another"}));
  // Llama-3.1-70B: 8 kv heads; tensor_parallel 8 divides them.
  CHECK(load(patched({{"model", "llama-3.1-70b"}, {"parallelism", {{"tensor_parallel", 8}}}})).parallelism.attention_dp == 1);
}

TEST_CASE("model consistency checks: kv heads, experts per token, indexer without MLA", "[scenario]") {
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "llama-3.1-70b", "attention": {"kv_heads": 7}}})"))),
      ConfigError, config_error(kOrigin, "/model/attention/kv_heads", {"heads (64) must be a multiple of kv_heads (7)"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "deepseek-v3.2-exp", "moe": {"experts_per_token": 300}}})"))),
      ConfigError, config_error(kOrigin, "/model/moe/experts_per_token", {"exceeds routed_experts (256)"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "deepseek-v3.2-exp", "moe": {"first_dense_layers": 62}}})"))),
      ConfigError, config_error(kOrigin, "/model/moe/first_dense_layers", {"must be in [0, 61]"}));
  // (The origin is not checked here: it names the preset, not the scenario that added the indexer;
  // see the report on sim/config.)
  CHECK_THROWS_WITH(
      load(patched(json::parse(R"({"model": {"preset": "llama-2-7b",
                                 "indexer": {"heads": 64, "head_dim": 128, "top_k": 2048, "cache_bytes_per_token": "132B"}}})"))),
      Catch::Contains("at /model/indexer: a lightning indexer needs MLA attention"));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"model": {"preset": "deepseek-v3.2-exp", "weight_dtype": "fp4"}})"))),
      ConfigError, config_error(kOrigin, "/model/weight_dtype", {"\"fp32\", \"bf16\", \"fp16\" or \"fp8\"", "did you mean \"fp8\"?"}));
}

TEST_CASE("hardware consistency checks: PCIe switches and CPU sockets", "[scenario]") {
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "pcie": {"gpus_per_switch": 3}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/pcie/gpus_per_switch", {"gpus_per_switch (3) must divide", "gpu.count = 8"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "cpu": {"gpus_per_socket": 3}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/cpu/gpus_per_socket", {"(2 x 3) is less than", "gpu.count = 8"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "kernels": {"gemm": {"compute_efficiency": 1.1}}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/kernels/gemm/compute_efficiency", {"must be in [0.001, 1]"}));
  CHECK(load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "kernels": {"gemm": {"compute_efficiency": "75%"}}}})")))
            .hardware.kernels.gemm.compute_efficiency == 0.75);
}

TEST_CASE("cache mode \"offload\" needs a pool size and an MLA model", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"cache", {{"mode", "offload"}}}})), ConfigError,
                       config_error(kOrigin, "/cache/pool_ratio", {"exactly one of \"pool_ratio\"", "\"pool_entries\""}));
  CHECK_THROWS_MATCHES(load(patched({{"cache", {{"mode", "offload"}, {"pool_ratio", 0.2}, {"pool_entries", 100}}}})),
                       ConfigError, config_error(kOrigin, "/cache/pool_entries", {"exactly one of"}));
  CHECK_THROWS_MATCHES(load(patched({{"model", "llama-3.1-70b"}, {"cache", {{"mode", "offload"}, {"pool_ratio", 0.2}}}})),
                       ConfigError, config_error(kOrigin, "/cache/mode", {"GQA attention"}));
  CHECK_THROWS_MATCHES(load(patched({{"cache", {{"mode", "offload"}, {"pool_ratio", 1.5}}}})), ConfigError,
                       config_error(kOrigin, "/cache/pool_ratio", {"must be in (0, 1]"}));
  const auto s = load(patched({{"cache", {{"mode", "offload"}, {"pool_ratio", 0.2}, {"overlap", "dba"}}}}));
  CHECK(s.cache.mode == ess::CacheMode::offload);
  CHECK(s.cache.overlap == "dba");
  CHECK(s.cache.transfer == ess::TransferPath::gather);  // default
  CHECK(s.cache.pool_capacity(32768) == 6554);           // ceil(0.2 x 32768)
  CHECK(s.cache.host_memory_threshold == 0.9);
  CHECK_THROWS_MATCHES(load(patched({{"cache", {{"mode", "cpu"}}}})), ConfigError,
                       config_error(kOrigin, "/cache/mode", {"expected one of \"gpu\"", "got \"cpu\""}));
  CHECK(load(patched({{"cache", {{"mode", "gpu"}}}})).cache.mode == ess::CacheMode::gpu);
}

TEST_CASE("a scenario of another schema is rejected", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"schema", "ess-sim/scenario/v2"}})), ConfigError,
                       config_error(kOrigin, "/schema", {"unsupported schema \"ess-sim/scenario/v2\"", "ess-sim/scenario/v1"}));
  CHECK_THROWS_MATCHES(load(patched({{"schema", 1}})), ConfigError,
                       config_error(kOrigin, "/schema", {"expected a string"}));
}

TEST_CASE("a scenario must be a JSON object", "[scenario]") {
  for (const char* text : {"[1, 2]", "\"dsv32\"", "42", "null"}) {
    INFO(text);
    CHECK_THROWS_MATCHES(ess::load_scenario_text(text, kOrigin), ConfigError,
                         config_error(kOrigin, "", {"a scenario is a JSON object"}));
  }
  CHECK_THROWS_MATCHES(ess::load_scenario_text("[1, 2]", kOrigin), ConfigError,
                       config_error(kOrigin, "", {"got an array"}));
  CHECK_THROWS_MATCHES(ess::load_scenario_text("{", kOrigin), ConfigError,
                       config_error(kOrigin, "", {"invalid JSON at line 1"}));
}

TEST_CASE("defaults are applied and recorded with source \"default\"", "[scenario]") {
  json doc = minimal_scenario();
  doc.erase("schema");
  doc.erase("name");
  const Scenario s = load(doc);
  CHECK(s.seed == 1);
  CHECK(s.name.empty());
  CHECK(s.workload.decode_steps == 16);
  CHECK(s.workload.mtp.depth == 1);
  CHECK(s.parallelism.tensor_parallel == 1);
  CHECK(s.parallelism.attention_dp == 8);
  CHECK(s.parallelism.expert_parallel == 8);
  CHECK(s.cache.mode == ess::CacheMode::gpu);
  const auto& r = s.resolved;
  const auto is_default = [](const nlohmann::ordered_json& leaf) { return leaf.at("source") == "default"; };
  CHECK(is_default(r["schema"]));
  CHECK(r["schema"]["value"] == "ess-sim/scenario/v1");
  CHECK(is_default(r["seed"]));
  CHECK(r["seed"]["value"] == 1);
  CHECK(is_default(r["workload"]["decode_steps"]));
  CHECK(is_default(r["workload"]["mtp"]["depth"]));
  CHECK(is_default(r["workload"]["mtp"]["acceptance"]));
  CHECK(is_default(r["parallelism"]["tensor_parallel"]));
  CHECK(is_default(r["parallelism"]["attention_dp"]));
  CHECK(r["parallelism"]["attention_dp"]["value"] == 8);
  CHECK(is_default(r["parallelism"]["expert_parallel"]));
  CHECK(is_default(r["cache"]["mode"]));
  CHECK(r["cache"]["mode"]["value"] == "gpu");
  // Stated values are not defaults.
  CHECK_FALSE(is_default(r["workload"]["context_length"]));
  CHECK(r["workload"]["context_length"]["source"] == kOrigin);
}

TEST_CASE("workload ranges: context_length >= 1 and decode_steps between 1 and 1e6", "[scenario]") {
  CHECK_THROWS_MATCHES(load(patched({{"workload", {{"context_length", 0}}}})), ConfigError,
                       config_error(kOrigin, "/workload/context_length", {"must be in [1, 2147483648]"}));
  CHECK_THROWS_MATCHES(load(patched({{"workload", {{"decode_steps", 0}}}})), ConfigError,
                       config_error(kOrigin, "/workload/decode_steps", {"got 0"}));
  CHECK_THROWS_MATCHES(load(patched({{"workload", {{"decode_steps", 1000001}}}})), ConfigError,
                       config_error(kOrigin, "/workload/decode_steps", {"must be in [1, "}));
  CHECK(load(patched({{"workload", {{"decode_steps", 1000000}}}})).workload.decode_steps == 1000000);
  CHECK_THROWS_MATCHES(load(patched({{"seed", -1}})), ConfigError, config_error(kOrigin, "/seed", {"must be >= 0"}));
}

TEST_CASE("errors inside a preset's own values name the preset", "[scenario]") {
  // An override that makes a preset value inconsistent: the check fires at the preset's key, whose
  // origin is the preset file (the value came from there).
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "gpu": {"count": 6}, "pcie": {"gpus_per_switch": 4}}})"))),
      ConfigError, config_error(kOrigin, "/hardware/pcie/gpus_per_switch", {"gpus_per_switch (4)"}));
  CHECK_THROWS_MATCHES(
      load(patched(json::parse(R"({"hardware": {"preset": "h200-sxm", "gpu": {"count": 7}}})"))),
      ConfigError, config_error(kH200, "/hardware/pcie/gpus_per_switch", {"gpus_per_switch (2) must divide", "gpu.count = 7"}));
}

TEST_CASE("every range check of hardware, model and workload fields can fail", "[scenario]") {
  struct Bad {
    const char* set;       // --set argument
    const char* expected;  // what the message must say
  };
  const std::vector<Bad> cases = {
      {"hardware.nodes=0", "must be in [1, 4096]"},
      {"hardware.nodes=4097", "must be in [1, 4096]"},
      {"hardware.gpu.count=0", "must be in [1, 1024]"},
      {"hardware.gpu.count=1025", "must be in [1, 1024]"},
      {"hardware.gpu.count=0", "must be in [1, 1024]"},
      {"hardware.gpu.count=1025", "must be in [1, 1024]"},
      {"hardware.gpu.hbm_capacity=0GB", "must be in [1B, 1PB]"},
      {"hardware.gpu.hbm_bandwidth=0TB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.gpu.peak_compute.bf16=0TFLOP/s", "must be in [1GFLOP/s, 1000000PFLOP/s]"},
      {"hardware.gpu.peak_compute.fp8=-1TFLOP/s", "must be in [1GFLOP/s, 1000000PFLOP/s]"},
      {"hardware.pcie.generation=0", "must be in [1, 7]"},
      {"hardware.pcie.generation=8", "must be in [1, 7]"},
      {"hardware.pcie.d2h_bandwidth=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.pcie.latency=-1ns", "must be in [0s, 10ms]"},
      {"hardware.pcie.h2d_call_overhead=-1ns", "must be in [0s, 10ms]"},
      {"hardware.pcie.d2h_call_overhead=-1ns", "must be in [0s, 10ms]"},
      {"hardware.pcie.gpus_per_switch=0", "must be in [1, "},
      {"hardware.pcie.switch_uplink_bandwidth=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.nvlink.bandwidth=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.network.bandwidth_per_gpu=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.network.latency=-1us", "must be in [0s, 10ms]"},
      {"hardware.cpu.sockets=0", "must be in [1, 64]"},
      {"hardware.cpu.sockets=65", "must be in [1, 64]"},
      {"hardware.cpu.gpus_per_socket=0", "must be in [1, "},
      {"hardware.cpu.dram_capacity_per_socket=0TB", "must be in [1B, 1PB]"},
      {"hardware.cpu.dram_bandwidth_per_socket=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.kernels.gemm.compute_efficiency=0", "must be in [0.001, 1]"},
      {"hardware.kernels.attention.memory_efficiency=1.01", "must be in [0.001, 1]"},
      {"hardware.kernels.indexer.compute_ramp=-1", "must be in [0, 1e+15]"},
      {"hardware.kernels.memory_bound.memory_ramp=-1B", "must be in [0B, 1TB]"},
      {"hardware.kernels.gemm.kernel_overhead=-1us", "must be in [0s, 10ms]"},
      {"hardware.kernels.topk_passes=0.5", "must be in [1, "},
      {"hardware.kernels.prefill_attention.row_keys=-1", "must be in [0, "},
      {"hardware.kernels.prefill_attention.compute_efficiency=0", "must be in [0.001, 1]"},
      {"hardware.collectives.allreduce_bus_bandwidth=0GB/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.collectives.allreduce_latency=-1us", "must be in [0s, 10ms]"},
      {"hardware.collectives.alltoall_nvlink_efficiency=0", "must be in [0.001, 1]"},
      {"hardware.collectives.alltoall_network_efficiency=1.5", "must be in [0.001, 1]"},
      {"hardware.collectives.alltoall_latency=-1us", "must be in [0s, 10ms]"},
      {"model.layers=0", "must be in [1, "},
      {"model.hidden=0", "must be in [1, "},
      {"model.vocab=0", "must be in [1, "},
      {"model.mtp_layers=-1", "must be in [0, "},
      {"model.dense_intermediate=0", "must be in [1, "},
      {"model.norm=batch", "expected one of \"rms\" or \"layer\""},
      {"model.activation_dtype=int8", "expected one of"},
      {"model.attention.kind=mha", "expected one of \"mla\" or \"gqa\""},
      {"model.attention.heads=0", "must be in [1, "},
      {"model.attention.q_lora_rank=0", "must be in [1, "},
      {"model.attention.kv_lora_rank=0", "must be in [1, "},
      {"model.attention.qk_nope_head_dim=0", "must be in [1, "},
      {"model.attention.qk_rope_head_dim=0", "must be in [1, "},
      {"model.attention.v_head_dim=0", "must be in [1, "},
      {"model.attention.cache_bytes_per_token=0B", "must be in [1B, 1MiB]"},
      {"model.indexer.heads=0", "must be in [1, "},
      {"model.indexer.head_dim=0", "must be in [1, "},
      {"model.indexer.top_k=0", "must be in [1, "},
      {"model.indexer.cache_bytes_per_token=0B", "must be in [1B, 1MiB]"},
      {"model.moe.routed_experts=0", "must be in [1, "},
      {"model.moe.shared_experts=-1", "must be in [0, "},
      {"model.moe.experts_per_token=0", "must be in [1, "},
      {"model.moe.expert_intermediate=0", "must be in [1, "},
      {"model.moe.first_dense_layers=-1", "must be in [0, 61]"},
      {"seed=-1", "must be >= 0"},
      {"workload.context_length=0", "must be in [1, "},
      {"workload.decode_steps=0", "must be in [1, "},
      {"workload.mtp.depth=65", "must be in [1, 64]"},
      {"parallelism.tensor_parallel=0", "must be in [1, 8]"},
      {"parallelism.attention_dp=9", "must be in [1, 8]"},
      {"parallelism.expert_parallel=16", "must be in [1, 8]"},
      // Upper bounds that keep products of dimensions exact (no int or int64 overflow).
      {"model.layers=10001", "must be in [1, 10000]"},
      {"model.hidden=16777217", "must be in [1, 16777216]"},
      {"model.mtp_layers=64", "must be in [0, 63]"},
      {"hardware.pcie.gpus_per_switch=1025", "must be in [1, 1024]"},
      {"hardware.cpu.gpus_per_socket=1025", "must be in [1, 1024]"},
      {"workload.context_length=2147483649", "must be in [1, 2147483648]"},
      {"workload.batch_per_gpu=1048577", "must be at most 1048576"},
      // Values that used to pass and overflow the simulated clock (step time 0, throughput inf).
      {"hardware.kernels.gemm.compute_efficiency=1e-308", "must be in [0.001, 1]"},
      {"hardware.kernels.gemm.kernel_overhead=1e300s", "must be in [0s, 10ms]"},
      {"hardware.gpu.hbm_bandwidth=1e-300B/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.nvlink.bandwidth=1e-300B/s", "must be in [1MB/s, 1000000TB/s]"},
      {"hardware.gpu.peak_compute.bf16=1e300FLOP/s", "must be in [1GFLOP/s, 1000000PFLOP/s]"},
      {"hardware.pcie.gather_h2d_efficiency=1e-9", "must be in [0.001, 1]"},
      {"hardware.kernels.memory_bound.memory_ramp=1e300B", "must be in [0B, 1TB]"},
  };
  for (const auto& c : cases) {
    std::string pointer = std::string("/") + c.set;
    pointer.erase(pointer.find('='));
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    INFO("--set " << c.set);
    CHECK_THROWS_MATCHES(load(minimal_scenario(), ess::test::sets({c.set})), ConfigError,
                         config_error(std::string("--set ") + c.set, pointer, {c.expected}));
  }
}

TEST_CASE("values on the boundary of their range are accepted", "[scenario]") {
  for (const char* set : {"hardware.collectives.alltoall_nvlink_efficiency=1", "hardware.pcie.generation=1", "hardware.pcie.generation=7",
                          "hardware.cpu.sockets=64", "hardware.kernels.gemm.compute_efficiency=1",
                          "hardware.kernels.topk_passes=1", "hardware.pcie.latency=0s", "hardware.kernels.gemm.compute_ramp=0",
                          "hardware.kernels.gemm.memory_ramp=0B", "model.moe.first_dense_layers=0",
                          "model.moe.first_dense_layers=61", "model.moe.shared_experts=0", "model.mtp_layers=0",
                          "workload.decode_steps=1", "workload.decode_steps=1000000", "seed=0",
                          "workload.context_length=1", "parallelism.expert_parallel=1"}) {
    INFO("--set " << set);
    CHECK_NOTHROW(load(minimal_scenario(), ess::test::sets({set})));
  }
}
