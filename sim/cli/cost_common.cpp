#include "sim/cli/cost_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/presets.h"
#include "sim/config/quantity.h"
#include "sim/config/reader.h"
#include "sim/config/scenario.h"

namespace ess {

ModelConfig load_model_preset(const std::string& name) {
  const Preset* preset = find_preset(PresetKind::model, name);
  if (preset == nullptr) {
    const auto names = preset_names(PresetKind::model);
    cost_cli::bad_option("--model " + name,
               "unknown model preset \"" + name + "\"" + did_you_mean(name, names) + "; presets: " + quoted_list(names));
  }
  const Origins origins(preset->origin());
  ObjectReader r(preset->document, "", origins);
  return read_model(r);  // reads every key, finish() included
}

ModelConfig load_moe_model_preset(const std::string& name) {
  ModelConfig m = load_model_preset(name);
  if (!m.moe) cost_cli::bad_option("--model " + name, m.name + " has no experts (dense MLP)");
  return m;
}

namespace cost_cli {

namespace {

std::string number(double v) { return shortest_number(v); }

}  // namespace

[[noreturn]] void bad_option(const std::string& what, const std::string& message) { throw ConfigError(what, "", message); }

Bytes parse_bytes_argument(const std::string& text, const std::string& option) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const double v = std::strtod(text.c_str(), nullptr);  // no exception on overflow: inf, refused below
    if (!std::isfinite(v)) throw ConfigError(option + " " + text, "", "is too large for a number of bytes");
    return Bytes(v);
  }
  const auto parsed = parse_quantity(text, Dimension::bytes);
  if (!parsed.value) throw ConfigError(option + " " + text, "", parsed.error + " (or a plain number of bytes)");
  if (!std::isfinite(*parsed.value)) throw ConfigError(option + " " + text, "", "must be a finite size");
  if (*parsed.value < 0) throw ConfigError(option + " " + text, "", "must be >= 0");
  return Bytes(*parsed.value);
}

DType dtype_of(const std::string& name) { return *parse_dtype(name); }

CLI::Option* add_count(CLI::App* cmd, const std::string& name, std::int64_t& target, const std::string& help) {
  return cmd->add_option(name, target, help)->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
}

void add_count(CLI::App* cmd, const std::string& name, Given<std::int64_t>& target, const std::string& help) {
  target.option = cmd->add_option(name, target.value, help)->check(CLI::Range(std::int64_t{1}, kMaxCount));
}

void add_text(CLI::App* cmd, const std::string& name, Given<std::string>& target, const std::string& help) {
  target.option = cmd->add_option(name, target.value, help);
}

void add_common_hardware(CLI::App* cmd, std::string& hardware, bool& json) {
  cmd->add_option("--hardware", hardware,
                  "Hardware preset (see `ess-sim presets`) or hardware profile file (e.g. calibration/profiles/X.json)")
      ->required();
  cmd->add_flag("--json", json,
                "Print one JSON object: seconds, the parts of the time, FLOP and bytes, and the hardware fields used");
}

std::optional<std::int64_t> if_model(bool has, std::int64_t v) { return has ? std::optional<std::int64_t>(v) : std::nullopt; }

Resolver::Resolver(std::string command, bool has_model) : command_(std::move(command)), has_model_(has_model) {}

std::int64_t Resolver::count(const Given<std::int64_t>& o, std::optional<std::int64_t> from_model) {
  if (o.given()) return o.value;
  if (from_model) return *from_model;
  missing_.push_back(o.name());
  return 0;
}

Bytes Resolver::size(const Given<std::string>& o, std::optional<Bytes> from_model) {
  if (o.given()) {
    const Bytes b = parse_bytes_argument(o.value, o.name());
    if (!(b.value() > 0)) bad_option(o.name() + " " + o.value, "must be > 0 B");
    return b;
  }
  if (from_model) return *from_model;
  missing_.push_back(o.name());
  return Bytes(1.0);
}

void Resolver::finish() const {
  if (missing_.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < missing_.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == missing_.size() ? " and " : ", ") + missing_[i];
  }
  bad_option(command_, "needs " + list +
                           (has_model_ ? " (the model does not give them)" : " (or --model PRESET to take them from a model)"));
}

void refuse_unused(const std::vector<const CLI::Option*>& options, const std::string& why) {
  for (const auto* o : options) {
    if (o->count() > 0) bad_option(o->get_name(), why);
  }
}

