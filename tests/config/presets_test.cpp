#include "sim/config/presets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/config/json_text.h"
#include "sim/config/scenario.h"
#include "tests/config/config_test_support.h"

using ess::PresetKind;

namespace {

const std::vector<std::string> kModels = {"deepseek-v3", "deepseek-v3.2-exp", "llama-2-7b", "llama-3.1-70b"};
// The hardware presets of scenarios/hardware/ and the calibrated profiles of calibration/profiles/.
const std::vector<std::string> kHardware = {"a100-80gb-sxm", "a100-80gb-sxm-measured", "h100-sxm",
                                            "h100-sxm-measured", "h20", "h20-measured", "h200-sxm",
                                            "h200-sxm-measured", "h800-sxm", "h800-sxm-measured"};

std::string folder(PresetKind k) { return k == PresetKind::model ? "models" : "hardware"; }

// Every stem of scenarios/<folder>/*.json on disk (and of calibration/profiles/*.json for
// hardware), sorted.
std::vector<std::string> files_on_disk(PresetKind k) {
  std::vector<std::string> out;
  std::vector<std::filesystem::path> dirs = {std::filesystem::path(ESS_SOURCE_DIR) / "scenarios" / folder(k)};
  if (k == PresetKind::hardware) dirs.push_back(std::filesystem::path(ESS_SOURCE_DIR) / "calibration" / "profiles");
  for (const auto& dir : dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") out.push_back(entry.path().stem().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_number_like(const nlohmann::json& v) {
  if (v.is_number()) return true;
  if (!v.is_string()) return false;
  const auto s = v.get<std::string>();
  // A quantity ("4.8TB/s", "-1us", ".5GB"): starts like a number. Names ("h200-sxm"), dtypes
  // ("fp8") and prose start with a letter.
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s.front())) != 0 || s.front() == '-' ||
                        s.front() == '+' || s.front() == '.');
}

// Every number or quantity under `v` must be wrapped as {"value": ..., "source": "<non-empty>"}.
void collect_unsourced(const nlohmann::json& v, const std::string& pointer, std::vector<std::string>& bad,
                       int& wrapped) {
  if (v.is_object() && v.contains("value")) {
    ++wrapped;
    const auto s = v.find("source");
    // A value is a number or a string, or (only the measured GEMM table) an object of measurements.
    const bool table = pointer.size() >= 14 && pointer.substr(pointer.size() - 14) == "/gemm_measured";
    const bool ok = v.size() == 2 && s != v.end() && s->is_string() && !s->get<std::string>().empty() &&
                    (v.at("value").is_number() || v.at("value").is_string() || (table && v.at("value").is_object()));
    if (!ok) bad.push_back(pointer + " (malformed value with provenance: " + v.dump() + ")");
    return;
  }
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) collect_unsourced(x, ess::pointer_append(pointer, k), bad, wrapped);
    return;
  }
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect_unsourced(v[i], pointer + "/" + std::to_string(i), bad, wrapped);
    return;
  }
  if (is_number_like(v)) bad.push_back(pointer + " = " + v.dump() + " has no source");
}

ess::Scenario load_pair(const std::string& model, const std::string& hardware) {
  auto doc = ess::test::minimal_scenario();
  doc["model"] = model;
  doc["hardware"] = hardware;
  return ess::test::load(doc);
}

}  // namespace

TEST_CASE("the built-in presets are exactly the expected models and hardware, sorted", "[presets]") {
  CHECK(ess::preset_names(PresetKind::model) == kModels);
  CHECK(ess::preset_names(PresetKind::hardware) == kHardware);
  CHECK(ess::to_string(PresetKind::model) == "model");
  CHECK(ess::to_string(PresetKind::hardware) == "hardware");
}

