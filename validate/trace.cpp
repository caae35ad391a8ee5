#include "validate/trace.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/base/op_names.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

// The kernel categories and "transfer" are the runner's trace categories (sim/base/op_names.h).
constexpr std::array<std::string_view, kValidationCategories> kNames = {
    catname::gemm, catname::norm, catname::indexer, catname::attention, catname::elementwise,
    catname::runner_transfer, "exposed_wait"};

std::size_t at(ValidationCategory c) { return static_cast<std::size_t>(c); }

std::string read_file(const std::string& path) {
  std::string text;
  if (const ReadProblem problem = read_whole_file(path, text); problem != ReadProblem::none) {
    throw TraceError(path, "", describe(problem));
  }
  return text;
}

// The document in `text`: parse_json_text's checks (syntax, duplicate keys, depth, number range)
// in linear time, its ConfigError reported as a TraceError with the same position or pointer.
nlohmann::json parse_json(std::string_view text, const std::string& origin) {
  try {
    return parse_json_text(text, origin);
  } catch (const ConfigError& e) {
    throw TraceError(origin, e.pointer(), e.message());
  }
}

// Times in traces are microseconds. Slack allowed when checking that an event lies inside its step:
// the writers print 17 significant digits, so only the last-bit rounding of ts + dur remains.
double time_slack_us(double t) { return 1e-9 * std::max(1.0, std::abs(t)); }

std::string event_pointer(std::size_t i) { return "/traceEvents/" + std::to_string(i); }

double number(const nlohmann::json& e, const char* key, const std::string& path, const std::string& where) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number()) {
    throw TraceError(path, where + "/" + key,
                     std::string("\"") + key + "\" must be a number, found " +
                         (it == e.end() ? std::string("nothing") : describe_json(*it)));
  }
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw TraceError(path, where + "/" + key, std::string("\"") + key + "\" must be finite");
  return v;
}

// A duration in microseconds: finite and >= 0 (> 0 when `positive`); its end ts + dur finite too.
double duration(const nlohmann::json& e, double ts, bool positive, const std::string& path, const std::string& where) {
  const double dur = number(e, "dur", path, where);
  if (positive ? !(dur > 0.0) : dur < 0.0) {
    throw TraceError(path, where + "/dur",
                     std::string("a duration must be ") + (positive ? "> 0" : ">= 0") + " us, found " +
                         describe_json(e["dur"]));
  }
  if (!std::isfinite(ts + dur)) throw TraceError(path, where, "\"ts\" + \"dur\" is beyond the range of a double");
  return dur;
}

// The string at e[key]; `fallback` when absent. TraceError when it is of another type.
std::string text(const nlohmann::json& e, const char* key, const std::string& path, const std::string& where,
                 const std::string& fallback = "") {
  const auto it = e.find(key);
  if (it == e.end()) return fallback;
  if (!it->is_string()) {
    throw TraceError(path, where + "/" + key, std::string("\"") + key + "\" must be a string, found " + describe_json(*it));
  }
  return it->get<std::string>();
}

// Whether the event is a complete event ("ph": "X", the only phase with a duration); TraceError
// when it is not an object or its "ph" is not a string.
bool is_complete_event(const nlohmann::json& e, const std::string& path, const std::string& where) {
  if (!e.is_object()) throw TraceError(path, where, "an event must be an object, found " + describe_json(e));
  return text(e, "ph", path, where) == "X";
}

