#include "sim/config/presets.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/config/json_text.h"
#include "sim/config/profile.h"

namespace ess {

namespace {

// The bands of the built-in profile `name`, its donors' first (a donor is another built-in profile,
// named in its calibration.transferred); memoised, cycles cut after 8 levels.
const CalibrationBands* built_in_bands(const std::string& name, std::map<std::string, CalibrationBands>& memo, int depth) {
  if (const auto it = memo.find(name); it != memo.end()) return &it->second;
  if (depth > 8) return nullptr;
  for (const auto& e : detail::embedded_presets()) {
    if (std::string(e.kind) != "profiles" || name != e.name) continue;
    const DonorBands donors = [&](const std::string& d) { return built_in_bands(d, memo, depth + 1); };
    CalibrationBands b = parse_profile(e.text, "built-in preset calibration/profiles/" + name + ".json", donors).calibration.bands;
    return &memo.emplace(name, b).first->second;
  }
  return nullptr;
}

std::vector<Preset> load_all() {
  std::vector<Preset> out;
  std::map<std::string, CalibrationBands> memo;
  const DonorBands donors = [&](const std::string& d) { return built_in_bands(d, memo, 1); };
  for (const auto& e : detail::embedded_presets()) {
    const std::string folder = e.kind;
    const PresetKind kind = folder == "models"    ? PresetKind::model
                            : folder == "engines" ? PresetKind::engine
                                                  : PresetKind::hardware;
    // Shipped hardware profiles (calibration/profiles/) are presets too: their "hardware" section.
    const bool profile = folder == "profiles";
    const std::string path = (profile ? "calibration/profiles/" : "scenarios/" + folder + "/") + e.name + ".json";
    const std::string origin = "built-in preset " + path;
    Preset p{kind, e.name, path, {}, {}, {}};
    if (profile) {
      ProfileDocument d = parse_profile(e.text, origin, donors);
      p.document = std::move(d.hardware);
      p.calibration = std::move(d.calibration);
    } else {
      p.document = parse_json_text(e.text, origin);
    }
    if (const auto d = p.document.find("description"); d != p.document.end() && d->is_string()) {
      p.description = d->get<std::string>();
    }
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const Preset& a, const Preset& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  return out;
}

// Parsed once, never modified afterwards (a constant table, not mutable state).
const std::vector<Preset>& all_presets() {
  static const std::vector<Preset> table = load_all();
  return table;
}

}  // namespace

std::string_view to_string(PresetKind k) {
  switch (k) {
    case PresetKind::model: return "model";
    case PresetKind::hardware: return "hardware";
    case PresetKind::engine: return "engine";
  }
  return "hardware";
}

std::vector<const Preset*> presets(PresetKind kind) {
  std::vector<const Preset*> out;
  for (const auto& p : all_presets()) {
    if (p.kind == kind) out.push_back(&p);
  }
  return out;
}

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> out;
  for (const auto* p : presets(kind)) out.push_back(p->name);
  return out;
}

const Preset* find_preset(PresetKind kind, std::string_view name) {
  for (const auto& p : all_presets()) {
    if (p.kind == kind && p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace ess
