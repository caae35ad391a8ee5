#include "validate/trace.h"

#include <algorithm>
#include <cmath>

#include "sim/io/read_file.h"

namespace ess {

namespace {

constexpr std::array<std::string_view, kValidationCategories> kNames = {
    "gemm", "norm", "indexer", "attention", "elementwise", "transfer", "exposed_wait"};

std::size_t at(ValidationCategory c) { return static_cast<std::size_t>(c); }

std::string read_file(const std::string& path) {
  std::string text;
  if (const ReadProblem problem = read_whole_file(path, text); problem != ReadProblem::none) {
    throw TraceError(path, "", describe(problem));
  }
  return text;
}

double number(const nlohmann::json& e, const char* key, const std::string& path, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
    throw TraceError(path, where, std::string("\"") + key + "\" must be a number");
  }
  return it->get<double>();
}

// ess-runner: every "X" event has a category, and args.step (and args.layer).
void parse_runner(const nlohmann::json& events, MeasuredTrace& t) {
  std::vector<bool> has_step;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    const std::string where = "/traceEvents/" + std::to_string(i);
    if (!e.is_object()) throw TraceError(t.path, where, "an event must be an object");
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const double dur = number(e, "dur", t.path, where) * 1e-6;
    if (dur < 0) throw TraceError(t.path, where + "/dur", "a duration must be >= 0");
    const auto args = e.find("args");
    if (args == e.end() || !args->is_object() || !args->contains("step") || !(*args)["step"].is_number_integer() ||
        (*args)["step"].get<std::int64_t>() < 0 || (*args)["step"].get<std::int64_t>() > 1000000) {
      throw TraceError(t.path, where + "/args/step", "every ess-runner event needs an integer step in [0, 1000000]");
    }
    const auto step = static_cast<std::size_t>((*args)["step"].get<std::int64_t>());
    if (step >= t.steps.size()) {
      t.steps.resize(step + 1);
      t.ops.resize(step + 1);
      has_step.resize(step + 1, false);
    }
    if (cat != "step" && cat != "wait") t.ops[step][e.value("name", "")] += dur;
    StepProfile& s = t.steps[step];
    if (cat == "step") {
      if (has_step[step]) throw TraceError(t.path, where, "step " + std::to_string(step) + " has two \"step\" events");
      has_step[step] = true;
      s.step_time = dur;
    } else if (cat == "wait") {
      // Waits for fetches are the exposed transfer time; the end-of-step drain of the write-backs
      // ("wait writeback") is only part of the step time, as in the simulation.
      if (e.value("name", "") != "wait writeback") s.seconds[at(ValidationCategory::exposed_wait)] += dur;
    } else if (cat == "writeback") {
      // Part of the step time; the simulator reports write-backs only through it.
    } else if (const auto c = parse_validation_category(cat); c && *c != ValidationCategory::exposed_wait) {
      s.seconds[at(*c)] += dur;
    } else {
      throw TraceError(t.path, where + "/cat",
                       "unknown category \"" + cat +
                           "\" (expected gemm, norm, indexer, attention, elementwise, transfer, writeback, wait, step)");
    }
    ++t.events_used;
  }
  for (std::size_t s = 0; s < has_step.size(); ++s) {
    if (!has_step[s]) throw TraceError(t.path, "", "step " + std::to_string(s) + " has events but no \"step\" event");
  }
}

// Kineto: steps from ProfilerStep#N spans (on the GPU timeline when the trace has them), kernels
// and memcpys assigned to the step whose span contains their start.
void parse_kineto(const nlohmann::json& events, MeasuredTrace& t, const CategoryMap& map) {
  struct Span {
    double ts, end;
  };
  std::vector<Span> gpu_steps;
  std::vector<Span> cpu_steps;
  struct Kernel {
    double ts, end;
    std::string name;
  };
  std::vector<Kernel> kernels;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string where = "/traceEvents/" + std::to_string(i);
    const std::string cat = e.value("cat", "");
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0) {
      const Span s{number(e, "ts", t.path, where), number(e, "ts", t.path, where) + number(e, "dur", t.path, where)};
      (cat == "gpu_user_annotation" ? gpu_steps : cpu_steps).push_back(s);
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const double ts = number(e, "ts", t.path, where);
      kernels.push_back({ts, ts + number(e, "dur", t.path, where), name});
    }
  }
  std::vector<Span>& steps = gpu_steps.empty() ? cpu_steps : gpu_steps;
  if (steps.empty()) {
    throw TraceError(t.path, "", "a Kineto trace needs ProfilerStep#N annotations (run the profiler with a schedule and "
                                 "call prof.step() once per decode step)");
  }
  std::sort(steps.begin(), steps.end(), [](const Span& a, const Span& b) { return a.ts < b.ts; });
  t.steps.assign(steps.size(), StepProfile{});
  std::vector<std::vector<std::pair<double, double>>> busy(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s) t.steps[s].step_time = (steps[s].end - steps[s].ts) * 1e-6;
  for (const Kernel& k : kernels) {
    const auto it = std::upper_bound(steps.begin(), steps.end(), k.ts, [](double x, const Span& s) { return x < s.ts; });
    if (it == steps.begin() || k.ts >= (it - 1)->end) {
      ++t.events_outside_steps;
      continue;
    }
    const auto s = static_cast<std::size_t>(it - 1 - steps.begin());
    const auto category = map.category_of(k.name);
    const double dur = (k.end - k.ts) * 1e-6;
    if (!category) {
      t.uncategorised[k.name] += dur;
    } else if (*category != "ignore") {
      t.steps[s].seconds[at(*parse_validation_category(*category))] += dur;
    }
    busy[s].emplace_back(std::max(k.ts, steps[s].ts), std::min(k.end, steps[s].end));
    ++t.events_used;
  }
  // Exposed wait: the part of the step the GPU ran nothing (one stream or many).
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto& v = busy[s];
    std::sort(v.begin(), v.end());
    double covered = 0.0;
    double cur_start = 0.0;
    double cur_end = -1.0;
    for (const auto& [a, b] : v) {
      if (b <= a) continue;
      if (a > cur_end) {
        if (cur_end > cur_start) covered += cur_end - cur_start;
        cur_start = a;
        cur_end = b;
      } else {
        cur_end = std::max(cur_end, b);
      }
    }
    if (cur_end > cur_start) covered += cur_end - cur_start;
    t.steps[s].seconds[at(ValidationCategory::exposed_wait)] =
        std::max(0.0, t.steps[s].step_time - covered * 1e-6);
  }
}

}  // namespace

