// Built-in presets: the JSON files under scenarios/models/, scenarios/hardware/, scenarios/engines/
// and calibration/profiles/ (hardware profiles, their "hardware" section), embedded in
// the binary at build time so that ess-sim works from any directory. A preset file may name a
// "base" preset of its kind and hold only what differs (gem5-style): its document is the base's
// with its own fields over them, each leaf ({"value", "source"}) replaced whole.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/profile.h"

namespace ess {

enum class PresetKind { model, hardware, engine };

// Every kind, in the order `ess-sim presets` lists them.
inline constexpr PresetKind kPresetKinds[] = {PresetKind::model, PresetKind::hardware, PresetKind::engine};

[[nodiscard]] std::string_view to_string(PresetKind k);  // "model", "hardware", "engine"

struct Preset {
  PresetKind kind;
  std::string name;         // file stem, e.g. "h200-sxm"
  std::string path;         // relative to the repository, e.g. "scenarios/hardware/h200-sxm.json"
  nlohmann::json document;  // parsed once; whole (a "base" preset's fields under its own)
  std::string base;         // the preset this one's file overrides ("base"), or ""
  std::string description;  // the document's "description"
  HardwareCalibration calibration;  // shipped profiles: their summary and bands; empty for datasheet presets

  // How errors name this preset: "built-in preset scenarios/hardware/h200-sxm.json".
  [[nodiscard]] std::string origin() const { return "built-in preset " + path; }
};

// `child` over `base`: objects merge key by key, except a leaf ({"value": ..., "source": ...}),
// which the child replaces whole, so that a value never keeps its base's source.
[[nodiscard]] nlohmann::json merged_preset(nlohmann::json base, const nlohmann::json& child);

// All presets of a kind, sorted by name.
[[nodiscard]] std::vector<const Preset*> presets(PresetKind kind);
[[nodiscard]] std::vector<std::string> preset_names(PresetKind kind);
// The preset, or nullptr.
[[nodiscard]] const Preset* find_preset(PresetKind kind, std::string_view name);

namespace detail {
struct EmbeddedPreset {
  const char* kind;  // "models", "hardware", "engines" (scenarios/ folders) or "profiles" (calibration/profiles/)
  const char* name;
  const char* text;
};
// Generated from scenarios/ by sim/config/embed_presets.cmake.
const std::vector<EmbeddedPreset>& embedded_presets();
}  // namespace detail

}  // namespace ess
