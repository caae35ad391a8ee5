// Hardware profiles (sim/config/profile.h): a scenario's "hardware": {"profile": path, overrides...}
// resolved against the scenario's folder, load_hardware_preset of a path, the shipped profiles as
// built-in presets, and hardware.kernels.gemm_measured as the hardware reader validates it.
#include "sim/config/profile.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/gemm.h"
#include "sim/config/config_error.h"
#include "sim/config/presets.h"
#include "sim/config/scenario.h"
#include "tests/config/config_test_support.h"

using ess::ConfigError;
using ess::Scenario;
using ess::test::config_error;
using ess::test::kOrigin;
using ess::test::minimal_scenario;
using json = nlohmann::json;

namespace {

// The built-in h200-sxm hardware document renamed, with NVLink at `nvlink` instead of 396.4GB/s.
json h200_hardware(const std::string& name, const std::string& nvlink) {
  const ess::Preset* h200 = ess::find_preset(ess::PresetKind::hardware, "h200-sxm");
  REQUIRE(h200 != nullptr);
  json hw = h200->document;
  hw["name"] = name;
  hw["nvlink"]["bandwidth"] = {{"value", nvlink}, {"source", "measured for this test"}};
  return hw;
}

std::string profile_text(const json& hardware) {
  return json{{"schema", "ess-sim/hardware-profile/v1"}, {"name", hardware.at("name")}, {"hardware", hardware}}.dump(2);
}

std::string scenario_text(const json& hardware_section) {
  json doc = minimal_scenario();
  doc["hardware"] = hardware_section;
  return doc.dump(2);
}


// Runs a block in another working directory, restoring the old one at scope exit.
class InDirectory {
 public:
  explicit InDirectory(const std::filesystem::path& dir) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDirectory() { std::filesystem::current_path(old_); }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

