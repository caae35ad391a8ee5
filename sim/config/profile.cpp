#include "sim/config/profile.h"

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"

#include <cstdio>

namespace ess {

bool names_a_file(std::string_view hardware) {
  return hardware.find('/') != std::string_view::npos ||
         (hardware.size() > 5 && hardware.substr(hardware.size() - 5) == ".json");
}

nlohmann::json profile_hardware(std::string_view text, const std::string& origin) {
  nlohmann::json doc = parse_json_text(text, origin);
  if (!doc.is_object()) throw ConfigError(origin, "", "a hardware profile is a JSON object, got " + describe_json(doc));
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || schema->get<std::string>() != kProfileSchema) {
    throw ConfigError(origin, "/schema",
                      "not a hardware profile (expected \"schema\": \"" + std::string(kProfileSchema) +
                          "\", as `ess-sim calibrate` writes; a hardware preset is named without a path, e.g. "
                          "\"h200-sxm\")");
  }
  const auto hw = doc.find("hardware");
  if (hw == doc.end() || !hw->is_object()) {
    throw ConfigError(origin, "/hardware", "a hardware profile needs a \"hardware\" object");
  }
  return *hw;
}

nlohmann::json read_profile_hardware(const std::string& path) {
  return profile_hardware(read_text_file(path), "profile " + path);
}

std::string calibration_summary(const nlohmann::json& doc) {
  std::string out = "calibrated";
  const auto c = doc.find("calibration");
  if (c == doc.end() || !c->is_object()) return out;
  if (const auto base = c->find("base"); base != c->end() && base->is_string()) {
    out += " (base " + base->get<std::string>() + ")";
  }
  std::string models;
  if (const auto m = c->find("models"); m != c->end() && m->is_array()) {
    for (const auto& model : *m) {
      if (!model.is_object() || !model.contains("model") || !model["model"].is_string()) continue;
      const auto cv = model.find("cross_validated");
      if (cv == model.end() || !cv->is_object() || !cv->contains("median_abs") || !(*cv)["median_abs"].is_number()) continue;
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.1f%%", (*cv)["median_abs"].get<double>() * 100.0);
      models += (models.empty() ? "" : ", ") + model["model"].get<std::string>() + " " + pct;
    }
  }
  std::string donors;
  int donor_count = 0;
  if (const auto t = c->find("transferred"); t != c->end() && t->is_array()) {
    for (const auto& donor : *t) {
      if (!donor.is_object() || !donor.contains("name") || !donor["name"].is_string()) continue;
      const std::size_t fields = donor.contains("fields") && donor["fields"].is_array() ? donor["fields"].size() : 0;
      donors += (donors.empty() ? "" : ", ") + donor["name"].get<std::string>() + " (" + std::to_string(fields) + " fields)";
      ++donor_count;
    }
  }
  if (!models.empty()) out += ": k-fold CV median |error| " + models;
  if (!donors.empty()) out += "; transferred from " + donors + (donor_count == 1 ? ", fitted on that GPU" : ", fitted on those GPUs");
  return out;
}

ProfileDocument parse_profile(std::string_view text, const std::string& origin) {
  ProfileDocument p;
  p.hardware = profile_hardware(text, origin);
  p.calibration = calibration_summary(parse_json_text(text, origin));
  return p;
}

ProfileDocument read_profile(const std::string& path) { return parse_profile(read_text_file(path), "profile " + path); }

}  // namespace ess
