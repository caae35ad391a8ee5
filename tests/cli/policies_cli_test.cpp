// `ess-sim policies` and the registries behind it: every registered name is listed, is what the
// scenario loader accepts, and is documented in sim/offload/README.md.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/measurement_formats.h"
#include "models/mla_kernels.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/engine_config.h"
#include "sim/config/scenario.h"
#include "sim/config/serving_config.h"
#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"
#include "tests/cli/cli_run.h"

namespace {

const std::string kOffloadScenario = std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-ess-32k.json";

template <typename Factory>
std::vector<std::string> names_of(std::span<const ess::Registered<Factory>> registry) {
  return ess::registered_names(registry);
}

// The scenario loaded with one override, or the ConfigError's message.
std::string load_error(const std::string& override_text) {
  try {
    (void)ess::load_scenario(kOffloadScenario, {ess::parse_override(override_text)});
  } catch (const ess::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names `policies --json` lists for `kind`, each with a summary.
std::vector<std::string> listed_names(const nlohmann::json& doc, const char* kind) {
  std::vector<std::string> names;
  for (const auto& p : doc.at(kind)) {
    CHECK_FALSE(p.at("summary").get<std::string>().empty());
    names.push_back(p.at("name").get<std::string>());
  }
  return names;
}

}  // namespace

TEST_CASE("policies lists every registered eviction policy and access model with its summary") {
  const auto r = ess::test::run_cli({"policies"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("eviction (cache.eviction; default lru):") &&
                        Catch::Contains("access (cache.access.model; default synthetic):"));
  for (const auto& p : ess::eviction_policies()) CHECK_THAT(r.out, Catch::Contains("  " + std::string(p.name) + " "));
  for (const auto& p : ess::access_models()) CHECK_THAT(r.out, Catch::Contains(std::string(p.summary)));
}

TEST_CASE("policies --json gives each kind's names and summaries in registry order") {
  const auto r = ess::test::run_cli({"policies", "--json"});
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  for (const char* kind : {"eviction", "access", "overlap", "prefetch"}) CHECK(doc.contains(kind));
  const auto list = [&doc](const char* kind) { return listed_names(doc, kind); };
  CHECK(list("eviction") == names_of(ess::eviction_policies()));
  CHECK(list("access") == names_of(ess::access_models()));
  CHECK(doc.at("eviction").at(0).at("summary") == std::string(ess::eviction_policies()[0].summary));
}

TEST_CASE("the scenario loader accepts exactly the registered eviction policies") {
  for (const auto& name : names_of(ess::eviction_policies())) {
    INFO(name);
    CHECK(ess::load_scenario(kOffloadScenario, {ess::parse_override("cache.eviction=" + name)}).cache.eviction == name);
  }
  // Anything else is refused, listing exactly the registered names, with a "did you mean".
  const std::string error = load_error("cache.eviction=lur");
  CHECK_THAT(error, Catch::Contains("/cache/eviction") &&
                        Catch::Contains("expected one of " + ess::quoted_list(names_of(ess::eviction_policies()))) &&
                        Catch::Contains("did you mean \"lru\""));
}

TEST_CASE("a policy's declared parameters are read, checked and listed from the declaration alone") {
  // Every declared eviction parameter: listed by `policies` beside cache.eviction, read from cache.<name>
  // at its default, a value inside its range taken, one outside refused naming the field and range.
  const auto listed = ess::test::run_cli({"policies", "--json"});
  REQUIRE(listed.code == 0);
  const auto doc = nlohmann::json::parse(listed.out);
  const auto declared = ess::declared_params(ess::eviction_policies());
  REQUIRE_FALSE(declared.empty());
  for (const ess::PolicyParam* p : declared) {
    const std::string key = std::string(p->name);
    INFO(key);
    bool found = false;
    for (const auto& policy : doc.at("eviction")) {
      for (const auto& q : policy.at("params")) {
        found = found || (q.at("name") == "cache." + key && q.at("range") == p->range() && q.at("default") == p->default_value);
      }
    }
    CHECK(found);
    CHECK(ess::load_scenario(kOffloadScenario).cache.eviction_params.of(*p) == p->default_value);
    const double inside = p->high_open ? (p->low + p->high) / 2 : p->high;
    CHECK(ess::load_scenario(kOffloadScenario, {ess::parse_override("cache." + key + "=" + std::to_string(inside))})
              .cache.eviction_params.of(*p) == Approx(inside));
    const double outside = p->high + 1.0;
    CHECK_THAT(load_error("cache." + key + "=" + std::to_string(outside)),
               Catch::Contains("/cache/" + key) && Catch::Contains(p->range().substr(1, p->range().size() - 2)));
  }
}

TEST_CASE("the scenario loader accepts exactly the registered access models, a file where one is read") {
  CHECK(ess::load_scenario(kOffloadScenario).cache.access.model == "synthetic");
  for (const auto& p : ess::access_models()) {
    INFO(p.name);
    const std::string error = load_error("cache.access.model=" + std::string(p.name));
    if (p.make.reads_file) {
      CHECK_THAT(error, Catch::Contains("/cache/access/file"));  // required by a model that reads one
    } else {
      CHECK(error.empty());
    }
  }
  CHECK_THAT(load_error("cache.access.model=replays"),
             Catch::Contains("expected one of " + ess::quoted_list(names_of(ess::access_models()))));
}

TEST_CASE("sim/offload/README.md lists every registered policy and predictor with its summary") {
  // The docs' tables are the registries: a row "| `name` | summary |" per registered line.
  const std::string readme = read_text(std::string(ESS_SOURCE_DIR) + "/sim/offload/README.md");
  REQUIRE_FALSE(readme.empty());
  for (const auto& p : ess::eviction_policies()) {
    CHECK_THAT(readme, Catch::Contains("| `" + std::string(p.name) + "` | " + std::string(p.summary) + " |"));
  }
  for (const auto& p : ess::access_models()) {
    CHECK_THAT(readme, Catch::Contains("| `" + std::string(p.name) + "` | " + std::string(p.summary) + " |"));
  }
  for (const auto& p : ess::overlap_policies()) {
    CHECK_THAT(readme, Catch::Contains("| `" + std::string(p.name) + "` | " + std::string(p.summary) + " |"));
  }
  for (const auto& p : ess::prefetch_predictors()) {
    CHECK_THAT(readme, Catch::Contains("| `" + std::string(p.name) + "` | " + std::string(p.summary) + " |"));
  }
  // The prefetch table has a column for the link between the name and the summary.
  for (const auto& p : ess::prefetch_policies()) CHECK_THAT(readme, Catch::Contains("| `" + std::string(p.name) + "` | "));
}

TEST_CASE("each kind's default is a registered policy, and what a scenario naming none resolves to") {
  CHECK(ess::find_registered(ess::eviction_policies(), ess::kDefaultEviction) != nullptr);
  CHECK(ess::find_registered(ess::access_models(), ess::kDefaultAccessModel) != nullptr);
  CHECK(ess::find_registered(ess::overlap_policies(), ess::kDefaultOverlap) != nullptr);
  CHECK(ess::find_registered(ess::prefetch_policies(), ess::kDefaultPrefetchPolicy) != nullptr);
  CHECK(ess::find_registered(ess::prefetch_predictors(), ess::kDefaultPredictor) != nullptr);
  CHECK_FALSE(ess::registered(ess::prefetch_policies(), "prefetch", ess::kDefaultPrefetchPolicy).make()->prefetches());
  // dsv32-ess-32k without the policies it names.
  auto doc = nlohmann::json::parse(read_text(kOffloadScenario));
  doc["cache"].erase("eviction");
  doc["cache"].erase("overlap");
  const auto s = ess::load_scenario_text(doc.dump(), kOffloadScenario, {}, std::string(ESS_SOURCE_DIR) + "/scenarios");
  CHECK(s.cache.eviction == ess::kDefaultEviction);
  CHECK(s.cache.access.model == ess::kDefaultAccessModel);
  CHECK(s.cache.overlap == ess::kDefaultOverlap);
  CHECK(s.cache.prefetch.policy == ess::kDefaultPrefetchPolicy);
  const auto prefetching = ess::load_scenario(kOffloadScenario, {ess::parse_override("cache.prefetch.policy=layer-ahead")});
  CHECK(prefetching.cache.prefetch.predictor == ess::kDefaultPredictor);
}

TEST_CASE("policies lists the serving and engine choices a scenario names, as the loader accepts them") {
  const auto r = ess::test::run_cli({"policies", "--json"});
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto list = [&doc](const char* kind) { return listed_names(doc, kind); };
  CHECK(list("arrivals") == ess::names_of(ess::kArrivalProcesses));
  CHECK(list("trace-format") == ess::names_of(ess::kTraceFormats));
  CHECK(list("prefill") == ess::names_of(ess::kPrefillModes));
  CHECK(list("mla-kernel") == ess::mla_kernel_names());
  std::vector<std::string> rules;
  for (const auto& rule : ess::cuda_graph_rules()) rules.emplace_back(rule.name);
  CHECK(list("cuda-graph-sizes") == rules);
  CHECK(list("initial-cap") == ess::names_of(ess::kInitialCaps));
  std::vector<std::string> formats;
  for (const auto* f : ess::measurement::csv_formats()) formats.emplace_back(f->name);
  for (const auto* f : ess::measurement::json_formats()) formats.emplace_back(f->name);
  CHECK(list("calibration-format") == formats);
  // The loader's choices are those names: a misspelt process is refused with the listed one suggested.
  const std::string serving = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-ess-32k.json";
  const auto bad = ess::test::run_cli({"check", serving, "--set", "serving.arrivals.process=poison"});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("did you mean \"poisson\""));
}