TEST_CASE("the embedded presets are the JSON files under scenarios/, unchanged", "[presets]") {
  for (PresetKind k : {PresetKind::model, PresetKind::hardware}) {
    CHECK(files_on_disk(k) == ess::preset_names(k));
    for (const ess::Preset* p : ess::presets(k)) {
      INFO(p->path);
      CHECK(p->kind == k);
      CHECK(p->origin() == "built-in preset " + p->path);
      if (p->path.rfind("calibration/profiles/", 0) == 0) {
        // A calibrated profile: the preset is the profile's "hardware" section.
        CHECK(k == PresetKind::hardware);
        CHECK(p->path == "calibration/profiles/" + p->name + ".json");
        CHECK(p->document == ess::read_json_file(std::filesystem::path(ESS_SOURCE_DIR) / p->path).at("hardware"));
      } else {
        CHECK(p->path == "scenarios/" + folder(k) + "/" + p->name + ".json");
        nlohmann::json file = ess::read_json_file(std::filesystem::path(ESS_SOURCE_DIR) / p->path);
        if (const auto b = file.find("base"); b != file.end()) {
          // A file naming a base holds what differs: the preset is the base's document under it.
          const ess::Preset* base = ess::find_preset(k, b->get<std::string>());
          REQUIRE(base != nullptr);
          CHECK(p->base == base->name);
          file.erase("base");
          CHECK(p->document == ess::merged_preset(base->document, file));
        } else {
          CHECK(p->base.empty());
          CHECK(p->document == file);
        }
      }
      CHECK_FALSE(p->description.empty());
      CHECK(p->description == p->document.at("description").get<std::string>());
      CHECK(p->document.at("name") == p->name);  // the name inside matches the file name
    }
  }
}

TEST_CASE("a preset over a base replaces each leaf whole, merges sections and keeps what it does not state", "[presets]") {
  const nlohmann::json base = nlohmann::json::parse(R"({"name": "b", "gpu": {"kind": "B", "count": {"value": 8, "source": "base"},
    "hbm": {"value": "80GB", "source": "base sheet"}}, "pcie": {"lanes": {"value": 16, "source": "spec"}}})");
  const nlohmann::json child = nlohmann::json::parse(R"({"name": "c", "gpu": {"hbm": {"value": "141GB", "source": "child sheet"}}})");
  const nlohmann::json m = ess::merged_preset(base, child);
  CHECK(m["name"] == "c");
  CHECK(m["gpu"]["hbm"] == child["gpu"]["hbm"]);
  CHECK(m["gpu"]["count"] == base["gpu"]["count"]);
  CHECK(m["pcie"] == base["pcie"]);
  // A leaf given with a value only does not keep the base's source: the source check then fails it.
  const nlohmann::json bare = ess::merged_preset(base, nlohmann::json::parse(R"({"gpu": {"hbm": {"value": "96GB"}}})"));
  CHECK_FALSE(bare["gpu"]["hbm"].contains("source"));
}

TEST_CASE("the H200, H800 and H20 datasheet presets state only what differs from the H100's", "[presets]") {
  for (const char* name : {"h200-sxm", "h800-sxm", "h20"}) {
    const ess::Preset* p = ess::find_preset(PresetKind::hardware, name);
    REQUIRE(p != nullptr);
    CHECK(p->base == "h100-sxm");
  }
}

TEST_CASE("find_preset finds a preset by exact name only", "[presets]") {
  const ess::Preset* h200 = ess::find_preset(PresetKind::hardware, "h200-sxm");
  REQUIRE(h200 != nullptr);
  CHECK(h200->name == "h200-sxm");
  CHECK(ess::find_preset(PresetKind::model, "h200-sxm") == nullptr);  // wrong kind
  CHECK(ess::find_preset(PresetKind::hardware, "H200-SXM") == nullptr);
  CHECK(ess::find_preset(PresetKind::hardware, "h200") == nullptr);
  CHECK(ess::find_preset(PresetKind::hardware, "") == nullptr);
  CHECK(ess::find_preset(PresetKind::model, "llama-2-7b") != nullptr);
}

TEST_CASE("every number and quantity in every preset carries a non-empty source", "[presets]") {
  for (PresetKind k : {PresetKind::model, PresetKind::hardware}) {
    for (const ess::Preset* p : ess::presets(k)) {
      std::vector<std::string> bad;
      int wrapped = 0;
      collect_unsourced(p->document, "", bad, wrapped);
      INFO(p->path);
      CAPTURE(bad);
      CHECK(bad.empty());
      CHECK(wrapped >= (k == PresetKind::model ? 8 : 40));  // the walk did see the values
    }
  }
}

TEST_CASE("the source check itself catches a bare number, a bare quantity and an empty source", "[presets]") {
  const auto doc = nlohmann::json::parse(R"({
    "name": "h200-sxm", "weight_dtype": "fp8",
    "a": 5, "b": {"c": "4.8TB/s"}, "d": {"value": 1, "source": ""}, "e": {"value": 1},
    "f": {"value": 2, "source": "ok"}, "g": [1.5]
  })");
  std::vector<std::string> bad;
  int wrapped = 0;
  collect_unsourced(doc, "", bad, wrapped);
  CAPTURE(bad);
  CHECK(bad.size() == 5);  // /a, /b/c, /d, /e, /g/0; not the name, the dtype or /f
  CHECK(wrapped == 3);
}

