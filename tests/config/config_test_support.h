// Shared helpers of the configuration tests: a matcher for ConfigError (origin, JSON pointer and the
// key words of the message) and a small valid scenario to vary.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/config/scenario.h"

namespace Catch {
template <>
struct StringMaker<ess::ConfigError> {
  static std::string convert(const ess::ConfigError& e) {
    return "ConfigError{origin: \"" + e.origin() + "\", pointer: \"" + e.pointer() + "\", message: \"" +
           e.message() + "\"}";
  }
};
}  // namespace Catch

namespace ess::test {

// Matches a ConfigError with exactly this origin and pointer whose message contains every word.
class ConfigErrorIs : public Catch::MatcherBase<ConfigError> {
 public:
  ConfigErrorIs(std::string origin, std::string pointer, std::vector<std::string> words)
      : origin_(std::move(origin)), pointer_(std::move(pointer)), words_(std::move(words)) {}

  bool match(const ConfigError& e) const override {
    if (e.origin() != origin_ || e.pointer() != pointer_) return false;
    for (const auto& w : words_) {
      if (e.message().find(w) == std::string::npos) return false;
    }
    // what() is what the CLI prints: it must carry all three parts.
    const std::string what = e.what();
    return what.find(origin_) != std::string::npos && what.find(pointer_) != std::string::npos &&
           what.find(e.message()) != std::string::npos;
  }

  std::string describe() const override {
    std::string d = "is a ConfigError from \"" + origin_ + "\" at \"" + pointer_ + "\" whose message contains";
    for (const auto& w : words_) d += " \"" + w + "\"";
    return d;
  }

 private:
  std::string origin_;
  std::string pointer_;
  std::vector<std::string> words_;
};

inline ConfigErrorIs config_error(std::string origin, std::string pointer, std::vector<std::string> words = {}) {
  return {std::move(origin), std::move(pointer), std::move(words)};
}

// The origin every scenario text of these tests is loaded under.
inline const std::string kOrigin = "test-scenario.json";

// A small valid scenario: DeepSeek-V3.2-Exp on one 8 x H200 node, everything else defaulted.
inline nlohmann::json minimal_scenario() {
  return nlohmann::json::parse(R"({
    "schema": "ess-sim/scenario/v1",
    "name": "minimal",
    "model": "deepseek-v3.2-exp",
    "hardware": "h200-sxm",
    "workload": {"batch_per_gpu": 32, "context_length": 4096}
  })");
}

inline Scenario load(const nlohmann::json& document, const std::vector<Override>& overrides = {}) {
  return load_scenario_text(document.dump(), kOrigin, overrides);
}

inline std::vector<Override> sets(std::initializer_list<const char*> arguments) {
  std::vector<Override> out;
  for (const char* a : arguments) out.push_back(parse_override(a));
  return out;
}

inline std::string bundled_scenario_path() { return std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-baseline-32k.json"; }

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    for (int attempt = 0;; ++attempt) {
      path_ = std::filesystem::temp_directory_path() /
              ("ess-config-test-" + std::to_string(stamp) + "-" + std::to_string(attempt));
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory and returns its path.
  [[nodiscard]] std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ess::test