// An integer argument args[key] in [lo, hi); nullopt when absent (and not `required`).
std::optional<std::int64_t> integer_arg(const nlohmann::json& e, const char* key, std::int64_t lo, std::int64_t hi,
                                        bool required, const std::string& path, const std::string& where) {
  const auto args = e.find("args");
  const std::string pointer = where + "/args/" + key;
  if (args == e.end() || !args->is_object() || !args->contains(key)) {
    if (!required) return std::nullopt;
    throw TraceError(path, pointer, "every ess-runner event needs an integer " + std::string(key) + " in [" +
                                        std::to_string(lo) + ", " + std::to_string(hi) + ")");
  }
  const nlohmann::json& v = (*args)[key];
  // nlohmann keeps integers above INT64_MAX unsigned: compare those without converting them.
  const bool in_range = v.is_number_unsigned()
                            ? v.get<std::uint64_t>() < static_cast<std::uint64_t>(hi) &&
                                  (lo <= 0 || v.get<std::uint64_t>() >= static_cast<std::uint64_t>(lo))
                            : v.is_number_integer() && v.get<std::int64_t>() >= lo && v.get<std::int64_t>() < hi;
  if (!in_range) {
    throw TraceError(path, pointer, "expected an integer " + std::string(key) + " in [" + std::to_string(lo) + ", " +
                                        std::to_string(hi) + "), found " + describe_json(v));
  }
  return v.get<std::int64_t>();
}

// ess-runner: every "X" event has a category, and args.step (and args.layer).
void parse_runner(const nlohmann::json& events, MeasuredTrace& t) {
  struct Span {
    double ts = 0.0, end = 0.0;
    std::size_t event = 0;  // index in traceEvents
  };
  std::vector<std::optional<Span>> step_spans;
  std::vector<std::pair<std::size_t, Span>> op_spans;  // step, span
  std::vector<std::int64_t> max_layer;                 // per step; -1: only step-level ops
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    const std::string where = event_pointer(i);
    if (!is_complete_event(e, t.path, where)) continue;
    const std::string cat = text(e, "cat", t.path, where);
    const std::string name = text(e, "name", t.path, where);
    // The runner's clock starts at its first step: nothing precedes it.
    const double ts = number(e, "ts", t.path, where);
    if (ts < 0.0) throw TraceError(t.path, where + "/ts", "\"ts\" must be >= 0 (the runner's clock starts at step 0)");
    const double dur_us = duration(e, ts, cat == catname::runner_step, t.path, where);
    const double dur = dur_us * 1e-6;
    const auto step = static_cast<std::size_t>(
        *integer_arg(e, "step", 0, static_cast<std::int64_t>(kMaxTraceSteps), true, t.path, where));
    // Layer -1 marks the ops outside the layers (embedding, final norm, LM head, sampling).
    const auto layer = integer_arg(e, "layer", -1, kMaxTraceLayer, false, t.path, where);
    if (step >= t.steps.size()) {
      t.steps.resize(step + 1);
      t.ops.resize(step + 1);
      step_spans.resize(step + 1);
      max_layer.resize(step + 1, -1);
    }
    StepProfile& s = t.steps[step];
    s.events_are_ops = true;
    if (layer) max_layer[step] = std::max(max_layer[step], *layer);
    if (cat == catname::runner_step) {
      if (step_spans[step]) {
        throw TraceError(t.path, where,
                         "step " + std::to_string(step) + " has two \"step\" events (the other is " +
                             event_pointer(step_spans[step]->event) + ")");
      }
      step_spans[step] = Span{ts, ts + dur_us, i};
      s.step_time = dur;
      ++t.events_used;
      continue;
    }
    op_spans.emplace_back(step, Span{ts, ts + dur_us, i});
    if (cat != catname::runner_wait) t.ops[step][name] += dur;
    if (cat == catname::runner_wait) {
      // Waits for fetches are the exposed transfer time; the end-of-step drain of the write-backs
      // ("wait writeback") is only part of the step time, as in the simulation.
      if (name != opname::wait_writeback) s.seconds[at(ValidationCategory::exposed_wait)] += dur;
    } else if (cat == catname::runner_writeback) {
      // Part of the step time; the simulator reports write-backs only through it.
    } else if (const auto c = parse_validation_category(cat); c && *c != ValidationCategory::exposed_wait) {
      s.seconds[at(*c)] += dur;
      ++s.events[at(*c)];
    } else {
      throw TraceError(t.path, where + "/cat",
                       "unknown category \"" + cat +
                           "\" (expected gemm, norm, indexer, attention, elementwise, transfer, writeback, wait, step)");
    }
    ++t.events_used;
  }
  for (std::size_t s = 0; s < step_spans.size(); ++s) {
    if (!step_spans[s]) throw TraceError(t.path, "", "step " + std::to_string(s) + " has events but no \"step\" event");
    t.steps[s].layers = static_cast<std::size_t>(max_layer[s] + 1);
    // Steps run one after the other (the runner waits for each before starting the next).
    if (s > 0 && step_spans[s]->ts < step_spans[s - 1]->end - time_slack_us(step_spans[s - 1]->end)) {
      throw TraceError(t.path, event_pointer(step_spans[s]->event),
                       "step " + std::to_string(s) + " starts at " + std::to_string(step_spans[s]->ts) +
                           " us, before step " + std::to_string(s - 1) + " ends (" +
                           std::to_string(step_spans[s - 1]->end) + " us): steps must not overlap");
    }
  }
  // The runner's step span is its ops' extent, so an op outside it is a corrupt trace.
  for (const auto& [step, op] : op_spans) {
    const Span& span = *step_spans[step];
    if (op.ts < span.ts - time_slack_us(span.ts) || op.end > span.end + time_slack_us(span.end)) {
      throw TraceError(t.path, event_pointer(op.event),
                       "the event [" + std::to_string(op.ts) + ", " + std::to_string(op.end) + "] us lies outside its step " +
                           std::to_string(step) + " [" + std::to_string(span.ts) + ", " + std::to_string(span.end) +
                           "] us (" + event_pointer(span.event) + ")");
    }
  }
}

