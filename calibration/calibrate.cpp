#include "calibration/calibrate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "calibration/fitted_model.h"
#include "models/check.h"
#include "sim/base/error.h"
#include "sim/config/hardware_config.h"
#include "sim/config/presets.h"
#include "sim/config/profile.h"
#include "sim/config/quantity.h"
#include "sim/config/reader.h"
#include "sim/config/scenario.h"
#include "sim/config/config_error.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"

namespace ess {

namespace {

using calibration::Field;
using calibration::ModelSpec;

// Fitted values are written with 4 significant digits: more would claim a precision the
// measurements (run-to-run spread of 1-5%) do not have. The errors reported are those of the
// rounded values, since those are what every later simulation uses.
double round_significant(double v, int digits) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  // Through decimal text, so that the result is the double nearest the 4-digit decimal (and
  // prints as exactly those digits), whatever the magnitude.
  char text[64];
  std::snprintf(text, sizeof text, "%.*e", digits - 1, v);
  return std::strtod(text, nullptr);
}

std::vector<std::size_t> all_points(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::string pct(double fraction) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << fraction * 100.0 << "%";
  return s.str();
}

// The base hardware's JSON document (every field with its source) and its origin.
nlohmann::json base_document(const std::string& base) {
  if (names_a_file(base)) return read_profile_hardware(base);
  const Preset* p = find_preset(PresetKind::hardware, base);
  if (p == nullptr) throw InternalError("calibrate: preset " + base + " vanished after it was loaded");
  return p->document;
}

Hardware read_back(const nlohmann::json& hardware_doc) {
  const nlohmann::json document = {{"hardware", hardware_doc}};
  Origins origins("the profile being written");
  ObjectReader r(document, "", origins);
  auto h = r.object("hardware");
  Hardware hw = read_hardware(h);
  r.finish();
  return hw;
}

// One donor's contribution, for the profile's provenance.
struct Transferred {
  std::string path;
  std::string name;
  std::string sha256;
  std::vector<std::string> fields;  // dotted paths taken from it
  std::vector<std::string> skipped;  // why fields it fitted were not taken
};

constexpr std::string_view kFittedSource = "fitted by ess-sim calibrate";

const nlohmann::json* find_path(const nlohmann::json& doc, const std::vector<std::string>& path) {
  const nlohmann::json* node = &doc;
  for (const auto& key : path) {
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
  }
  return node;
}

std::string dotted(const std::vector<std::string>& path) {
  std::string s;
  for (const auto& p : path) s += (s.empty() ? "" : ".") + p;
  return s;
}

// gpu.sustained_clock_fraction of a hardware document, kDefaultSustainedClock when absent (as the
// scenario reader reads it).
double sustained_clock(const nlohmann::json& hardware) {
  const nlohmann::json* v = find_path(hardware, {"gpu", "sustained_clock_fraction", "value"});
  return v != nullptr && v->is_number() ? v->get<double>() : kDefaultSustainedClock;
}

// Copies the transferable fitted fields of each donor into `doc` (the first donor to have fitted a
// field wins).
std::vector<Transferred> apply_transfers(nlohmann::json& doc, const std::vector<std::string>& donors) {
  std::vector<Transferred> out;
  std::set<std::string> taken;
  const nlohmann::json* target_generation = find_path(doc, {"pcie", "generation", "value"});
  const double target_clock = sustained_clock(doc);
  for (const std::string& path : donors) {
    std::string text;
    const ReadProblem problem = read_whole_file(path, text);
    if (problem != ReadProblem::none) throw ConfigError(path, "", "cannot read the profile to transfer from: " + describe(problem));
    const nlohmann::json donor = profile_hardware(text, path);
    Transferred t;
    t.path = path;
    t.name = donor.contains("name") && donor["name"].is_string() ? donor["name"].get<std::string>() : path;
    t.sha256 = sha256_hex(text);
    const nlohmann::json* donor_generation = find_path(donor, {"pcie", "generation", "value"});
    const double donor_clock = sustained_clock(donor);
    for (const TransferRule& rule : transfer_rules()) {
      const nlohmann::json* v = find_path(donor, rule.path);
      if (v == nullptr || !v->is_object() || !v->contains("source") || !(*v)["source"].is_string()) continue;
      const std::string source = (*v)["source"].get<std::string>();
      if (source.rfind(kFittedSource, 0) != 0) continue;  // only values the donor fitted itself
      const std::string name = dotted(rule.path);
      if (taken.count(name) > 0) continue;
      if (rule.same_pcie_generation &&
          (donor_generation == nullptr || target_generation == nullptr || *donor_generation != *target_generation)) {
        t.skipped.push_back(name + " (PCIe generation differs)");
        continue;
      }
      nlohmann::json* node = &doc;
      for (const auto& key : rule.path) node = &(*node)[key];
      nlohmann::json value = (*v)["value"];
      std::string how = rule.rule;
      if (rule.scales_with_clock && value.is_number() && target_clock != donor_clock) {
        const double scaled = std::min(1.0, value.get<double>() * target_clock / donor_clock);
        how += "; scaled by the sustained clocks, " + check::number(value.get<double>()) + " x " +
               check::number(target_clock) + " / " + check::number(donor_clock) + (scaled >= 1.0 ? " (capped at 1)" : "");
        value = round_significant(scaled, 4);
      }
      *node = {{"value", value}, {"source", "transferred from " + t.name + " (" + path + "): " + how + "; there " + source}};
      taken.insert(name);
      t.fields.push_back(name);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string inputs_summary(const MeasurementSet& m) {
  std::string s;
  if (m.inputs.empty()) return "no measurements";
  for (const auto& in : m.inputs) s += (s.empty() ? "" : ", ") + in.path;
  return s;
}

}  // namespace

const std::vector<TransferRule>& transfer_rules() {
  static const std::vector<TransferRule> rules = [] {
    std::vector<TransferRule> r;
    for (const char* kernel :
         {"gemm", "grouped_gemm", "attention", "sparse_attention", "prefill_attention", "indexer", "memory_bound"}) {
      for (const char* key : {"compute_efficiency", "compute_ramp", "memory_efficiency", "memory_ramp", "kernel_overhead",
                              "transition"}) {
        r.push_back({{"kernels", kernel, key},
                     "the fraction of the roofs, the size ramps and the overhead of the same kernels on the same SM "
                     "architecture (the peaks and HBM bandwidth they multiply are this GPU's)",
                     false, std::string_view(key) == "compute_efficiency"});
      }
    }
    r.push_back({{"kernels", "prefill_attention", "row_keys"},
                 "the keys of work a causal prefill kernel pays per query row on the same SM architecture", false});
    const std::string links = "the fraction of the links the all-to-all kernels reach and their fixed time (the link "
                              "bandwidths they multiply are this GPU's nvlink.bandwidth and network.bandwidth_per_gpu)";
    r.push_back({{"collectives", "alltoall_nvlink_efficiency"}, links, false});
    r.push_back({{"collectives", "alltoall_network_efficiency"}, links, false});
    r.push_back({{"collectives", "alltoall_latency"}, links, false});
    r.push_back({{"collectives", "allreduce_latency"}, "NCCL's fixed time of a small all-reduce (software, not link)", false});
    r.push_back({{"nvlink", "latency"}, "the fixed time of a peer copy (software, not link)", false});
    const std::string pcie = "the same PCIe generation's per-call overheads, latency and UVA-kernel share of the copy "
                             "engine (the copy bandwidths stay this GPU's)";
    for (const char* key : {"latency", "h2d_call_overhead", "d2h_call_overhead", "gather_h2d_efficiency",
                            "gather_d2h_efficiency", "gather_sm_fraction"}) {
      r.push_back({{"pcie", key}, pcie, true});
    }
    return r;
  }();
  return rules;
}

namespace {

// One model fitted into `hw`: cross-validated first (each fold from the hardware as calibrated so
// far: the gather fit needs the copy fit's bandwidths), then fitted to every point, its fields
// rounded to 4 significant digits, and its fit error as written.
ModelReport fit_model(ModelSpec& spec, Hardware& hw, const CalibrateOptions& options) {
  ModelReport report;
  report.model = spec.name;
  report.description = spec.description;
  const std::size_t n = spec.measured.size();
  const int folds = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.folds), n));
  const Hardware start = hw;
  const auto fit_fold = [&spec, &start](std::span<const std::size_t> use) {
    Hardware h = start;
    spec.fit(h, use);
    return h;
  };
  const auto predict = [&spec](const Hardware& h, std::size_t i) { return spec.predict(h, i); };
  if (spec.cross_validate && folds >= 2) {
    const auto cv = cross_validate<Hardware>(spec.measured, folds, options.seed, fit_fold, predict);
    report.cross_validated = cv.cross_validated;
    report.folds = folds;
  }
  std::set<std::size_t> distinct(spec.groups.begin(), spec.groups.end());
  const int group_folds = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.folds), distinct.size()));
  if (spec.cross_validate && !spec.groups.empty() && group_folds >= 2) {
    const auto cv = cross_validate<Hardware>(spec.measured, group_folds, options.seed, fit_fold, predict, spec.groups);
    report.cross_validated_by_group = cv.cross_validated;
    report.group_folds = group_folds;
  }
  spec.fit(hw, all_points(n));
  std::string params;
  for (const Field& f : spec.fields) {
    f.set(hw, round_significant(f.get(hw), 4));
    if (!std::isfinite(f.get(hw))) {
      throw FitError(spec.name + ": the fit gives " + f.dotted() + " = " + shortest_number(f.get(hw)) +
                     ", not a finite number; no profile is written (check the measurements' units)");
    }
    report.fields.push_back("hardware." + f.dotted());
    params += (params.empty() ? "" : ", ") + f.path.back() + " " + f.text(hw);
  }
  if (spec.write) {
    report.fields.push_back("hardware.kernels.gemm_measured");
    params = std::to_string(hw.kernels.gemm_measured->shapes.size()) + " weight shapes, " +
             std::to_string(hw.kernels.gemm_measured->points()) + " points";
  }
  report.parameters = params;
  // The fit error of the model as it will be written (rounded values).
  std::vector<double> predicted(n);
  for (std::size_t i = 0; i < n; ++i) predicted[i] = spec.predict(hw, i);
  report.fit = summarize_errors(predicted, spec.measured);
  return report;
}

