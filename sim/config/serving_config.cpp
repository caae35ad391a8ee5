#include "sim/config/serving_config.h"

#include <algorithm>
#include <filesystem>
#include <string>

#include "sim/config/json_text.h"
#include "sim/config/physical_ranges.h"
#include "sim/config/quantity.h"
#include "sim/config/reader.h"

namespace ess {

namespace {

// Bounds that keep every product (requests x tokens x bytes) exact and the run bounded.
constexpr double kMaxServingSeconds = 1e6;      // 11.6 days of simulated time
constexpr double kMaxTokens = 2147483648.0;     // 2^31, as workload.context_length
constexpr double kMaxRate = 1e6;                // requests per second
constexpr double kMaxTableSteps = 64;
constexpr std::size_t kMaxGridPoints = 64;      // per table axis
constexpr double kDefaultDrainLimit = 600.0;    // seconds after the arrivals end
constexpr double kDefaultClosedLoopLimit = 86400.0;  // seconds: a closed loop's run, by default a simulated day
constexpr double kMaxRequests = 1e7;            // a closed loop's requests

// An integer, or {"min": a, "max": b} for a uniform draw from [a, b].
TokenLengths read_lengths(ObjectReader& r, std::string_view key) {
  TokenLengths t;
  if (r.has_object(key)) {
    auto o = r.object(key);
    t.min = o.integer("min", Range::closed(1, kMaxTokens));
    t.max = o.integer("max", Range::closed(1, kMaxTokens));
    if (t.max < t.min) o.fail("max", "must be at least min (" + std::to_string(t.min) + "), got " + std::to_string(t.max));
    o.finish();
    return t;
  }
  t.min = t.max = r.integer(key, Range::closed(1, kMaxTokens));
  return t;
}

// A duration or rate written inside an array element, with the element's path in errors.
double quantity_in(ObjectReader& r, std::string_view array_key, const std::string& where, const nlohmann::json& e,
                   const char* key, Dimension d) {
  if (!e.contains(key) || !e.at(key).is_string()) {
    r.fail(array_key, where + ": \"" + key + "\" must be " + std::string(describe(d)) + " such as \"" +
                          std::string(example(d)) + "\" (a string)");
  }
  const auto parsed = parse_quantity(e.at(key).get<std::string>(), d);
  if (!parsed.value) r.fail(array_key, where + "." + key + ": " + parsed.error);
  return *parsed.value;
}

// "rate_changes": [{"at": "300s", "rate": "4/s"}, ...], at strictly increasing.
std::vector<RateChange> read_rate_changes(ObjectReader& r, double duration) {
  std::vector<RateChange> out;
  std::string source;
  const nlohmann::json* j = r.take("rate_changes", source);
  if (j == nullptr || j->is_null()) {
    r.record("rate_changes", nlohmann::ordered_json::array(), "default: a constant rate");
    return out;
  }
  if (!j->is_array()) r.fail("rate_changes", "expected an array of {\"at\": \"300s\", \"rate\": \"4/s\"}, got " + describe_json(*j));
  nlohmann::ordered_json resolved = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < j->size(); ++i) {
    const auto& e = (*j)[i];
    const std::string where = "[" + std::to_string(i) + "]";
    if (!e.is_object()) r.fail("rate_changes", where + ": expected {\"at\": \"300s\", \"rate\": \"4/s\"}, got " + describe_json(e));
    for (const auto& [k, v] : e.items()) {
      if (k != "at" && k != "rate") r.fail("rate_changes", where + ": unknown key \"" + k + "\"; known keys here: \"at\", \"rate\"");
    }
    RateChange c;
    c.at = quantity_in(r, "rate_changes", where, e, "at", Dimension::seconds);
    c.rate = quantity_in(r, "rate_changes", where, e, "rate", Dimension::per_second);
    if (!(c.at > 0.0 && c.at < duration)) {
      r.fail("rate_changes", where + ".at must be inside the serving period (0s, " +
                                 format_quantity(duration, Dimension::seconds) + "), got \"" + e.at("at").get<std::string>() + "\"");
    }
    if (!out.empty() && c.at <= out.back().at) r.fail("rate_changes", where + ".at must be later than the change before it");
    if (!(c.rate >= 0.0 && c.rate <= kMaxRate)) r.fail("rate_changes", where + ".rate must be in [0/s, 1000000/s]");
    out.push_back(c);
    resolved.push_back({{"at", format_quantity(c.at, Dimension::seconds)}, {"rate", format_quantity(c.rate, Dimension::per_second)}});
  }
  r.record("rate_changes", resolved, source);
  return out;
}

// An array of integers in [1, max], strictly increasing; absent: empty (automatic).
std::vector<std::int64_t> read_grid(ObjectReader& r, std::string_view key, double max) {
  std::vector<std::int64_t> out;
  std::string source;
  const nlohmann::json* j = r.take(key, source);
  if (j == nullptr || j->is_null()) {
    r.record(key, "auto", "default: chosen from the admission bound and the request lengths");
    return out;
  }
  if (j->is_string() && j->get<std::string>() == "auto") {
    r.record(key, "auto", source);
    return out;
  }
  const std::string expected = "expected \"auto\" or an increasing array of integers in [1, " +
                               std::to_string(static_cast<long long>(max)) + "] (at most " +
                               std::to_string(kMaxGridPoints) + ")";
  if (!j->is_array() || j->empty() || j->size() > kMaxGridPoints) r.fail(key, expected + ", got " + describe_json(*j));
  for (const auto& v : *j) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || static_cast<double>(v.get<std::int64_t>()) > max) {
      r.fail(key, expected + ", got element " + describe_json(v));
    }
    if (!out.empty() && v.get<std::int64_t>() <= out.back()) r.fail(key, expected + ": " + v.dump() + " does not increase");
    out.push_back(v.get<std::int64_t>());
  }
  r.record(key, nlohmann::ordered_json(out), source);
  return out;
}

