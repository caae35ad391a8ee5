#include "sim/config/scenario.h"

#include <cmath>
#include <filesystem>
#include <span>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/hardware_config.h"
#include "sim/config/json_text.h"
#include "sim/config/presets.h"
#include "sim/config/profile.h"
#include "sim/config/reader.h"
#include "sim/config/utf8.h"

namespace ess {

namespace {

bool is_value_wrapper(const nlohmann::json& j) { return j.is_object() && j.contains("value"); }

bool mergeable(const nlohmann::json& j) { return j.is_object() && !is_value_wrapper(j); }

// Records, for every part of `overrides` that will replace or add to `preset`, the origin it has
// now (before the preset claims the section), so merged values keep naming the file or --set they
// came from. Objects the preset lacks are pinned whole; objects both have are walked.
void pin_override_origins(const nlohmann::json& overrides, const nlohmann::json* preset, const std::string& pointer,
                          Origins& origins) {
  if (mergeable(overrides) && preset != nullptr && mergeable(*preset)) {
    for (const auto& [k, v] : overrides.items()) {
      const auto it = preset->find(k);
      pin_override_origins(v, it == preset->end() ? nullptr : &*it, pointer_append(pointer, k), origins);
    }
    return;
  }
  origins.set(pointer, origins.at(pointer));
}

// Overrides win; objects merge key by key; a leaf (plain or {"value", "source"}) replaces.
void deep_merge(nlohmann::json& base, const nlohmann::json& overrides) {
  for (const auto& [k, v] : overrides.items()) {
    auto it = base.find(k);
    if (it != base.end() && mergeable(*it) && mergeable(v)) {
      deep_merge(*it, v);
    } else {
      base[k] = v;
    }
  }
}

// Replaces a hardware section {"profile": path, overrides...} by the profile's hardware merged
// with the overrides. A relative path is resolved against `base_dir` (the scenario file's folder),
// or against the current directory when the path itself came from --set.
HardwareCalibration resolve_profile(nlohmann::json& section, const std::string& pointer, Origins& origins,
                            const std::filesystem::path& base_dir) {
  const std::string profile_pointer = pointer_append(pointer, "profile");
  const nlohmann::json& p = section["profile"];
  if (!p.is_string() || p.get<std::string>().empty()) {
    throw ConfigError(origins.at(profile_pointer), profile_pointer,
                      "expected the path of a hardware profile (a string), got " + describe_json(p));
  }
  if (section.contains("preset")) {
    throw ConfigError(origins.at(pointer), pointer, "give either \"preset\" or \"profile\", not both");
  }
  const std::string& origin_of_path = origins.at(profile_pointer);
  std::filesystem::path path = p.get<std::string>();
  if (path.is_relative() && origin_of_path.rfind("--", 0) != 0) path = base_dir / path;
  const std::string shown = path.lexically_normal().string();
  nlohmann::json hardware;
  HardwareCalibration calibration;
  try {
    ProfileDocument profile = read_profile(shown);
    hardware = std::move(profile.hardware);
    calibration = std::move(profile.calibration);
  } catch (const ConfigError& e) {
    if (e.origin().rfind("profile ", 0) == 0) throw;  // an error inside the profile names the profile
    throw ConfigError(origin_of_path, profile_pointer, e.message() + " (profile path resolved to " + shown + ")");
  }
  nlohmann::json overrides = section;
  overrides.erase("profile");
  pin_override_origins(overrides, &hardware, pointer, origins);
  origins.set(pointer, "profile " + shown);
  deep_merge(hardware, overrides);
  section = std::move(hardware);
  return calibration;
}

// Replaces document[key] (a preset name or {"preset": name, overrides...}) by the merged preset.
// Returns the calibration summary of a hardware profile (empty for presets and inline sections).
HardwareCalibration resolve_preset_section(nlohmann::json& document, const std::string& key, PresetKind kind, Origins& origins,
                            const std::filesystem::path& base_dir) {
  const std::string pointer = pointer_append("", key);
  auto it = document.find(key);
  if (it == document.end()) {
    std::string hint;
    for (const auto& [present, v] : document.items()) {
      if (present != key && closest_match(present, std::span<const std::string>(&key, 1))) {
        hint = " (found \"" + present + "\": did you mean \"" + key + "\"?)";
        break;
      }
    }
    throw ConfigError(origins.at(""), pointer, "missing required section \"" + key + "\"" + hint);
  }
  nlohmann::json overrides = nlohmann::json::object();
  std::string name;
  std::string name_pointer = pointer;
  if (it->is_string()) {
    name = it->get<std::string>();
  } else if (it->is_object()) {
    if (kind == PresetKind::hardware && it->contains("profile")) {
      return resolve_profile(*it, pointer, origins, base_dir);
    }
    const auto p = it->find("preset");
    if (p == it->end()) return {};  // fully inline: read as written
    name_pointer = pointer_append(pointer, "preset");
    if (!p->is_string()) {
      throw ConfigError(origins.at(name_pointer), name_pointer, "expected a " + std::string(to_string(kind)) +
                                                                    " preset name (a string), got " + describe_json(*p));
    }
    name = p->get<std::string>();
    overrides = *it;
    overrides.erase("preset");
  } else {
    throw ConfigError(origins.at(pointer), pointer,
                      "expected a " + std::string(to_string(kind)) + " preset name or an object, got " + describe_json(*it));
  }
  const Preset* preset = find_preset(kind, name);
  if (preset == nullptr) {
    const auto names = preset_names(kind);
    throw ConfigError(origins.at(name_pointer), name_pointer,
                      "unknown " + std::string(to_string(kind)) + " preset \"" + name + "\"" + did_you_mean(name, names) +
                          "; presets: " + quoted_list(names));
  }
  pin_override_origins(overrides, &preset->document, pointer, origins);
  origins.set(pointer, preset->origin());
  nlohmann::json merged = preset->document;
  deep_merge(merged, overrides);
  *it = std::move(merged);
  return preset->calibration;
}

void apply_override(nlohmann::json& document, const Override& o, Origins& origins) {
  const std::string origin = "--set " + o.argument;
  nlohmann::json* node = &document;
  std::string pointer;
  for (std::size_t i = 0; i + 1 < o.path.size(); ++i) {
    const std::string& token = o.path[i];
    pointer = pointer_append(pointer, token);
    auto it = node->find(token);
    if (it == node->end() || it->is_null()) {
      (*node)[token] = nlohmann::json::object();
    } else if (it->is_string() && i == 0 && (token == "model" || token == "hardware" || token == "engine")) {
      // "hardware": "h200-sxm" becomes {"preset": "h200-sxm"} so that fields can be overridden.
      *it = nlohmann::json{{"preset", it->get<std::string>()}};
    } else if (is_value_wrapper(*it)) {
      std::string dotted;
      for (std::size_t j = 0; j <= i; ++j) dotted += (j > 0 ? "." : "") + o.path[j];
      throw ConfigError(origin, pointer, "is a single value (written with its source), not a section: set \"" + dotted +
                                             "=...\" instead");
    } else if (!it->is_object()) {
      throw ConfigError(origin, pointer, "cannot set a field inside " + describe_json(*it) + " (not an object)");
    }
    node = &(*node)[token];
  }
  pointer = pointer_append(pointer, o.path.back());
  (*node)[o.path.back()] = o.value;
  origins.set(pointer, origin);
}

Scenario read_scenario(const nlohmann::json& document, const Origins& origins, const std::string& origin) {
  Scenario s;
  s.origin = origin;
  ObjectReader r(document, "", origins);
  if (r.has("schema")) {
    const auto schema = r.text("schema");
    if (schema != kScenarioSchema) {
      r.fail("schema", "unsupported schema \"" + schema + "\"; this ess-sim reads \"" + std::string(kScenarioSchema) + "\"");
    }
  } else {
    r.record("schema", std::string(kScenarioSchema), "default");
  }
  s.name = r.optional_text("name").value_or("");
  s.description = r.optional_text("description").value_or("");
  s.seed = static_cast<std::uint64_t>(r.integer_or("seed", Range::at_least(0), 1));
  {
    auto m = r.object("model");
    s.model = read_model(m);
  }
  {
    auto h = r.object("hardware");
    s.hardware = read_hardware(h);
  }
  {
    auto p = r.object_or_empty("parallelism");
    s.parallelism = read_parallelism(p, s.model, s.hardware);
  }
  {
    // A prefill scenario's workload holds only the expert load and MTP, all with defaults.
    const bool prefill = r.has("prefill");
    auto w = prefill ? r.object_or_empty("workload") : r.object("workload");
    s.workload = read_workload(w, s.model, prefill);
  }
  {
    auto e = r.object_or_empty("execution");
    s.execution = read_execution(e, s.workload, s.parallelism);
  }
  {
    auto e = r.object("engine");
    s.engine = read_engine(e);
  }
  if (s.parallelism.redundant_experts > 0 && !s.engine.eplb) {
    throw ConfigError(origin, "/parallelism/redundant_experts",
                      std::to_string(s.parallelism.redundant_experts) + " redundant experts need a load balancer to decide "
                      "which experts they copy, but engine " + s.engine.name + " runs with eplb off; set engine.eplb to "
                      "\"on\" (e.g. \"engine\": {\"preset\": \"" + s.engine.name + "\", \"eplb\": \"on\"}) or "
                      "redundant_experts to 0");
  }
  {
    auto c = r.object_or_empty("cache");
    s.cache = read_cache(c, s.model, static_cast<int>(s.model.layers) + s.workload.mtp.depth - 1,
                         std::filesystem::path(origin).parent_path().string());
  }
  {
    auto m = r.object_or_empty("memory");
    s.memory = read_memory(m);
  }
  if (r.has("prefill")) {
    auto v = r.object("prefill");
    s.prefill = read_prefill(v);
    if (r.has("serving")) {
      throw ConfigError(origin, "/prefill",
                        "a scenario simulates prefill steps (\"prefill\") or a serving period (\"serving\"), not both; "
                        "remove one");
    }
    if (s.cache.mode == CacheMode::offload) {
      throw ConfigError(origin, "/cache/mode",
                        "prefill steps compute every prompt token's cache on the GPU; cache.mode \"offload\" (ESS) "
                        "is for decode steps: remove it or the \"prefill\" section");
    }
  } else {
    std::string absent;
    (void)r.take("prefill", absent);
  }
  if (r.has("serving")) {
    auto v = r.object("serving");
    s.serving = read_serving(v, std::filesystem::path(origin).parent_path().string());
    if (s.workload.prefill_chunk) {
      throw ConfigError(origin, "/workload/prefill_chunk",
                        "a serving run chooses each step's prompt chunks itself (serving.prefill.mode \"colocated\"); "
                        "remove workload.prefill_chunk");
    }
  } else {
    std::string absent;
    (void)r.take("serving", absent);  // null reads as absent; nothing is recorded
  }
  r.finish();
  s.resolved = r.resolved();
  return s;
}

}  // namespace

Override parse_override(std::string_view argument) {
  const std::string arg(argument);
  const std::string origin = "--set " + printable(arg);
  if (const auto bad = invalid_utf8_at(arg)) {
    throw ConfigError(origin, "", "byte " + std::to_string(*bad + 1) +
                                      " is not valid UTF-8 (paths and values must be UTF-8 text)");
  }
  const auto eq = arg.find('=');
  if (eq == std::string::npos) throw ConfigError(origin, "", "expected dotted.path=value, e.g. workload.context_length=32768");
  Override o;
  o.argument = arg;
  const std::string path = arg.substr(0, eq);
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string token = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (token.empty()) throw ConfigError(origin, "", "empty field name in \"" + path + "\" (expected dotted.path=value)");
    o.path.push_back(token);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const std::string text = arg.substr(eq + 1);
  if (text.empty()) throw ConfigError(origin, "", "missing value after '=' (write a number, a quantity such as 55GB/s, or a string)");
  // JSON when it parses (then with the loader's checks: nesting depth, duplicate keys, numbers a
  // double holds), else a bare string such as 55GB/s or max.
  if (nlohmann::json::accept(text)) {
    o.value = parse_json_text(text, origin);
  } else {
    o.value = text;
  }
  return o;
}

std::vector<Override> parse_overrides(const std::vector<std::string>& arguments) {
  std::vector<Override> out;
  out.reserve(arguments.size());
  for (const auto& a : arguments) out.push_back(parse_override(a));
  return out;
}

Scenario load_scenario_text(std::string_view text, const std::string& origin, const std::vector<Override>& overrides,
                            const std::filesystem::path& base_dir) {
  nlohmann::json document = parse_json_text(text, origin);
  if (!document.is_object()) throw ConfigError(origin, "", "a scenario is a JSON object, got " + describe_json(document));
  Origins origins(origin);
  for (const auto& o : overrides) apply_override(document, o, origins);
  (void)resolve_preset_section(document, "model", PresetKind::model, origins, base_dir);
  HardwareCalibration calibration = resolve_preset_section(document, "hardware", PresetKind::hardware, origins, base_dir);
  if (!document.contains("engine") || document["engine"].is_null()) {
    // No engine named: DeepSeek's own, recorded as the default (the resolved scenario names it).
    document["engine"] = nlohmann::json{{"preset", std::string(kDefaultEngine)}};
    origins.set("/engine/preset", "default");
  } else if (document["engine"].is_object() && !document["engine"].contains("preset")) {
    // Fields without a preset (`--set engine.kernel_gap=1us`) override the default engine's.
    document["engine"]["preset"] = std::string(kDefaultEngine);
    origins.set("/engine/preset", "default");
  }
  (void)resolve_preset_section(document, "engine", PresetKind::engine, origins, base_dir);
  Scenario s = read_scenario(document, origins, origin);
  s.hardware_calibration = std::move(calibration.summary);
  s.hardware_bands = calibration.bands;
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
  return load_scenario_text(read_text_file(path), path, overrides, std::filesystem::path(path).parent_path());
}

Hardware load_hardware_preset(const std::string& name) {
  // A path names a profile file, relative to the current directory.
  nlohmann::json document = {{"hardware", names_a_file(name) ? nlohmann::json{{"profile", name}} : nlohmann::json(name)}};
  Origins origins("--hardware " + name);
  (void)resolve_preset_section(document, "hardware", PresetKind::hardware, origins, {});
  ObjectReader r(document, "", origins);
  auto h = r.object("hardware");
  Hardware hw = read_hardware(h);
  r.finish();
  return hw;
}

namespace {
void format_into(const nlohmann::ordered_json& j, int indent, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  if (j.is_object() && !j.empty() && !(j.size() == 2 && j.contains("value") && j.contains("source"))) {
    out += "{\n";
    std::size_t i = 0;
    for (const auto& [k, v] : j.items()) {
      out += pad + "  " + nlohmann::ordered_json(k).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": ";
      format_into(v, indent + 1, out);
      out += (++i < j.size()) ? ",\n" : "\n";
    }
    out += pad + "}";
    return;
  }
  if (j.is_object()) {  // a {"value", "source"} pair (or {}): one line
    out += "{";
    std::size_t i = 0;
    for (const auto& [k, v] : j.items()) {
      out += nlohmann::ordered_json(k).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": " + v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (++i < j.size()) out += ", ";
    }
    out += "}";
    return;
  }
  out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

std::string format_resolved(const nlohmann::ordered_json& resolved) {
  std::string out;
  format_into(resolved, 0, out);
  out += "\n";
  return out;
}

void require_decode_scenario(const Scenario& s, std::string_view command) {
  if (!s.prefill) return;
  throw ConfigError(s.origin, "/prefill",
                    std::string(command) + " works on decode steps, and this scenario simulates prefill steps; run it with "
                    "`ess-sim run`, price prefill with `ess-sim cost prefill`, or remove the \"prefill\" section");
}

}  // namespace ess
