// The engine's keys are declared once (sim/config/engine_config.h engine_keys()): the reader, the
// presets, results.json's summary.engine and scenarios/README.md's engine table follow the
// declarations (the sweep columns: tests/cli/sweep_test.cpp).
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "sim/config/engine_config.h"
#include "tests/config/config_test_support.h"
#include "tests/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

// The keys of scenarios/README.md's engine table: the first column's `names`, from the "## engine"
// heading to the end of its first table.
std::set<std::string> documented_engine_keys() {
  const std::string readme = ess::test::read_file(fs::path(ESS_SOURCE_DIR) / "scenarios/README.md");
  const auto begin = readme.find("\n## engine\n");
  REQUIRE(begin != std::string::npos);
  const auto table = readme.find("\n| key |", begin);
  REQUIRE(table != std::string::npos);
  const auto end = readme.find("\n\n", table + 1);
  std::set<std::string> keys;
  std::size_t line = readme.find('\n', table + 1);  // after the header
  line = readme.find('\n', line + 1);               // after the |---| row
  while (line < end) {
    const std::size_t next = readme.find('\n', line + 1);
    const std::string row = readme.substr(line + 1, next - line - 1);
    const std::string first = row.substr(0, row.find('|', 1));
    static const std::regex name("`([a-z_0-9]+)`");
    for (std::sregex_iterator it(first.begin(), first.end(), name), stop; it != stop; ++it) keys.insert((*it)[1]);
    line = next;
  }
  return keys;
}

}  // namespace

TEST_CASE("engine keys: scenarios/README.md's engine table documents every declared key and nothing else", "[config][engine]") {
  std::set<std::string> declared = {"name", "description", "version"};
  for (const ess::EngineKey& k : ess::engine_keys()) declared.insert(std::string(k.name));
  CHECK(documented_engine_keys() == declared);
}

TEST_CASE("engine keys: every preset gives every declared key a value and its source", "[config][engine]") {
  int presets = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(ESS_SOURCE_DIR) / "scenarios/engines")) {
    const auto doc = nlohmann::json::parse(ess::test::read_file(entry.path()));
    INFO(entry.path().filename().string());
    for (const ess::EngineKey& k : ess::engine_keys()) {
      INFO(k.name);
      REQUIRE(doc.contains(std::string(k.name)));
      CHECK(doc.at(std::string(k.name)).contains("source"));
    }
    ++presets;
  }
  CHECK(presets == 7);  // four engines, three of them also in an early-2025 release
}

TEST_CASE("engine keys: summary.engine shows the keys of the run's kind in declaration order", "[config][engine]") {
  const ess::Scenario s = ess::test::load(ess::test::minimal_scenario());
  const auto decode = ess::engine_summary(s.engine, 8);
  const auto prefill = ess::engine_summary(s.engine, std::nullopt);
  std::vector<std::string> want_decode = {"name", "version"};
  std::vector<std::string> want_prefill = {"name", "version"};
  for (const ess::EngineKey& k : ess::engine_keys()) {
    if (k.shown != ess::KeyShown::prefill) want_decode.emplace_back(k.summary);
    if (k.shown != ess::KeyShown::decode) want_prefill.emplace_back(k.summary);
  }
  want_decode.emplace_back("graph_batch");
  std::vector<std::string> got_decode;
  for (const auto& [key, value] : decode.items()) got_decode.push_back(key);
  std::vector<std::string> got_prefill;
  for (const auto& [key, value] : prefill.items()) got_prefill.push_back(key);
  CHECK(got_decode == want_decode);
  CHECK(got_prefill == want_prefill);
  CHECK(decode.at("kernel_gap_s").get<double>() == Approx(s.engine.kernel_gap.value()));
  CHECK(prefill.at("prefill_alltoall_sms").get<int>() == s.engine.prefill_alltoall_sms);
  for (const ess::EngineKey& k : ess::engine_keys()) {
    const auto& shown = k.shown == ess::KeyShown::prefill ? prefill : decode;
    INFO(k.name);
    CHECK(shown.at(std::string(k.summary)).is_number() == k.number);
  }
}