 private:
  std::filesystem::path old_;
};

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("names_a_file: a path has a slash or ends in .json", "[profile]") {
  CHECK(ess::names_a_file("calibration/profiles/x.json"));
  CHECK(ess::names_a_file("x.json"));
  CHECK(ess::names_a_file("./x"));
  CHECK_FALSE(ess::names_a_file("h200-sxm"));
  CHECK_FALSE(ess::names_a_file(".json"));  // a 5-character name is not "<something>.json"
  CHECK_FALSE(ess::names_a_file("a100-80gb-sxm-measured"));
}

TEST_CASE("a scenario's hardware profile is read next to the scenario, with overrides", "[profile]") {
  const ess::test::TempDir dir;
  const auto profile = dir.path() / "prof.json";
  ess::test::write_text(profile, profile_text(h200_hardware("my-h200", "300GB/s")));
  const auto scenario = dir.write("scenario.json", scenario_text({{"profile", "prof.json"}, {"nodes", 2}}));
  const Scenario s = ess::load_scenario(scenario.string());
  CHECK(s.hardware.name == "my-h200");
  CHECK(s.hardware.nvlink.bandwidth.value() == 300e9);  // the profile's changed value
  CHECK(s.hardware.nodes == 2);                         // the scenario's override
  // Everything else is the h200-sxm document's.
  CHECK(s.hardware.pcie.h2d_bandwidth.value() == 55.43e9);
  CHECK(s.hardware.gpu.hbm_bandwidth.value() == 4.8e12);
  CHECK(s.hardware.kernels.gemm_measured == nullptr);
  // Provenance: the override names the scenario file, the profile's value keeps its source.
  const auto& hw = s.resolved["hardware"];
  CHECK(hw["nodes"] == nlohmann::ordered_json({{"value", 2}, {"source", scenario.string()}}));
  CHECK(hw["nvlink"]["bandwidth"]["source"] == "measured for this test");
}

TEST_CASE("a relative profile path resolves against the scenario's folder, not the current directory",
          "[profile]") {
  const ess::test::TempDir dir;
  // dir/p/prof.json is the profile the scenario means: NVLink 300GB/s.
  ess::test::write_text(dir.path() / "p" / "prof.json", profile_text(h200_hardware("right", "300GB/s")));
  // A decoy that "../p/prof.json" names from the working directory dir/decoy/cwd: NVLink 111GB/s.
  ess::test::write_text(dir.path() / "decoy" / "p" / "prof.json", profile_text(h200_hardware("decoy", "111GB/s")));
  std::filesystem::create_directories(dir.path() / "decoy" / "cwd");
  const auto scenario = dir.path() / "s" / "scenario.json";
  ess::test::write_text(scenario, scenario_text({{"profile", "../p/prof.json"}}));
  const InDirectory cwd(dir.path() / "decoy" / "cwd");
  const Scenario s = ess::load_scenario(scenario.string());
  CHECK(s.hardware.name == "right");
  CHECK(s.hardware.nvlink.bandwidth.value() == 300e9);
  // The same path given with --set is relative to the current directory: the decoy.
  const Scenario set = ess::load_scenario(scenario.string(), ess::test::sets({"hardware.profile=../p/prof.json"}));
  CHECK(set.hardware.name == "decoy");
  CHECK(set.hardware.nvlink.bandwidth.value() == 111e9);
}

TEST_CASE("profile errors: missing file, no schema, no hardware object, profile plus preset", "[profile][errors]") {
  const ess::test::TempDir dir;
  const auto good = dir.path() / "prof.json";
  ess::test::write_text(good, profile_text(h200_hardware("p", "300GB/s")));
  SECTION("a missing profile names the scenario's key and the resolved path") {
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "nope.json"}}));
    const std::string resolved = (dir.path() / "nope.json").string();
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error(scenario.string(), "/hardware/profile",
                                      {"no such file", "profile path resolved to " + resolved}));
  }
  SECTION("a file without the profile schema (e.g. a hardware preset file) is not a profile") {
    const auto preset_file = dir.path() / "preset.json";
    ess::test::write_text(preset_file, h200_hardware("p", "300GB/s").dump());
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "preset.json"}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error("profile " + preset_file.string(), "/schema",
                                      {"not a hardware profile", "ess-sim/hardware-profile/v1"}));
  }
  SECTION("a profile without a hardware object") {
    const auto bare = dir.path() / "bare.json";
    ess::test::write_text(bare, R"({"schema": "ess-sim/hardware-profile/v1", "name": "bare"})");
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "bare.json"}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error("profile " + bare.string(), "/hardware", {"\"hardware\" object"}));
  }
  SECTION("a profile that is not JSON names the profile") {
    const auto broken = dir.path() / "broken.json";
    ess::test::write_text(broken, "{\"schema\": ");
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "broken.json"}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error("profile " + broken.string(), "", {"invalid JSON"}));
  }
  SECTION("a profile and a preset together") {
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "prof.json"}, {"preset", "h200-sxm"}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error(scenario.string(), "/hardware", {"either \"preset\" or \"profile\", not both"}));
  }
  SECTION("a profile path that is not a string") {
    const auto scenario = dir.write("s.json", scenario_text({{"profile", 3}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error(scenario.string(), "/hardware/profile", {"expected the path of a hardware profile"}));
  }
  SECTION("a bad value inside the profile names the profile; a bad override names the scenario") {
    const auto bad = dir.path() / "bad.json";
    ess::test::write_text(bad, profile_text(h200_hardware("bad", "-1GB/s")));
    const auto scenario = dir.write("s.json", scenario_text({{"profile", "bad.json"}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(scenario.string()), ConfigError,
                         config_error("profile " + bad.string(), "/hardware/nvlink/bandwidth", {"must be in [1MB/s, 1000000TB/s]"}));
    const auto override = dir.write("o.json", scenario_text({{"profile", "prof.json"}, {"nvlink", {{"bandwidth", "-2GB/s"}}}}));
    CHECK_THROWS_MATCHES(ess::load_scenario(override.string()), ConfigError,
                         config_error(override.string(), "/hardware/nvlink/bandwidth", {"must be in [1MB/s, 1000000TB/s]"}));
  }
}

TEST_CASE("load_hardware_preset reads a profile given by path", "[profile]") {
  const ess::test::TempDir dir;
  const auto path = dir.path() / "sub" / "prof.json";
  ess::test::write_text(path, profile_text(h200_hardware("by-path", "250GB/s")));
  const ess::Hardware hw = ess::load_hardware_preset(path.string());
  CHECK(hw.name == "by-path");
  CHECK(hw.nvlink.bandwidth.value() == 250e9);
  CHECK(hw.nodes == 1);
  // A relative path is relative to the current directory.
  {
    const InDirectory cwd(dir.path());
    CHECK(ess::load_hardware_preset("sub/prof.json").name == "by-path");
  }
  CHECK_THROWS_AS(ess::load_hardware_preset((dir.path() / "none.json").string()), ConfigError);
}

TEST_CASE("the shipped measured profiles are built-in hardware presets with measured GEMM tables", "[profile]") {
  for (const char* name : {"a100-80gb-sxm-measured", "h100-sxm-measured"}) {
    INFO(name);
    const ess::Preset* p = ess::find_preset(ess::PresetKind::hardware, name);
    REQUIRE(p != nullptr);
    CHECK(p->path == std::string("calibration/profiles/") + name + ".json");
    // The preset is the profile's "hardware" section.
    const json file = read_json(std::filesystem::path(ESS_SOURCE_DIR) / p->path);
    CHECK(p->document == file.at("hardware"));
    const ess::Hardware hw = ess::load_hardware_preset(name);
    CHECK(hw.name == name);
    REQUIRE(hw.kernels.gemm_measured != nullptr);
    // Llama-2-7B's QKV, O, up and down GEMMs at TP 1, 2, 4 and 8: 16 weight shapes, all fp16.
    CHECK(hw.kernels.gemm_measured->shapes.size() == 16);
    for (const auto& [key, points] : hw.kernels.gemm_measured->shapes) {
      CHECK(std::get<2>(key) == ess::DType::fp16);
      CHECK_FALSE(points.empty());
    }
    // The same profile given by path loads to the same values.
    const ess::Hardware by_path = ess::load_hardware_preset((std::filesystem::path(ESS_SOURCE_DIR) / p->path).string());
    CHECK(by_path.name == hw.name);
    CHECK(by_path.nvlink.bandwidth.value() == hw.nvlink.bandwidth.value());
    CHECK(by_path.kernels.gemm_measured->points() == hw.kernels.gemm_measured->points());
  }
}

TEST_CASE("gemm() on the A100 profile returns the measured time of a measured shape", "[profile]") {
  // The profile's own table entry for n 12288, k 4096 fp16 (Llama-2-7B QKV at TP 1).
  const json file =
      read_json(std::filesystem::path(ESS_SOURCE_DIR) / "calibration/profiles/a100-80gb-sxm-measured.json");
  const json* entry = nullptr;
  for (const auto& e : file.at("hardware").at("kernels").at("gemm_measured").at("value").at("shapes")) {
    if (e.at("n") == 12288 && e.at("k") == 4096 && e.at("dtype") == "fp16") entry = &e;
  }
  REQUIRE(entry != nullptr);
  const auto& ms = entry->at("m");
  const auto& ts = entry->at("seconds");
  REQUIRE(ms.at(0) == 1);
  const ess::Hardware hw = ess::load_hardware_preset("a100-80gb-sxm-measured");
  const ess::KernelCost one = ess::gemm({.m = 1, .n = 12288, .k = 4096, .dtype = ess::DType::fp16}, hw);
  CHECK(one.measured);
  CHECK(one.time.value() == ts.at(0).get<double>());
  // Between the profile's m[2] and m[3]: log-log interpolation of the two measured times.
  const auto m2 = ms.at(2).get<std::int64_t>();
  const auto m3 = ms.at(3).get<std::int64_t>();
  REQUIRE(m3 - m2 >= 2);
  const std::int64_t mid = m2 + 1;
  const double f = std::log(static_cast<double>(mid) / static_cast<double>(m2)) /
                   std::log(static_cast<double>(m3) / static_cast<double>(m2));
  const double t2 = ts.at(2).get<double>();
  const double t3 = ts.at(3).get<double>();
  const ess::KernelCost between = ess::gemm({.m = mid, .n = 12288, .k = 4096, .dtype = ess::DType::fp16}, hw);
  CHECK(between.measured);
  CHECK(between.time.value() == Approx(t2 * std::pow(t3 / t2, f)).epsilon(1e-12));
  // A weight shape the profile did not measure: the fitted roofline.
  CHECK_FALSE(ess::gemm({.m = 1, .n = 7168, .k = 2048, .dtype = ess::DType::fp16}, hw).measured);
  // The uncalibrated a100 preset has no table at all.
  CHECK_FALSE(ess::gemm({.m = 1, .n = 12288, .k = 4096, .dtype = ess::DType::fp16},
                        ess::load_hardware_preset("a100-80gb-sxm"))
                  .measured);
}

namespace {

// h200-sxm with hardware.kernels.gemm_measured set to `table` (given inline in the scenario).
Scenario with_table(const json& table) {
  json doc = minimal_scenario();
  doc["hardware"] = {{"preset", "h200-sxm"}, {"kernels", {{"gemm_measured", table}}}};
  return ess::test::load(doc);
}

json shape(const json& m, const json& seconds, const std::string& dtype = "fp16") {
  return {{"n", 64}, {"k", 128}, {"dtype", dtype}, {"m", m}, {"seconds", seconds}};
}

json table_of(const json& shape_entry) {
  return {{"value", {{"shapes", json::array({shape_entry})}}}, {"source", "test"}};
}

}  // namespace

TEST_CASE("hardware.kernels.gemm_measured: a valid table is read into the GEMM model", "[profile]") {
  const Scenario s = with_table(table_of(shape({16, 1, 4}, {3e-6, 1e-6, 2e-6})));
  REQUIRE(s.hardware.kernels.gemm_measured != nullptr);
  CHECK(s.hardware.kernels.gemm_measured->points() == 3);
  // Given out of order, kept sorted by m: m 4 is exactly 2 us.
  const ess::KernelCost c = ess::gemm({.m = 4, .n = 64, .k = 128, .dtype = ess::DType::fp16}, s.hardware);
  CHECK(c.measured);
  CHECK(c.time.value() == 2e-6);
  // null means no table.
  CHECK(with_table(nullptr).hardware.kernels.gemm_measured == nullptr);
}

TEST_CASE("hardware.kernels.gemm_measured: malformed tables are ConfigErrors at its pointer", "[profile][errors]") {
  const std::string at = "/hardware/kernels/gemm_measured";
  CHECK_THROWS_MATCHES(with_table(table_of(shape({1, 8, 8}, {1e-6, 2e-6, 3e-6}))), ConfigError,
                       config_error(kOrigin, at, {"shapes[0]", "m 8", "measured twice"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape({1, 8}, {1e-6}))), ConfigError,
                       config_error(kOrigin, at, {"shapes[0]", "same non-zero length"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape(json::array(), json::array()))), ConfigError,
                       config_error(kOrigin, at, {"same non-zero length"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape({1}, {0.0}))), ConfigError,
                       config_error(kOrigin, at, {"shapes[0]", "time > 0"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape({0}, {1e-6}))), ConfigError,
                       config_error(kOrigin, at, {"shapes[0]", "m, n, k >= 1"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape({1.5}, {1e-6}))), ConfigError,
                       config_error(kOrigin, at, {"m[0] must be an integer"}));
  CHECK_THROWS_MATCHES(with_table(table_of(shape({1}, {1e-6}, "int4"))), ConfigError,
                       config_error(kOrigin, at, {"\"dtype\" must be one of"}));
  json no_n = shape({1}, {1e-6});
  no_n.erase("n");
  CHECK_THROWS_MATCHES(with_table(table_of(no_n)), ConfigError, config_error(kOrigin, at, {"\"n\" must be an integer >= 1"}));
  CHECK_THROWS_MATCHES(with_table({{"value", {{"shapes", json::array()}, {"extra", 1}}}, {"source", "test"}}), ConfigError,
                       config_error(kOrigin, at, {"unknown key \"extra\""}));
  CHECK_THROWS_MATCHES(with_table({{"value", json::array()}, {"source", "test"}}), ConfigError,
                       config_error(kOrigin, at, {"expected {\"value\": {\"shapes\""}));
}

TEST_CASE("a roofline's transition is optional: absent is 0 (the max), between 0 and 1 is an error") {
  // h200-sxm has no "transition" anywhere: every kernel class reads 0, recorded as a default.
  const ess::Hardware h = ess::load_hardware_preset("h200-sxm");
  CHECK(h.kernels.gemm.transition == 0.0);
  CHECK(h.kernels.memory_bound.transition == 0.0);
  CHECK(ess::load_scenario_text(R"({"model": "deepseek-v3.2-exp", "hardware": {"preset": "h200-sxm", "kernels": {"gemm": {"transition": 2.5}}},
        "workload": {"batch_per_gpu": 1, "context_length": 4096, "decode_steps": 1}})",
                                "t.json")
            .hardware.kernels.gemm.transition == 2.5);
  CHECK_THROWS_WITH(ess::load_scenario_text(R"({"model": "deepseek-v3.2-exp", "hardware": {"preset": "h200-sxm", "kernels": {"gemm": {"transition": 0.5}}},
        "workload": {"batch_per_gpu": 1, "context_length": 4096, "decode_steps": 1}})",
                                              "t.json"),
                    Catch::Contains("/hardware/kernels/gemm/transition"));
}