// The fitted fields written into the hardware document, each with a source naming its inputs and errors.
void write_fitted_fields(nlohmann::json& doc, const std::vector<ModelSpec>& specs, const std::vector<ModelReport>& reports,
                         const Hardware& hw, const std::string& inputs) {
  for (std::size_t s = 0; s < specs.size(); ++s) {
    const ModelReport& report = reports[s];
    std::string source = "fitted by ess-sim calibrate (" + report.model + ", " + std::to_string(report.fit.points) +
                         " points from " + inputs + "; fit median |error| " + pct(report.fit.median_abs);
    if (report.folds >= 2) {
      source += ", " + std::to_string(report.folds) + "-fold cross-validated median |error| " +
                pct(report.cross_validated.median_abs);
    }
    if (report.group_folds >= 2) {
      source += ", on weight shapes held out " + pct(report.cross_validated_by_group.median_abs);
    }
    source += ")";
    for (const Field& f : specs[s].fields) {
      nlohmann::json* node = &doc;
      for (std::size_t i = 0; i + 1 < f.path.size(); ++i) node = &(*node)[f.path[i]];
      (*node)[f.path.back()] = {{"value", f.dimension ? nlohmann::json(f.text(hw)) : nlohmann::json(f.get(hw))},
                                {"source", source}};
    }
    if (specs[s].write) specs[s].write(hw, doc, source);
  }
}