std::string_view to_string(ValidationCategory c) { return kNames[at(c)]; }

std::optional<ValidationCategory> parse_validation_category(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<ValidationCategory>(i);
  }
  return std::nullopt;
}

TraceError::TraceError(const std::string& path, const std::string& where, const std::string& message)
    : std::runtime_error(path + (where.empty() ? "" : ": " + where) + ": " + message) {}

CategoryMap CategoryMap::parse(const nlohmann::json& doc, const std::string& origin) {
  const auto schema = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object() || schema == doc.end() || *schema != "ess-sim/kernel-categories/v1") {
    throw TraceError(origin, "/schema", "not a kernel-category mapping (expected \"schema\": \"ess-sim/kernel-categories/v1\")");
  }
  const auto rules = doc.find("rules");
  if (rules == doc.end() || !rules->is_array()) throw TraceError(origin, "/rules", "expected an array of rules");
  CategoryMap map;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const auto& r = (*rules)[i];
    const std::string where = "/rules/" + std::to_string(i);
    if (!r.is_object() || !r.contains("pattern") || !r["pattern"].is_string() || !r.contains("category") ||
        !r["category"].is_string()) {
      throw TraceError(origin, where, "a rule is {\"pattern\": \"regex\", \"category\": \"gemm\"}");
    }
    const std::string category = r["category"].get<std::string>();
    if (category != "ignore" && !parse_validation_category(category)) {
      throw TraceError(origin, where + "/category",
                       "unknown category \"" + category +
                           "\" (expected gemm, norm, indexer, attention, elementwise, transfer, exposed_wait or ignore)");
    }
    try {
      map.rules_.push_back({r["pattern"].get<std::string>(),
                            std::regex(r["pattern"].get<std::string>(), std::regex::ECMAScript | std::regex::icase),
                            category});
    } catch (const std::regex_error& e) {
      throw TraceError(origin, where + "/pattern", std::string("not a valid regular expression: ") + e.what());
    }
  }
  return map;
}

CategoryMap CategoryMap::read(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw TraceError(path, "byte " + std::to_string(e.byte), "not valid JSON");
  }
  return parse(doc, path);
}

std::optional<std::string> CategoryMap::category_of(const std::string& kernel_name) const {
  for (const Rule& r : rules_) {
    if (std::regex_search(kernel_name, r.regex)) return r.category;
  }
  return std::nullopt;
}

namespace {
MeasuredTrace parse_trace_unchecked(const nlohmann::json& doc, const std::string& path, const CategoryMap* kineto_map) {
  MeasuredTrace t;
  t.path = path;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw TraceError(path, "", "unknown trace format: expected a Chrome trace object with \"traceEvents\" (ess-runner "
                               "or PyTorch profiler output)");
  }
  const nlohmann::json& events = doc["traceEvents"];
  const auto other = doc.find("otherData");
  if (other != doc.end() && other->is_object() && other->value("format", "") == "ess-runner/v1") {
    t.format = "ess-runner";
    t.metadata = *other;
    parse_runner(events, t);
  } else {
    const bool kineto = std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
      return e.is_object() && e.value("cat", "") == "kernel";
    });
    if (!kineto) {
      throw TraceError(path, "", "unknown trace format: neither an ess-runner trace (\"otherData\": {\"format\": "
                                 "\"ess-runner/v1\"}) nor a PyTorch profiler trace (events with \"cat\": \"kernel\")");
    }
    if (kineto_map == nullptr) throw TraceError(path, "", "a PyTorch profiler trace needs a kernel-category mapping");
    t.format = "kineto";
    for (const char* key : {"deviceProperties", "distributedInfo", "schemaVersion"}) {
      if (doc.contains(key)) t.metadata[key] = doc[key];
    }
    parse_kineto(events, t, *kineto_map);
  }
  if (t.steps.empty()) throw TraceError(path, "", "the trace holds no decode step");
  return t;
}
}  // namespace

MeasuredTrace parse_trace(const nlohmann::json& doc, const std::string& path, const CategoryMap* kineto_map) {
  try {
    return parse_trace_unchecked(doc, path, kineto_map);
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type somewhere (e.g. "ph": 5): malformed input, not a bug.
    throw TraceError(path, "", std::string("malformed trace event: ") + e.what());
  }
}

MeasuredTrace read_trace(const std::string& path, const CategoryMap* kineto_map) {
  const std::string text = read_file(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw TraceError(path, "byte " + std::to_string(e.byte), "not JSON, so not a Chrome trace");
  }
  return parse_trace(doc, path, kineto_map);
}

}  // namespace ess