// The N of "ProfilerStep#N", or nullopt when the rest is not a decimal number.
std::optional<std::uint64_t> profiler_step_number(std::string_view name) {
  const std::string_view digits = name.substr(std::string_view("ProfilerStep#").size());
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  std::uint64_t n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

// Kineto: steps from ProfilerStep#N spans (on the GPU timeline when the trace has them), kernels
// and memcpys assigned to the step whose span contains their start.
void parse_kineto(const nlohmann::json& events, MeasuredTrace& t, const CategoryMap& map) {
  struct Span {
    double ts, end;
    std::size_t event;
    std::uint64_t number;
  };
  std::vector<Span> gpu_steps;
  std::vector<Span> cpu_steps;
  struct Kernel {
    double ts, end;
    std::size_t event;
  };
  std::vector<Kernel> kernels;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    const std::string where = event_pointer(i);
    if (!is_complete_event(e, t.path, where)) continue;
    const std::string cat = text(e, "cat", t.path, where);
    const auto name_it = e.find("name");
    if (name_it != e.end() && !name_it->is_string()) {
      throw TraceError(t.path, where + "/name", "\"name\" must be a string, found " + describe_json(*name_it));
    }
    const std::string_view name = name_it == e.end() ? std::string_view() : name_it->get_ref<const std::string&>();
    if (name.rfind("ProfilerStep#", 0) == 0) {
      const auto n = profiler_step_number(name);
      if (!n) throw TraceError(t.path, where + "/name", "expected \"ProfilerStep#N\" with N a step number");
      const double ts = number(e, "ts", t.path, where);
      const double dur = duration(e, ts, true, t.path, where);
      (cat == "gpu_user_annotation" ? gpu_steps : cpu_steps).push_back({ts, ts + dur, i, *n});
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      if (name.size() > kMaxKernelNameBytes) {
        throw TraceError(t.path, where + "/name",
                         "a kernel name of " + std::to_string(name.size()) + " bytes (at most " +
                             std::to_string(kMaxKernelNameBytes) + " accepted)");
      }
      const double ts = number(e, "ts", t.path, where);
      kernels.push_back({ts, ts + duration(e, ts, false, t.path, where), i});
    }
  }
  std::vector<Span>& steps = gpu_steps.empty() ? cpu_steps : gpu_steps;
  if (steps.empty()) {
    throw TraceError(t.path, "", "a Kineto trace needs ProfilerStep#N annotations (run the profiler with a schedule and "
                                 "call prof.step() once per decode step)");
  }
  if (steps.size() > kMaxTraceSteps) {
    throw TraceError(t.path, "", std::to_string(steps.size()) + " profiler steps (at most " +
                                     std::to_string(kMaxTraceSteps) + " accepted)");
  }
  std::sort(steps.begin(), steps.end(), [](const Span& a, const Span& b) { return a.ts < b.ts || (a.ts == b.ts && a.event < b.event); });
  for (std::size_t s = 1; s < steps.size(); ++s) {
    // prof.step() ends one step where the next begins; an overlap means two runs merged or a
    // corrupt file, and would count kernels twice.
    if (steps[s].ts < steps[s - 1].end - time_slack_us(steps[s - 1].end)) {
      throw TraceError(t.path, event_pointer(steps[s].event),
                       "ProfilerStep#" + std::to_string(steps[s].number) + " starts before ProfilerStep#" +
                           std::to_string(steps[s - 1].number) + " (" + event_pointer(steps[s - 1].event) +
                           ") ends: profiler steps must not overlap");
    }
    if (steps[s].number <= steps[s - 1].number) {
      throw TraceError(t.path, event_pointer(steps[s].event),
                       "ProfilerStep#" + std::to_string(steps[s].number) + " comes after ProfilerStep#" +
                           std::to_string(steps[s - 1].number) + " (" + event_pointer(steps[s - 1].event) +
                           "): step numbers must increase with time");
    }
  }
  t.steps.assign(steps.size(), StepProfile{});
  std::vector<std::vector<std::pair<double, double>>> busy(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s) t.steps[s].step_time = (steps[s].end - steps[s].ts) * 1e-6;
  // Traces repeat a few hundred kernel names millions of times: match each name once.
  std::unordered_map<std::string_view, std::optional<std::string>> category_cache;
  for (const Kernel& k : kernels) {
    const auto it = std::upper_bound(steps.begin(), steps.end(), k.ts, [](double x, const Span& s) { return x < s.ts; });
    if (it == steps.begin() || k.ts >= (it - 1)->end) {
      ++t.events_outside_steps;
      continue;
    }
    const auto s = static_cast<std::size_t>(it - 1 - steps.begin());
    const nlohmann::json& e = events[k.event];
    const auto name_it = e.find("name");
    const std::string_view name = name_it == e.end() ? std::string_view() : name_it->get_ref<const std::string&>();
    auto cached = category_cache.find(name);
    if (cached == category_cache.end()) cached = category_cache.emplace(name, map.category_of(name)).first;
    const std::optional<std::string>& category = cached->second;
    const double dur = (k.end - k.ts) * 1e-6;
    if (!category) {
      t.uncategorised[std::string(name)] += dur;
    } else if (*category != "ignore") {
      const ValidationCategory c = *parse_validation_category(*category);
      t.steps[s].seconds[at(c)] += dur;
      ++t.steps[s].events[at(c)];
    }
    busy[s].emplace_back(std::max(k.ts, steps[s].ts), std::min(k.end, steps[s].end));
    ++t.events_used;
  }
  if (t.events_used == 0) {
    throw TraceError(t.path, "", "no GPU kernel or memcpy starts inside a ProfilerStep#N span (" +
                                     std::to_string(kernels.size()) + " outside them): nothing to compare");
  }
  // Exposed wait: the part of the step the GPU ran nothing (one stream or many).
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto& v = busy[s];
    std::sort(v.begin(), v.end());
    double covered = 0.0;
    double cur_start = 0.0;
    double cur_end = -1.0;
    bool open = false;
    for (const auto& [a, b] : v) {
      if (b <= a) continue;
      if (!open || a > cur_end) {
        if (open) covered += cur_end - cur_start;
        cur_start = a;
        cur_end = b;
        open = true;
      } else {
        cur_end = std::max(cur_end, b);
      }
    }
    if (open) covered += cur_end - cur_start;
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
    : InputError(path + (where.empty() ? "" : ": " + where) + ": " + message) {}

CategoryMap CategoryMap::parse(const nlohmann::json& doc, const std::string& origin) {
  const auto schema = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object() || schema == doc.end() || *schema != "ess-sim/kernel-categories/v1") {
    throw TraceError(origin, "/schema", "not a kernel-category mapping (expected \"schema\": \"ess-sim/kernel-categories/v1\")");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key != "schema" && key != "description" && key != "rules") {
      throw TraceError(origin, pointer_append("", key), "unknown key (expected schema, description, rules)");
    }
  }
  if (const auto d = doc.find("description"); d != doc.end() && !d->is_string()) {
    throw TraceError(origin, "/description", "expected a string, found " + describe_json(*d));
  }
  const auto rules = doc.find("rules");
  if (rules == doc.end() || !rules->is_array()) throw TraceError(origin, "/rules", "expected an array of rules");
  CategoryMap map;
  map.rules_.reserve(rules->size());
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const auto& r = (*rules)[i];
    const std::string where = "/rules/" + std::to_string(i);
    if (!r.is_object() || !r.contains("pattern") || !r["pattern"].is_string() || !r.contains("category") ||
        !r["category"].is_string()) {
      throw TraceError(origin, where, "a rule is {\"pattern\": \"gemm|cutlass\", \"category\": \"gemm\"}, found " +
                                          describe_json(r));
    }
    for (const auto& [key, value] : r.items()) {
      if (key != "pattern" && key != "category") {
        throw TraceError(origin, pointer_append(where, key), "unknown key in a rule (expected pattern, category)");
      }
    }
    const std::string category = r["category"].get<std::string>();
    if (category != "ignore" && !parse_validation_category(category)) {
      throw TraceError(origin, where + "/category",
                       "unknown category \"" + category +
                           "\" (expected gemm, norm, indexer, attention, elementwise, transfer, exposed_wait or ignore)");
    }
    const std::string& pattern = r["pattern"].get_ref<const std::string&>();
    try {
      map.rules_.push_back({pattern, NamePattern(pattern), category});
    } catch (const PatternError& e) {
      throw TraceError(origin, where + "/pattern",
                       std::string("unsupported pattern ") + e.what() +
                           " (patterns are a subset of regular expressions, see validate/pattern.h)");
    }
  }
  return map;
}