nlohmann::ordered_json error_json(const ErrorSummary& e) {
  return nlohmann::ordered_json{{"points", e.points},   {"median_abs", e.median_abs}, {"p95_abs", e.p95_abs},
                                {"max_abs", e.max_abs}, {"bias", e.bias}};
}

// The profile's "calibration": the command, base, cross-validation, inputs, transfers (also listed
// in out.transferred), the models with their errors and those not fitted.
nlohmann::ordered_json calibration_json(const MeasurementSet& measurements, const CalibrateOptions& options,
                                        const std::vector<Transferred>& transferred, Calibration& out) {
  nlohmann::ordered_json cal;
  cal["command"] = options.command;
  cal["base"] = options.base;
  cal["cross_validation"] = {{"folds", options.folds}, {"seed", options.seed},
                             {"method", "k-fold: each point predicted by a fit that did not see it"}};
  nlohmann::ordered_json inputs_json = nlohmann::ordered_json::array();
  for (const auto& in : measurements.inputs) {
    inputs_json.push_back({{"path", in.path}, {"format", in.format}, {"sha256", in.sha256}, {"gpu", in.gpu},
                           {"measured", in.date}, {"environment", in.environment}, {"used", in.used},
                           {"skipped", in.skipped}});
  }
  cal["inputs"] = inputs_json;
  std::set<std::string> fitted_fields;
  for (const auto& r : out.models) {
    for (const auto& f : r.fields) fitted_fields.insert(f.substr(std::string("hardware.").size()));
  }
  nlohmann::ordered_json transfers = nlohmann::ordered_json::array();
  for (const auto& t : transferred) {
    std::vector<std::string> kept;
    std::vector<std::string> replaced;
    for (const auto& f : t.fields) (fitted_fields.count(f) > 0 ? replaced : kept).push_back(f);
    transfers.push_back({{"path", t.path}, {"name", t.name}, {"sha256", t.sha256}, {"fields", kept},
                         {"replaced_by_fits", replaced}, {"not_transferred", t.skipped}});
  }
  if (!options.transfer.empty()) cal["transferred"] = transfers;
  for (const auto& t : transfers) {
    out.transferred.push_back(t["name"].get<std::string>() + ": " + std::to_string(t["fields"].size()) + " fields");
  }
  cal["duplicates_merged"] = measurements.duplicates_merged;
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const auto& r : out.models) {
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["measured"] = r.description;
    j["fields"] = r.fields;
    j["parameters"] = r.parameters;
    j["fit"] = error_json(r.fit);
    j["cross_validated"] = r.folds >= 2 ? error_json(r.cross_validated) : nlohmann::ordered_json(nullptr);
    if (r.group_folds >= 2) j["cross_validated_unseen_shapes"] = error_json(r.cross_validated_by_group);
    models.push_back(j);
  }
  cal["models"] = models;
  cal["not_fitted"] = out.not_fitted;
  return cal;
}

}  // namespace

