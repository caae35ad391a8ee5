// A scenario: what to simulate (model, hardware, parallelism, workload, cache placement, seed),
// loaded from JSON, merged with presets and --set overrides, and fully validated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hardware.h"
#include "sim/config/cache_config.h"
#include "sim/config/deployment_config.h"
#include "sim/config/engine_config.h"
#include "sim/config/model_config.h"
#include "sim/config/prefill_config.h"
#include "sim/config/profile.h"
#include "sim/config/serving_config.h"
#include "sim/config/workload_config.h"

namespace ess {

inline constexpr std::string_view kScenarioSchema = "ess-sim/scenario/v1";

struct Scenario {
  std::string origin;  // the file it came from
  std::string name;
  std::string description;
  std::uint64_t seed = 0;
  ModelConfig model;
  Hardware hardware;
  Parallelism parallelism;
  Workload workload;
  ExecutionConfig execution;
  EngineConfig engine;  // the serving engine's kernels and schedule (scenarios/engines/)
  CacheConfig cache;
  MemoryConfig memory;
  // Present: `ess-sim run` simulates a serving period of arrivals (sim/serving/) instead of a batch.
  std::optional<ServingConfig> serving;
  // Present: `ess-sim run` simulates prefill steps (sim/graph/prefill_step.h) instead of decode
  // steps; the workload's batch, context and decode steps are then not used (and not allowed).
  std::optional<PrefillConfig> prefill;
  // How the hardware was calibrated: calibration_summary() of the profile it came from (a file or
  // a shipped profile), empty for a datasheet preset or an inline description (uncalibrated).
  std::string hardware_calibration;
  // The error band of each calibrated parameter set on this hardware (sim/config/profile.h); none
  // for datasheet presets. Overrides of a profile's fields keep the profile's bands.
  CalibrationBands hardware_bands{};
  // Every value the simulator uses with its source; itself a valid scenario.
  nlohmann::ordered_json resolved;
};

// A command-line override "dotted.path=value". The value is JSON when it parses as JSON
// (numbers, true, null, quoted strings, objects), else taken as a string ("55GB/s", "max").
struct Override {
  std::string argument;  // as typed, for error messages
  std::vector<std::string> path;
  nlohmann::json value;
};

// Parses "a.b.c=value"; ConfigError naming the argument when malformed.
[[nodiscard]] Override parse_override(std::string_view argument);
// Each --set argument parsed, in order.
[[nodiscard]] std::vector<Override> parse_overrides(const std::vector<std::string>& arguments);

// Loads, merges and validates. Throws ConfigError on any bad input.
[[nodiscard]] Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
// The same from text; `origin` names it in errors.
// `base_dir` is the folder relative hardware-profile paths are resolved against (empty: the
// current directory).
[[nodiscard]] Scenario load_scenario_text(std::string_view text, const std::string& origin,
                                          const std::vector<Override>& overrides = {},
                                          const std::filesystem::path& base_dir = {});

// Reads a hardware section alone the way a scenario does: a preset name ("h200-sxm") or the path
// of a hardware profile file (anything with a '/' or ending in .json; relative to the current
// directory). Used by `ess-sim cost --hardware` and `ess-sim calibrate --base`.
[[nodiscard]] Hardware load_hardware_preset(const std::string& name);

// Commands that work on decode steps (sweep, search, compare, validate) refuse a prefill scenario
// with a ConfigError naming `command` and what to use instead.
void require_decode_scenario(const Scenario& s, std::string_view command);

// Prints a resolved document as indented JSON with each {"value", "source"} pair on one line.
[[nodiscard]] std::string format_resolved(const nlohmann::ordered_json& resolved);

}  // namespace ess