CategoryMap CategoryMap::parse_text(std::string_view text, const std::string& origin) {
  return parse(parse_json(text, origin), origin);
}

CategoryMap CategoryMap::read(const std::string& path) { return parse_text(read_file(path), path); }

CategoryMap CategoryMap::builtin() {
  return parse_text(kDefaultKinetoCategories, "built-in validate/kineto-categories.json");
}

std::optional<std::string> CategoryMap::category_of(std::string_view kernel_name) const {
  for (const Rule& r : rules_) {
    if (r.matcher.search(kernel_name)) return r.category;
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
  if (other != doc.end() && other->is_object() && other->contains("format") &&
      text(*other, "format", path, "/otherData") == "ess-runner/v1") {
    t.format = "ess-runner";
    t.metadata = *other;
    if (const auto sha = other->find("scenario_sha256"); sha != other->end() && !sha->is_string()) {
      throw TraceError(path, "/otherData/scenario_sha256", "expected a string, found " + describe_json(*sha));
    }
    parse_runner(events, t);
  } else {
    const bool kineto = std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
      if (!e.is_object()) return false;
      const auto cat = e.find("cat");
      return cat != e.end() && cat->is_string() && cat->get_ref<const std::string&>() == "kernel";
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

MeasuredTrace parse_trace_text(std::string_view text, const std::string& path, const CategoryMap* kineto_map) {
  return parse_trace(parse_json(text, path), path, kineto_map);
}

MeasuredTrace read_trace(const std::string& path, const CategoryMap* kineto_map) {
  return parse_trace_text(read_file(path), path, kineto_map);
}

}  // namespace ess