TEST_CASE("every model preset loads through a scenario on H200 and every hardware preset with DeepSeek-V3.2",
          "[presets]") {
  for (const auto& model : ess::preset_names(PresetKind::model)) {
    INFO("model " << model);
    const ess::Scenario s = load_pair(model, "h200-sxm");
    CHECK(s.model.name == model);
    CHECK(s.resolved["model"]["name"]["value"] == model);
  }
  for (const auto& hw : ess::preset_names(PresetKind::hardware)) {
    INFO("hardware " << hw);
    const ess::Scenario s = load_pair("deepseek-v3.2-exp", hw);
    CHECK(s.hardware.name == hw);
    CHECK(s.hardware.total_gpus() == 8);
  }
}

TEST_CASE("every model preset loads with every hardware preset", "[presets]") {
  for (const auto& model : ess::preset_names(PresetKind::model)) {
    for (const auto& hw : ess::preset_names(PresetKind::hardware)) {
      INFO(model << " on " << hw);
      CHECK_NOTHROW(load_pair(model, hw));
    }
  }
}

TEST_CASE("every hardware preset loads alone with load_hardware_preset", "[presets]") {
  for (const auto& hw : ess::preset_names(PresetKind::hardware)) {
    INFO(hw);
    const ess::Hardware h = ess::load_hardware_preset(hw);
    CHECK(h.name == hw);
    CHECK(h.gpu.hbm_capacity.value() > 0.0);
  }
  CHECK_THROWS_MATCHES(ess::load_hardware_preset("h200"), ess::ConfigError,
                       ess::test::config_error("--hardware h200", "/hardware", {"unknown hardware preset \"h200\""}));
}

TEST_CASE("H200 datasheet values land in the Hardware struct exactly", "[presets]") {
  const ess::Hardware h = ess::load_hardware_preset("h200-sxm");
  CHECK(h.gpu.kind == "H200-SXM-141GB");
  CHECK(h.nodes == 1);
  CHECK(h.gpu.count == 8);
  CHECK(h.gpu.hbm_capacity.value() == 143771.0 * 1048576.0);
  CHECK(h.gpu.hbm_bandwidth.value() == 4.8e12);
  REQUIRE(h.gpu.peak_compute.fp32.has_value());
  CHECK(h.gpu.peak_compute.fp32->value() == 67e12);
  REQUIRE(h.gpu.peak_compute.bf16.has_value());
  CHECK(h.gpu.peak_compute.bf16->value() == 989.4e12);
  REQUIRE(h.gpu.peak_compute.fp16.has_value());
  CHECK(h.gpu.peak_compute.fp16->value() == 989.4e12);
  REQUIRE(h.gpu.peak_compute.fp8.has_value());
  CHECK(h.gpu.peak_compute.fp8->value() == 1978.9e12);
  CHECK(h.pcie.generation == 5);
  CHECK(h.pcie.h2d_bandwidth.value() == 55.43e9);
  CHECK(h.pcie.d2h_bandwidth.value() == 55.06e9);
  CHECK(h.pcie.latency.value() == 1.5e-6);
  CHECK(h.pcie.h2d_call_overhead.value() == 0.82e-6);
  CHECK(h.pcie.d2h_call_overhead.value() == 2.84e-6);
  CHECK(h.pcie.gpus_per_switch == 2);
  CHECK(h.nvlink.bandwidth.value() == 396.4e9);
  CHECK(h.network.bandwidth_per_gpu.value() == 50e9);
  CHECK(h.cpu.sockets == 2);
  CHECK(h.cpu.gpus_per_socket == 4);
  CHECK(h.cpu.dram_capacity_per_socket.value() == 1e12);
  CHECK(h.cpu.dram_bandwidth_per_socket.value() == 307.2e9);
  CHECK(h.kernels.gemm.compute_efficiency == 0.8);
  CHECK(h.kernels.gemm.kernel_overhead.value() == 2e-6);
  CHECK(h.kernels.topk_passes == 2.0);
  CHECK(h.collectives.allreduce_bus_bandwidth.value() == 480e9);
  CHECK(h.collectives.allreduce_latency.value() == 37e-6);
}