Calibration calibrate(const MeasurementSet& measurements, const CalibrateOptions& options) {
  if (options.folds < 2) throw InputError("--folds must be >= 2 (got " + std::to_string(options.folds) + ")");
  (void)load_hardware_preset(options.base);  // a bad base is a ConfigError here
  nlohmann::json doc = base_document(options.base);
  std::vector<Transferred> transferred = apply_transfers(doc, options.transfer);
  Hardware hw = read_back(doc);
  Calibration out;
  std::vector<ModelSpec> specs = calibration::model_specs(measurements, hw);
  const std::string inputs = inputs_summary(measurements);
  for (ModelSpec& spec : specs) out.models.push_back(fit_model(spec, hw, options));

  // Write the fitted fields, then read the document back as any scenario would.
  doc["name"] = options.name.empty() ? options.base + "-measured" : options.name;
  write_fitted_fields(doc, specs, out.models, hw, inputs);
  for (const calibration::FittedModel& entry : calibration::fitted_models()) {
    if (!entry.fits) continue;
    const std::string model = entry.name;
    bool fitted = false;
    for (const auto& r : out.models) fitted = fitted || r.model == model;
    if (!fitted) out.not_fitted.emplace_back(model);
  }
  std::string description = options.description;
  if (description.empty()) {
    description = measurements.inputs.empty() ? "Transferred from " + (options.transfer.empty() ? std::string("?") : options.transfer.front()) + " (base: " + options.base + ")" : "Calibrated from measurements on " +
                  (measurements.inputs.empty() ? std::string("?") : measurements.inputs.front().gpu) + " (base: " +
                  options.base + ")";
  }
  doc["description"] = description;
  doc["provenance"] = "Written by ess-sim calibrate. Fitted fields name their inputs and errors in their source; "
                      "every other field is the base hardware's (" + options.base + "), with its source. See "
                      "\"calibration\" in the profile file for the inputs and per-model errors.";

  out.hardware = read_back(doc);
  // The read-back profile must predict exactly what the fit reported (formatting round-trips).
  for (std::size_t s = 0; s < specs.size(); ++s) {
    for (std::size_t i = 0; i < specs[s].measured.size(); ++i) {
      if (specs[s].predict(out.hardware, i) != specs[s].predict(hw, i)) {
        throw InternalError("calibrate: the profile as written does not reproduce the fitted " + specs[s].name + " model");
      }
    }
  }

  nlohmann::ordered_json profile;
  profile["schema"] = std::string(kProfileSchema);
  profile["name"] = doc["name"];
  profile["description"] = description;
  profile["calibration"] = calibration_json(measurements, options, transferred, out);
  profile["hardware"] = doc;
  out.profile = std::move(profile);
  return out;
}

