#include "sim/config/profile.h"

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"

#include <cmath>
#include <cstdio>

#include "sim/config/presets.h"

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

CalibrationBands calibration_bands(const nlohmann::json& doc, const DonorBands& donor) {
  CalibrationBands bands{};
  const auto c = doc.find("calibration");
  if (c == doc.end() || !c->is_object()) return bands;
  constexpr double kRobust = 1.4826;  // sigma / median |error| of a normal distribution
  if (const auto m = c->find("models"); m != c->end() && m->is_array()) {
    for (const auto& model : *m) {
      if (!model.is_object()) continue;
      const auto cv = model.find("cross_validated");
      const auto fields = model.find("fields");
      if (cv == model.end() || !cv->is_object() || !cv->contains("median_abs") || !(*cv)["median_abs"].is_number() ||
          fields == model.end() || !fields->is_array()) {
        continue;
      }
      const double median = (*cv)["median_abs"].get<double>();
      const std::string name = model.value("model", std::string("?"));
      char text[160];
      std::snprintf(text, sizeof text, "%s fitted on this GPU: k-fold CV median |error| %.1f%% (%d points)", name.c_str(),
                    median * 100.0, (*cv).value("points", 0));
      for (const auto& f : *fields) {
        if (!f.is_string()) continue;
        const ParamSet set = param_set_of_field(f.get<std::string>());
        if (set == ParamSet::none) continue;
        auto& b = bands[static_cast<std::size_t>(set)];
        if (!b || b->sigma < kRobust * median) b = ParamBand{kRobust * median, text};
      }
    }
  }
  CalibrationBands fitted = bands;
  if (const auto t = c->find("transferred"); t != c->end() && t->is_array()) {
    for (const auto& d : *t) {
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string() || !d.contains("fields") || !d["fields"].is_array()) {
        continue;
      }
      const std::string name = d["name"].get<std::string>();
      const CalibrationBands* from = donor ? donor(name) : nullptr;
      for (const auto& f : d["fields"]) {
        if (!f.is_string()) continue;
        const auto set = static_cast<std::size_t>(param_set_of_field(f.get<std::string>()));
        if (set == 0 || fitted[set] || bands[set] || from == nullptr || !(*from)[set]) continue;  // first donor wins
        const ParamBand& db = *(*from)[set];
        char text[96];
        std::snprintf(text, sizeof text, " + %.1f%% for the transfer (leave-one-GPU-out)", kTransferSigma * 100.0);
        bands[set] = ParamBand{std::sqrt(db.sigma * db.sigma + kTransferSigma * kTransferSigma),
                               "transferred from " + name + " (" + db.source + ")" + text};
      }
    }
  }
  return bands;
}

ProfileDocument parse_profile(std::string_view text, const std::string& origin, const DonorBands& donor) {
  ProfileDocument p;
  p.hardware = profile_hardware(text, origin);
  const nlohmann::json doc = parse_json_text(text, origin);
  p.calibration.summary = calibration_summary(doc);
  p.calibration.bands = calibration_bands(doc, donor);
  return p;
}

ProfileDocument read_profile(const std::string& path) {
  const DonorBands built_in = [](const std::string& name) -> const CalibrationBands* {
    const Preset* p = find_preset(PresetKind::hardware, name);
    return p == nullptr || p->calibration.summary.empty() ? nullptr : &p->calibration.bands;
  };
  return parse_profile(read_text_file(path), "profile " + path, built_in);
}

}  // namespace ess
