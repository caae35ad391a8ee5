#include "sim/config/presets.h"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include "sim/base/error.h"
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

// A built-in preset that names a "base" preset of its kind holds only what differs from it:
// resolved here, bases first, so every preset's document is whole. An unknown base or a cycle is a
// defect of the shipped files (InternalError; tests/config's preset tests load every preset).
void resolve_bases(std::vector<Preset>& all) {
  std::map<std::string, const Preset*> by_name;
  const auto key = [](const Preset& p) { return std::string(to_string(p.kind)) + "/" + p.name; };
  for (const auto& p : all) by_name[key(p)] = &p;
  std::map<std::string, nlohmann::json> done;
  std::function<nlohmann::json(const Preset&, int)> resolve = [&](const Preset& p, int depth) -> nlohmann::json {
    if (const auto it = done.find(key(p)); it != done.end()) return it->second;
    const auto b = p.document.find("base");
    if (b == p.document.end()) return p.document;
    if (depth > 8 || !b->is_string()) throw InternalError(p.origin() + ": \"base\" must name another preset, without a cycle");
    const auto base = by_name.find(std::string(to_string(p.kind)) + "/" + b->get<std::string>());
    if (base == by_name.end()) throw InternalError(p.origin() + ": base preset \"" + b->get<std::string>() + "\" does not exist");
    nlohmann::json child = p.document;
    child.erase("base");
    nlohmann::json whole = merged_preset(resolve(*base->second, depth + 1), child);
    done.emplace(key(p), whole);
    return whole;
  };
  std::vector<nlohmann::json> documents;
  for (const auto& p : all) documents.push_back(resolve(p, 0));
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].document.contains("base")) all[i].base = all[i].document["base"].get<std::string>();
    all[i].document = std::move(documents[i]);
  }
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
    Preset p{kind, e.name, path, {}, {}, {}, {}};
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
  resolve_bases(out);
  return out;
}

// Parsed once, never modified afterwards (a constant table, not mutable state).
const std::vector<Preset>& all_presets() {
  static const std::vector<Preset> table = load_all();
  return table;
}

}  // namespace

nlohmann::json merged_preset(nlohmann::json base, const nlohmann::json& child) {
  for (const auto& [key, value] : child.items()) {
    auto it = base.find(key);
    if (it != base.end() && it->is_object() && value.is_object() && !value.contains("value")) {
      *it = merged_preset(*it, value);
    } else {
      base[key] = value;
    }
  }
  return base;
}

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