std::string shell_command(const std::vector<std::string>& words) {
  const auto plain = [](const std::string& w) {
    if (w.empty()) return false;
    for (const char c : w) {
      // ASCII only: no locale may widen the set sh leaves unquoted.
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && std::string_view("_@%+=:,./-").find(c) == std::string_view::npos) return false;
    }
    return true;
  };
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line += ' ';
    if (plain(w)) {
      line += w;
      continue;
    }
    line += '\'';
    for (const char c : w) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

std::string format_calibration_report(const Calibration& c) {
  std::ostringstream s;
  s << "Calibrated profile " << c.hardware.name << "\n\n";
  s << "Relative error (predicted - measured) / measured; fit = the profile on every point, "
       "CV = k-fold held-out predictions;\n\"unseen shapes\" = whole weight shapes held out (the error on shapes never measured).\n";
  s << std::left << std::setw(18) << "model" << std::right << std::setw(7) << "points" << std::setw(11) << "fit med"
    << std::setw(9) << "fit p95" << std::setw(9) << "fit max" << std::setw(10) << "CV med" << std::setw(9) << "CV p95"
    << std::setw(9) << "CV max" << std::setw(9) << "CV bias" << "\n";
  for (const auto& r : c.models) {
    s << std::left << std::setw(18) << r.model << std::right << std::setw(7) << r.fit.points << std::setw(11)
      << pct(r.fit.median_abs) << std::setw(9) << pct(r.fit.p95_abs) << std::setw(9) << pct(r.fit.max_abs);
    if (r.folds >= 2) {
      s << std::setw(10) << pct(r.cross_validated.median_abs) << std::setw(9) << pct(r.cross_validated.p95_abs)
        << std::setw(9) << pct(r.cross_validated.max_abs) << std::setw(9)
        << ((r.cross_validated.bias >= 0 ? "+" : "") + pct(r.cross_validated.bias));
    } else {
      s << std::setw(10) << "-" << std::setw(9) << "-" << std::setw(9) << "-" << std::setw(9) << "-";
    }
    s << "\n";
    if (r.group_folds >= 2) {
      const auto& g = r.cross_validated_by_group;
      s << std::left << std::setw(18) << ("  unseen shapes") << std::right << std::setw(7) << g.points << std::setw(11)
        << "" << std::setw(9) << "" << std::setw(9) << "" << std::setw(10) << pct(g.median_abs) << std::setw(9)
        << pct(g.p95_abs) << std::setw(9) << pct(g.max_abs) << std::setw(9) << ((g.bias >= 0 ? "+" : "") + pct(g.bias))
        << "\n";
    }
  }
  s << "\nFitted parameters:\n";
  for (const auto& r : c.models) s << "  " << std::left << std::setw(18) << r.model << r.parameters << "\n";
  if (!c.not_fitted.empty()) {
    s << "\nNo measurements, " << (c.transferred.empty() ? "base" : "base or transferred") << " values kept: ";
    for (std::size_t i = 0; i < c.not_fitted.size(); ++i) s << (i ? ", " : "") << c.not_fitted[i];
    s << "\n";
  }
  for (const auto& t : c.transferred) s << "Transferred from " << t << "\n";
  return s.str();
}

}  // namespace ess