std::optional<Seconds> optional_seconds(ObjectReader& r, std::string_view key) {
  if (!r.has(key)) {
    std::string source;
    (void)r.take(key, source);
    r.record(key, nullptr, "default: not an objective");
    return std::nullopt;
  }
  return r.seconds(key, Range::left_open(0.0, kMaxServingSeconds));
}

bool boolean_or(ObjectReader& r, std::string_view key, bool fallback) {
  std::string source;
  const nlohmann::json* j = r.take(key, source);
  if (j == nullptr || j->is_null()) {
    r.record(key, fallback, "default");
    return fallback;
  }
  if (!j->is_boolean()) r.fail(key, "expected true or false, got " + describe_json(*j));
  r.record(key, j->get<bool>(), source);
  return j->get<bool>();
}

ControllerConfig read_controller(ObjectReader& r) {
  ControllerConfig c;
  c.enabled = boolean_or(r, "enabled", true);
  if (r.has("p99_target")) {
    c.p99_target = r.seconds("p99_target", Range::left_open(0.0, 3600.0));
  } else {
    r.record("p99_target", format_quantity(0.5, Dimension::seconds), "default: the ESS documents' P99 step-latency target");
  }
  c.window = r.integer_or("window", Range::closed(1, 100000), 64);
  c.headroom = r.number_or("headroom", Range::left_open(0.0, 1.0), 0.9);
  c.decrease = r.number_or("decrease", Range{0.0, 1.0, false, false, true, true}, 0.75);
  c.increase = r.integer_or("increase", Range::closed(1, static_cast<double>(kMaxBatchPerGpu)), 1);
  c.initial_cap = r.choice_or("initial_cap", names_of(kInitialCaps), std::string(kInitialCaps[0].name));
  r.finish();
  return c;
}

// serving.arrivals: the process and its parameters (`duration`: the arrival period, for rate changes).
ArrivalConfig read_arrivals(ObjectReader& a, double duration, const std::string& scenario_dir) {
  ArrivalConfig c;
  c.process = a.choice("process", names_of(kArrivalProcesses));
  if (c.closed_loop()) {
    c.concurrency = a.integer("concurrency", Range::closed(1, kMaxRequests));
    c.requests = a.integer("requests", Range::closed(1, kMaxRequests));
    c.prompt_tokens = read_lengths(a, "prompt_tokens");
    c.output_tokens = read_lengths(a, "output_tokens");
  } else if (c.process == "poisson") {
    c.rate = a.rate("rate", Range::closed(0.0, kMaxRate));
    c.rate_changes = read_rate_changes(a, duration);
    c.prompt_tokens = read_lengths(a, "prompt_tokens");
    c.output_tokens = read_lengths(a, "output_tokens");
  } else {
    c.format = a.choice_or("format", names_of(kTraceFormats), std::string(kTraceFormats[0].name));
    const std::string file = a.text("file");
    const std::filesystem::path p(file);
    c.file = p.is_absolute() || scenario_dir.empty() ? file : (std::filesystem::path(scenario_dir) / p).string();
  }
  a.finish();
  return c;
}

// serving.max_batch_per_gpu: an integer, or "max" (nullopt: what memory allows).
std::optional<std::int64_t> read_batch_limit(ObjectReader& r) {
  std::string source;
  const nlohmann::json* b = r.take("max_batch_per_gpu", source);
  if (b == nullptr || b->is_null() || (b->is_string() && b->get<std::string>() == "max")) {
    r.record("max_batch_per_gpu", "max", b == nullptr || b->is_null() ? "default: what memory allows" : source);
  } else if (b->is_number_integer() && b->get<std::int64_t>() >= 1 && static_cast<double>(b->get<std::int64_t>()) <= static_cast<double>(kMaxBatchPerGpu)) {
    const std::int64_t limit = b->get<std::int64_t>();
    r.record("max_batch_per_gpu", limit, source);
    return limit;
  } else {
    r.fail("max_batch_per_gpu", "expected an integer in [1, 1048576] or \"max\", got " + describe_json(*b));
  }
  return std::nullopt;
}