TEST_CASE("A100 has no fp8 peak and its other datasheet values are exact", "[presets]") {
  const ess::Hardware h = ess::load_hardware_preset("a100-80gb-sxm");
  CHECK_FALSE(h.gpu.peak_compute.fp8.has_value());
  REQUIRE(h.gpu.peak_compute.bf16.has_value());
  CHECK(h.gpu.peak_compute.bf16->value() == 312e12);
  REQUIRE(h.gpu.peak_compute.fp32.has_value());
  CHECK(h.gpu.peak_compute.fp32->value() == 19.5e12);
  CHECK(h.gpu.hbm_capacity.value() == 80.0 * 1073741824.0);
  CHECK(h.gpu.hbm_bandwidth.value() == 2039e9);
  CHECK(h.pcie.generation == 4);
  CHECK_THROWS_AS(h.gpu.peak_compute.at(ess::DType::fp8, h.gpu.kind), ess::UnsupportedError);
}

TEST_CASE("H20, H800 and H100 datasheet values land exactly", "[presets]") {
  const ess::Hardware h20 = ess::load_hardware_preset("h20");
  CHECK(h20.gpu.hbm_capacity.value() == 96e9);
  CHECK(h20.gpu.hbm_bandwidth.value() == 4e12);
  REQUIRE(h20.gpu.peak_compute.fp8.has_value());
  CHECK(h20.gpu.peak_compute.fp8->value() == 296e12);
  const ess::Hardware h800 = ess::load_hardware_preset("h800-sxm");
  CHECK(h800.gpu.hbm_bandwidth.value() == 3.35e12);
  CHECK(h800.nvlink.bandwidth.value() == 200e9);
  CHECK(h800.gpu.hbm_capacity.value() == 81559.0 * 1048576.0);
  const ess::Hardware h100 = ess::load_hardware_preset("h100-sxm");
  CHECK(h100.gpu.hbm_bandwidth.value() == 3.35e12);
  CHECK(h100.gpu.hbm_capacity.value() == 81559.0 * 1048576.0);
}

TEST_CASE("model presets give the published architecture numbers", "[presets]") {
  const ess::Scenario ds = load_pair("deepseek-v3.2-exp", "h200-sxm");
  CHECK(ds.model.layers == 61);
  CHECK(ds.model.hidden == 7168);
  CHECK(ds.model.vocab == 129280);
  CHECK(ds.model.mtp_layers == 1);
  CHECK(ds.model.weight_dtype == ess::DType::fp8);
  CHECK(ds.model.attention.kind == ess::AttentionKind::mla);
  CHECK(ds.model.attention.heads == 128);
  CHECK(ds.model.attention.mla.kv_lora_rank == 512);
  CHECK(ds.model.attention.mla.qk_rope_head_dim == 64);
  CHECK(ds.model.attention.cache_bytes_per_token.value() == 656.0);
  REQUIRE(ds.model.indexer.has_value());
  CHECK(ds.model.indexer->top_k == 2048);
  CHECK(ds.model.indexer->cache_bytes_per_token.value() == 132.0);
  REQUIRE(ds.model.moe.has_value());
  CHECK(ds.model.moe->routed_experts == 256);
  CHECK(ds.model.moe->experts_per_token == 8);
  CHECK(ds.model.moe->first_dense_layers == 3);
  CHECK(ds.model.dense_layer_count() == 3);

  const ess::Scenario v3 = load_pair("deepseek-v3", "h200-sxm");
  CHECK_FALSE(v3.model.indexer.has_value());
  CHECK(v3.resolved["model"]["indexer"]["value"].is_null());

  // GQA: K and V of every kv head, so 2 x 32 x 128 x 2 B (fp16) = 16 KiB per token per layer.
  const ess::Scenario l7 = load_pair("llama-2-7b", "h200-sxm");
  CHECK(l7.model.attention.kind == ess::AttentionKind::gqa);
  CHECK(l7.model.attention.cache_bytes_per_token.value() == 16384.0);
  CHECK_FALSE(l7.model.moe.has_value());
  CHECK(l7.model.dense_layer_count() == 32);
  CHECK(l7.model.mtp_layers == 0);
  // 2 x 8 x 128 x 2 B (bf16) = 4 KiB.
  const ess::Scenario l70 = load_pair("llama-3.1-70b", "h200-sxm");
  CHECK(l70.model.attention.gqa.kv_heads == 8);
  CHECK(l70.model.attention.cache_bytes_per_token.value() == 4096.0);
}