std::string human_time(Seconds t) {
  const double s = t.value();
  const char* unit = "s";
  double v = s;
  if (s < 1e-6) {
    unit = "ns";
    v = s * 1e9;
  } else if (s < 1e-3) {
    unit = "us";
    v = s * 1e6;
  } else if (s < 1.0) {
    unit = "ms";
    v = s * 1e3;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

std::string human_count(double v, const char* unit) {
  char buf[64];
  const char* prefix = "";
  double x = v;
  if (v >= 1e12) {
    prefix = "T";
    x = v / 1e12;
  } else if (v >= 1e9) {
    prefix = "G";
    x = v / 1e9;
  } else if (v >= 1e6) {
    prefix = "M";
    x = v / 1e6;
  } else if (v >= 1e3) {
    prefix = "k";
    x = v / 1e3;
  }
  std::snprintf(buf, sizeof buf, "%.4g %s%s", x, prefix, unit);
  return buf;
}

void print_seconds_json(std::ostream& out, Seconds t) { out << nlohmann::json{{"seconds", t.value()}}.dump() << "\n"; }

void print_json(std::ostream& out, const nlohmann::ordered_json& j) { out << j.dump() << "\n"; }

void print_kernel(std::ostream& out, const std::string& what, const std::string& hardware, const KernelCost& c) {
  out << what << " on " << hardware << "\n";
  if (c.measured) {
    out << "  time      " << human_time(c.time) << "  (measured on this GPU: the profile's GEMM table, interpolated in m)\n";
    out << "  roofline  " << human_time(std::max(c.compute, c.memory) + c.overhead) << "  (" << to_string(c.bound)
        << "-bound; used for shapes the table does not cover)\n";
  } else {
    out << "  time      " << human_time(c.time) << "  (" << to_string(c.bound) << "-bound)\n";
  }
  out << "  compute   " << human_time(c.compute) << "  for " << human_count(c.flops.value(), "FLOP") << "\n";
  out << "  memory    " << human_time(c.memory) << "  for " << human_count(c.bytes.value(), "B") << " of HBM traffic\n";
  out << "  overhead  " << human_time(c.overhead) << "\n";
}

void print_transfer(std::ostream& out, const std::string& what, const std::string& hardware, Seconds t, Bytes bytes) {
  out << what << " on " << hardware << "\n";
  out << "  time      " << human_time(t) << "\n";
  if (t.value() > 0) out << "  effective " << human_count(bytes.value() / t.value(), "B/s") << "\n";
}

KernelSource kernel_source(std::optional<DType> peak, const std::string& params, const RooflineParams& p) {
  return {peak, params, p, std::nullopt};
}

void print_uses(std::ostream& out, const Hardware& hw, const KernelSource& k) {
  const char* next = "            ";
  const char* indent = "  uses      ";
  if (k.peak_dtype) {
    const double peak = hw.gpu.peak_compute.at(*k.peak_dtype, hw.gpu.kind).value();
    out << indent << "hardware.gpu.peak_compute." << to_string(*k.peak_dtype) << " "
        << format_quantity(peak, Dimension::flops_per_second) << " x " << k.params << ".compute_efficiency "
        << number(k.p.compute_efficiency) << " (compute_ramp " << human_count(k.p.compute_ramp.value(), "FLOP") << ")\n";
    indent = next;
  }
  out << indent << "hardware.gpu.hbm_bandwidth " << format_quantity(hw.gpu.hbm_bandwidth.value(), Dimension::bytes_per_second)
      << " x " << k.params << ".memory_efficiency " << number(k.p.memory_efficiency) << " (memory_ramp "
      << human_count(k.p.memory_ramp.value(), "B") << ")\n";
  out << next << k.params << ".kernel_overhead " << human_time(k.p.kernel_overhead);
  if (k.p.transition > 0) out << "; roofs combined as a p-norm, " << k.params << ".transition " << number(k.p.transition);
  out << "\n";
  if (k.topk_passes) out << next << "hardware.kernels.topk_passes " << number(*k.topk_passes) << "\n";
}

nlohmann::ordered_json field(const std::string& name, double value) { return {{"field", name}, {"value", value}}; }

nlohmann::ordered_json kernel_json(const std::string& op, const KernelCost& c, const Hardware& hw,
                                   const KernelSource& k, nlohmann::ordered_json shape) {
  nlohmann::ordered_json used = nlohmann::ordered_json::object();
  used["name"] = hw.name;
  if (k.peak_dtype) {
    used["peak_compute"] = field("hardware.gpu.peak_compute." + std::string(to_string(*k.peak_dtype)),
                                 hw.gpu.peak_compute.at(*k.peak_dtype, hw.gpu.kind).value());
  }
  used["hbm_bandwidth"] = field("hardware.gpu.hbm_bandwidth", hw.gpu.hbm_bandwidth.value());
  used["kernel"] = {{"field", k.params},
                    {"compute_efficiency", k.p.compute_efficiency},
                    {"compute_ramp", k.p.compute_ramp.value()},
                    {"memory_efficiency", k.p.memory_efficiency},
                    {"memory_ramp", k.p.memory_ramp.value()},
                    {"kernel_overhead", k.p.kernel_overhead.value()},
                    {"transition", k.p.transition}};
  if (k.topk_passes) used["topk_passes"] = field("hardware.kernels.topk_passes", *k.topk_passes);
  return {{"seconds", c.time.value()},
          {"op", op},
          {"bound", std::string(to_string(c.bound))},
          {"compute_s", c.compute.value()},
          {"memory_s", c.memory.value()},
          {"overhead_s", c.overhead.value()},
          {"flops", c.flops.value()},
          {"bytes", c.bytes.value()},
          {"shape", std::move(shape)},
          {"hardware", std::move(used)}};
}

}  // namespace cost_cli

}  // namespace ess