// serving.cost: each price, or left out of the bill.
CostConfig read_cost(ObjectReader& c) {
  CostConfig cost;
  const auto price = [&c](const char* key) -> std::optional<double> {
    if (!c.has(key)) {
      c.record(key, nullptr, "not given: left out of the bill");
      return std::nullopt;
    }
    return c.number(key, Range::closed(0.0, 1e6));
  };
  cost.gpu_hour_usd = price("gpu_hour_usd");
  cost.host_dram_gb_hour_usd = price("host_dram_gb_hour_usd");
  cost.energy_kwh_usd = price("energy_kwh_usd");
  c.finish();
  return cost;
}

// serving.slo: the objectives given.
SloConfig read_slo(ObjectReader& o) {
  SloConfig slo;
  slo.ttft = optional_seconds(o, "ttft");
  slo.tpot = optional_seconds(o, "tpot");
  slo.e2el = optional_seconds(o, "e2el");
  o.finish();
  return slo;
}

// serving.prefill: the mode and its pool or budget (`closed`: a fixed-concurrency benchmark).
PrefillPoolConfig read_prefill_pool(ObjectReader& pf, bool closed) {
  PrefillPoolConfig p;
  p.mode = pf.choice_or("mode", names_of(kPrefillModes), "none");
  if (p.disaggregated()) {
    p.instances = static_cast<int>(pf.integer("instances", Range::closed(1, 4096)));
    p.nodes_per_instance = static_cast<int>(pf.integer_or("nodes_per_instance", Range::closed(1, 1024), 1));
    p.tokens_per_gpu = pf.integer_or("tokens_per_gpu", Range::closed(1, static_cast<double>(kMaxTokensPerStep)),
                                     kDisaggregatedTokensPerGpu);
  } else if (p.colocated()) {
    p.tokens_per_gpu = pf.integer_or("tokens_per_gpu", Range::closed(1, static_cast<double>(kMaxTokensPerStep)),
                                     kColocatedTokensPerGpu);
  }
  if (p.disaggregated() && closed) {
    pf.fail("mode", "a fixed-concurrency benchmark (arrivals.process \"concurrency\") runs with prefill \"none\" or "
                    "\"colocated\": the disaggregated prefill pool runs ahead of the decode loop, so a request's arrival "
                    "cannot wait for another's completion");
  }
  pf.finish();
  return p;
}

// serving.table: the step-time table's grid.
StepTableConfig read_table(ObjectReader& t) {
  StepTableConfig table;
  table.batches = read_grid(t, "batches", static_cast<double>(kMaxBatchPerGpu));
  table.contexts = read_grid(t, "contexts", kMaxTokens);
  table.steps = t.integer_or("steps", Range::closed(1, kMaxTableSteps), 2);
  t.finish();
  return table;
}

}  // namespace

ServingConfig read_serving(ObjectReader& r, const std::string& scenario_dir) {
  ServingConfig s;
  // A closed loop has no arrival period (its arrivals follow the completions) and a longer default
  // limit; the process is read (and checked) with the arrivals below.
  const std::optional<std::string> process = r.peek_text("arrivals", "process");
  const std::vector<std::string> processes = names_of(kArrivalProcesses);
  if (process && std::find(processes.begin(), processes.end(), *process) == processes.end()) {
    auto a = r.object("arrivals");
    (void)a.choice("process", processes);  // throws, with a did-you-mean
  }
  const bool closed = process == std::optional<std::string>("concurrency");
  if (closed) {
    if (r.has("duration")) {
      r.fail("duration", "a fixed-concurrency benchmark (arrivals.process \"concurrency\") runs until its requests "
                         "finish: remove duration (serving.drain_limit bounds the run, default 86400s)");
    }
    s.duration = Seconds(0.0);
  } else {
    s.duration = r.seconds("duration", Range::left_open(0.0, kMaxServingSeconds));
  }
  if (r.has("drain_limit")) {
    s.drain_limit = r.seconds("drain_limit", Range::closed(0.0, kMaxServingSeconds));
  } else if (closed) {
    s.drain_limit = Seconds(kDefaultClosedLoopLimit);
    r.record("drain_limit", "86400s", "default for a fixed-concurrency benchmark: the run stops after a simulated day");
  } else {
    s.drain_limit = Seconds(kDefaultDrainLimit);
    r.record("drain_limit", "600s", "default: requests in flight get 600 s after the arrivals end");
  }
  {
    auto a = r.object("arrivals");
    s.arrivals = read_arrivals(a, s.duration.value(), scenario_dir);
  }
  s.max_batch_per_gpu = read_batch_limit(r);
  {
    auto c = r.object_or_empty("controller");
    s.controller = read_controller(c);
  }
  {
    auto c = r.object_or_empty("cost");
    s.cost = read_cost(c);
  }
  {
    auto o = r.object_or_empty("slo");
    s.slo = read_slo(o);
  }
  {
    auto pf = r.object_or_empty("prefill");
    s.prefill = read_prefill_pool(pf, s.arrivals.closed_loop());
  }
  {
    auto t = r.object_or_empty("table");
    s.table = read_table(t);
  }
  r.finish();
  return s;
}

}  // namespace ess
