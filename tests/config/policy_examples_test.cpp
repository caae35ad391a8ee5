// Every registered policy has a bundled example scenario (scenarios/ or scenarios/policies/) that
// loads, and the scenario loader accepts exactly the registered names, with "did you mean".
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/config/scenario.h"
#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"

namespace {

namespace fs = std::filesystem;

// The bundled scenario files: scenarios/*.json and scenarios/policies/*.json (not presets, sweeps
// or models).
std::vector<fs::path> bundled() {
  std::vector<fs::path> out;
  for (const char* dir : {"scenarios", "scenarios/policies"}) {
    for (const auto& e : fs::directory_iterator(fs::path(ESS_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".json") continue;
      const auto text = ess::read_text_file(e.path().string());
      const auto doc = nlohmann::json::parse(text);
      if (doc.is_object() && doc.contains("schema") && doc["schema"] == "ess-sim/scenario/v1") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <typename Registry>
std::set<std::string> names(const Registry& registry) {
  std::set<std::string> out;
  for (const auto& r : registry) out.emplace(r.name);
  return out;
}

}  // namespace

TEST_CASE("every registered policy is used by a bundled scenario that loads") {
  std::map<std::string, std::set<std::string>> used;  // kind -> names
  for (const auto& path : bundled()) {
    INFO(path.string());
    const auto s = ess::load_scenario(path.string());
    if (s.cache.mode != ess::CacheMode::offload) continue;
    used["eviction"].insert(s.cache.eviction);
    used["overlap"].insert(s.cache.overlap);
    used["access"].insert(s.cache.access.model);
    used["prefetch"].insert(s.cache.prefetch.policy);
    if (!s.cache.prefetch.predictor.empty()) used["predictor"].insert(s.cache.prefetch.predictor);
  }
  const std::map<std::string, std::set<std::string>> registered{
      {"eviction", names(ess::eviction_policies())},   {"overlap", names(ess::overlap_policies())},
      {"access", names(ess::access_models())},         {"prefetch", names(ess::prefetch_policies())},
      {"predictor", names(ess::prefetch_predictors())}};
  for (const auto& [kind, all] : registered) {
    for (const auto& name : all) {
      INFO(kind << " \"" << name << "\" has no example scenario in scenarios/ or scenarios/policies/");
      // The replay model needs a recorded trace: its examples are the validate data (validate/data/).
      if (kind == "access" && name == "replay") continue;
      CHECK(used[kind].count(name) == 1);
    }
  }
}

TEST_CASE("the loader offers the registered policy names when one is misspelt") {
  const auto base = ess::read_text_file(std::string(ESS_SOURCE_DIR) + "/scenarios/policies/prefetch-layer-ahead.json");
  const auto load_with = [&](const std::string& key, const std::string& value) {
    return ess::load_scenario_text(base, "example.json", {ess::parse_override(key + "=" + value)});
  };
  CHECK_THROWS_WITH(load_with("cache.overlap", "dbaa"), Catch::Contains("/cache/overlap") && Catch::Contains("\"dba\""));
  CHECK_THROWS_WITH(load_with("cache.prefetch.policy", "tierd"),
                    Catch::Contains("/cache/prefetch/policy") && Catch::Contains("\"tiered\""));
  CHECK_THROWS_WITH(load_with("cache.prefetch.predictor", "hot_window"),
                    Catch::Contains("/cache/prefetch/predictor") && Catch::Contains("\"hot-window\""));
  for (const auto& r : ess::prefetch_predictors()) {
    if (r.name == "learned") continue;  // needs a model file
    CHECK(load_with("cache.prefetch.predictor", std::string(r.name)).cache.prefetch.predictor == r.name);
  }
  for (const auto& r : ess::overlap_policies()) CHECK(load_with("cache.overlap", std::string(r.name)).cache.overlap == r.name);
}
