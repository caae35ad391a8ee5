// The bundled deployment scenarios (scenarios/deployments/): each loads, names its engine in the file
// (not the default) and describes where its layout comes from.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/json_text.h"
#include "sim/config/scenario.h"

TEST_CASE("deployment scenarios: every file loads and names its engine", "[config][engine]") {
  const std::filesystem::path dir = std::filesystem::path(ESS_SOURCE_DIR) / "scenarios/deployments";
  std::set<std::string> engines;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string path = entry.path().string();
    INFO(path);
    const nlohmann::json doc = ess::parse_json_text(ess::read_text_file(path), path);
    REQUIRE(doc.contains("engine"));
    CHECK(doc.at("description").get<std::string>().size() > 40);
    const ess::Scenario s = ess::load_scenario(path);
    CHECK(s.engine.name == doc.at("engine").get<std::string>());
    engines.insert(s.engine.name);
  }
  CHECK(files >= 5);
  // The engines users ask about most each have one.
  for (const char* e : {"deepseek", "sglang", "vllm", "trtllm"}) CHECK(engines.count(e) == 1);
}
