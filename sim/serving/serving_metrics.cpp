#include "sim/serving/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/serving/controller.h"
#include "sim/serving/serving_band.h"

namespace ess {

namespace {

// No values (no request completed): every statistic null, so no reader takes 0 s for a latency.
nlohmann::ordered_json to_json(const Distribution& d) {
  if (d.count == 0) {
    return {{"mean", nullptr}, {"median", nullptr}, {"std", nullptr}, {"p90", nullptr}, {"p99", nullptr}, {"max", nullptr},
            {"count", 0}};
  }
  return {{"mean", d.mean}, {"median", d.median}, {"std", d.std}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max},
          {"count", d.count}};
}

std::string ms(double seconds) {
  if (std::isnan(seconds)) return "none";  // a statistic of no values
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  return buf;
}

std::string num(const char* format, double v) {
  if (std::isnan(v)) return "none";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double get(const nlohmann::ordered_json& j, std::initializer_list<const char*> path) {
  const nlohmann::ordered_json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return std::nan("");
    p = &p->at(k);
  }
  return p->is_number() ? p->get<double>() : std::nan("");
}

}  // namespace

double linear_percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double sq = 0.0;
  for (double v : values) sq += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(sq / n);
  d.median = linear_percentile(values, 50);
  d.p90 = linear_percentile(values, 90);
  d.p99 = linear_percentile(values, 99);
  d.max = values.back();
  return d;
}

Distribution weighted_distribution(std::vector<std::pair<double, double>> vw) {
  Distribution d;
  vw.erase(std::remove_if(vw.begin(), vw.end(), [](const auto& x) { return x.second <= 0.0; }), vw.end());
  if (vw.empty()) return d;
  std::sort(vw.begin(), vw.end());
  double total = 0.0;
  double sum = 0.0;
  for (const auto& [v, w] : vw) {
    total += w;
    sum += v * w;
  }
  d.count = static_cast<std::size_t>(total);
  d.mean = sum / total;
  double sq = 0.0;
  for (const auto& [v, w] : vw) sq += w * (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(sq / total);
  // The value at index `k` of the expanded, sorted array.
  const auto at_index = [&](double k) {
    double seen = 0.0;
    for (const auto& [v, w] : vw) {
      seen += w;
      if (k < seen) return v;
    }
    return vw.back().first;
  };
  const auto pct = [&](double p) {
    const double pos = p / 100.0 * (total - 1.0);
    const double lo = std::floor(pos);
    const double a = at_index(lo);
    const double b = at_index(std::min(total - 1.0, lo + 1.0));
    return a + (b - a) * (pos - lo);
  };
  d.median = pct(50);
  d.p90 = pct(90);
  d.p99 = pct(99);
  d.max = vw.back().first;
  return d;
}

// Colocated prefill: how much of the steps went to prompt chunks, and how long prompts took from
// admission to their first token.
nlohmann::ordered_json colocated_json(const PrefillPoolConfig& cfg, const ServingRun& run) {
  std::int64_t with = 0;
  double tokens = 0.0;
  double added = 0.0;
  double busy = 0.0;
  for (const ServingStep& st : run.steps) {
    busy += st.time;
    if (st.prefill_tokens == 0) continue;
    ++with;
    tokens += static_cast<double>(st.prefill_tokens);
    added += st.prefill_time;
  }
  std::vector<double> prefill;
  for (const RequestOutcome& r : run.requests) {
    if (r.first_token >= 0.0) prefill.push_back(r.first_token - r.admitted);
  }
  return {{"mode", cfg.mode},
          {"tokens_per_gpu", cfg.tokens_per_gpu},
          {"steps_with_prefill", with},
          {"prefill_tokens", tokens},
          // Step time the chunks added, over all step time.
          {"prefill_time_share", busy > 0 ? added / busy : 0.0},
          {"chunk_tokens_per_step_mean", with > 0 ? tokens / static_cast<double>(with) : 0.0},
          {"prefill_s", to_json(distribution(prefill))}};
}

nlohmann::ordered_json prefill_json(const Scenario& s, const ServingRun& run) {
  const PrefillPoolConfig& cfg = s.serving->prefill;
  if (cfg.colocated()) return colocated_json(cfg, run);
  if (!run.prefill) {
    return {{"mode", cfg.mode}, {"note", "requests arrive prefilled: TTFT and E2E latency leave out prefill and the cache transfer"}};
  }
  const PrefillPoolRun& pf = *run.prefill;
  std::vector<double> wait;
  std::vector<double> compute;
  std::vector<double> transfer;
  std::vector<double> shared;
  double bytes = 0.0;
  for (std::size_t i = 0; i < pf.requests.size(); ++i) {
    const PrefillOutcome& o = pf.requests[i];
    wait.push_back(o.start - run.requests[i].request.arrival);
    compute.push_back(o.end - o.start);
    transfer.push_back(o.transfer_s);
    shared.push_back(std::max(0.0, o.transfer_s - o.transfer_alone_s));
    bytes += o.transfer_bytes;
  }
  // Over the prefill pool's own span (its first arrival to its last step), not the decode run's.
  const double capacity = static_cast<double>(pf.instances) * pf.end_time;
  return {{"mode", cfg.mode},
          {"instances", pf.instances},
          {"nodes_per_instance", cfg.nodes_per_instance},
          {"gpus", pf.instances * pf.gpus_per_instance},
          {"tokens_per_gpu", cfg.tokens_per_gpu},
          {"steps", pf.steps},
          {"busy_share", capacity > 0 ? pf.busy_s / capacity : 0.0},
          // How full the steps were: prompt tokens over steps x GPUs x tokens_per_gpu.
          {"step_fill", pf.capacity > 0 ? pf.tokens / pf.capacity : 0.0},
          {"wait_s", to_json(distribution(wait))},
          {"prefill_s", to_json(distribution(compute))},
          {"transfer_s", to_json(distribution(transfer))},
          // What each transfer lost to the others sharing its links (transfer_s minus its time alone).
          {"transfer_contention_s", to_json(distribution(shared))},
          {"transfer_bytes_mean", pf.requests.empty() ? 0.0 : bytes / static_cast<double>(pf.requests.size())}};
}

namespace {

// What the requests did: the latency lists and the counts and tokens of those that completed.
struct RequestTally {
  std::vector<double> ttft;
  std::vector<double> tpot;
  std::vector<double> e2el;
  std::vector<double> wait;
  std::int64_t completed = 0;
  std::int64_t sent = 0;  // arrived: all of an open loop, those a closed loop sent before its limit
  std::int64_t good = 0;
  double output_completed = 0.0;
  double input_completed = 0.0;
  double generated = 0.0;
};

RequestTally tally_requests(const ServingConfig& cfg, const ServingRun& run) {
  RequestTally t;
  const PrefillPoolRun* pf = run.prefill ? &*run.prefill : nullptr;
  for (std::size_t i = 0; i < run.requests.size(); ++i) {
    const auto& r = run.requests[i];
    t.generated += static_cast<double>(r.generated);
    if (r.request.arrival >= 0.0) ++t.sent;
    // The wait for decode admission: from the request's arrival, or from when its prefilled cache
    // reached the decode node.
    if (r.admitted >= 0.0) t.wait.push_back(r.admitted - (pf ? pf->requests[i].ready : r.request.arrival));
    if (!r.completed()) continue;
    ++t.completed;
    t.output_completed += static_cast<double>(r.generated);
    t.input_completed += static_cast<double>(r.request.prompt_tokens);
    const double t1 = r.first_token - r.request.arrival;
    const double e = r.finish - r.request.arrival;
    t.ttft.push_back(t1);
    t.e2el.push_back(e);
    // vLLM counts a one-token request's TPOT as 0 for goodput, and leaves it out of the TPOT list.
    const double tp = r.generated > 1 ? (e - t1) / static_cast<double>(r.generated - 1) : 0.0;
    if (r.generated > 1) t.tpot.push_back(tp);
    const bool ok = (!cfg.slo.ttft || t1 <= cfg.slo.ttft->value()) && (!cfg.slo.tpot || tp <= cfg.slo.tpot->value()) &&
                    (!cfg.slo.e2el || e <= cfg.slo.e2el->value());
    if (ok) ++t.good;
  }
  return t;
}

// What the decode steps did: inter-token latencies (per chunk and per token), step times and the
// time-weighted sums of sessions, utilisation and the controller's cap.
struct StepTally {
  std::vector<std::pair<double, double>> itl;
  std::vector<std::pair<double, double>> itl_token;
  std::vector<double> step_times;
  double active_time = 0.0;
  std::int64_t active_max = 0;
  double busy_time = 0.0;
  double util_time = 0.0;
  double cap_time = 0.0;
  std::int64_t cap_min = 0;
  std::int64_t cap_max = 0;
  std::int64_t batch_max = 0;
};

StepTally tally_steps(const ServingRun& run) {
  StepTally t;
  t.cap_min = run.batch_bound;
  for (const auto& st : run.steps) {
    t.step_times.push_back(st.time);
    t.active_time += st.active * st.time;
    t.active_max = std::max<std::int64_t>(t.active_max, st.active);
    t.batch_max = std::max<std::int64_t>(t.batch_max, st.batch_max);
    t.busy_time += st.time;
    t.util_time += st.utilization * st.time;
    t.cap_time += st.cap * st.time;
    t.cap_min = std::min<std::int64_t>(t.cap_min, st.cap);
    t.cap_max = std::max<std::int64_t>(t.cap_max, st.cap);
    for (std::size_t k = 1; k < st.chunks.size(); ++k) {
      if (st.chunks[k] == 0) continue;
      t.itl.emplace_back(st.time, st.chunks[k]);
      t.itl_token.emplace_back(st.time / static_cast<double>(k), static_cast<double>(st.chunks[k]) * static_cast<double>(k));
    }
    for (const StalledChunk& c : st.stalled) {
      t.itl.emplace_back(c.gap, 1);
      t.itl_token.emplace_back(c.gap / static_cast<double>(c.tokens), static_cast<double>(c.tokens));
    }
  }
  return t;
}

// The controller: how the cap moved, and whether the P99 over each window of steps held.
nlohmann::ordered_json controller_json(const ControllerConfig& cc, const ServingRun& run, const StepTally& st,
                                       double duration) {
  nlohmann::ordered_json traj = nlohmann::ordered_json::array();
  for (const auto& c : run.cap_changes) traj.push_back({c.time, c.cap, c.p99});
  std::int64_t windows = 0;
  std::int64_t over = 0;
  double settled_at = 0.0;
  bool last_ok = true;
  const auto w = static_cast<std::size_t>(cc.window);
  const auto& step_times = st.step_times;
  for (std::size_t i = 0; i + w <= step_times.size(); i += w) {
    const std::vector<double> part(step_times.begin() + static_cast<std::ptrdiff_t>(i),
                                   step_times.begin() + static_cast<std::ptrdiff_t>(i + w));
    ++windows;
    last_ok = nearest_rank(part, 0.99) <= cc.p99_target.value();
    if (!last_ok) {
      ++over;
      settled_at = i + w < run.steps.size() ? run.steps[i + w].start : duration;
    }
  }
  return {{"enabled", cc.enabled},
          {"p99_target_s", cc.p99_target.value()},
          {"window_steps", cc.window},
          {"initial_cap", run.initial_cap},
          {"final_cap", run.cap_changes.empty() ? run.initial_cap : run.cap_changes.back().cap},
          {"cap_min", run.steps.empty() ? run.initial_cap : st.cap_min},
          {"cap_max", run.steps.empty() ? run.initial_cap : st.cap_max},
          {"cap_mean", st.busy_time > 0 ? st.cap_time / st.busy_time : 0.0},
          {"changes", run.cap_changes.size() > 0 ? run.cap_changes.size() - 1 : 0},
          {"windows", windows},
          {"windows_over_target", over},
          {"target_held", over == 0},
          {"held_after_s", last_ok ? nlohmann::ordered_json(settled_at) : nlohmann::ordered_json(nullptr)},
          {"trajectory", {{"columns", {"time_s", "cap", "window_p99_s"}}, {"rows", traj}}}};
}

// The run's GPU energy, when the GPUs' power is known: the decode GPUs' (run.energy), plus the
// prefill GPUs', which draw busy power while their instance steps (compute-bound: utilisation 1)
// and idle power otherwise, over the run's duration.
std::optional<double> run_energy(const Scenario& s, const ServingRun& run, double duration) {
  std::optional<double> energy = run.energy;
  const PrefillPoolRun* pf = run.prefill ? &*run.prefill : nullptr;
  if (const auto& p = s.hardware.gpu.power; p && energy && pf) {
    const double instance_s = static_cast<double>(pf->instances) * duration;
    *energy += pf->gpus_per_instance * (pf->busy_s * p->busy.value() + std::max(0.0, instance_s - pf->busy_s) * p->idle.value());
  }
  return energy;
}

nlohmann::ordered_json energy_json(const Scenario& s, const ServingRun& run, std::optional<double> energy,
                                   const StepTally& st, const RequestTally& rt, double duration) {
  const auto& p = s.hardware.gpu.power;
  if (!p || !energy) return nullptr;
  nlohmann::ordered_json e;
  e["gpu_idle_w"] = p->idle.value();
  e["gpu_busy_w"] = p->busy.value();
  e["utilization_mean"] = st.busy_time > 0 ? st.util_time / st.busy_time : 0.0;
  e["energy_j"] = *energy;
  e["prefill_included"] = run.prefill.has_value();
  e["mean_power_w"] = duration > 0 ? *energy / duration : 0.0;
  e["per_output_token_j"] = rt.generated > 0 ? nlohmann::ordered_json(*energy / rt.generated) : nlohmann::ordered_json(nullptr);
  return e;
}

// The bill of the run (serving.cost): GPU-hours, host DRAM GB-hours and GPU energy at the user's
// prices, over the run's duration; per million output tokens and per request/s. Null without prices.
nlohmann::ordered_json cost_json(const Scenario& s, const ServingMemory& memory, std::optional<double> energy,
                                 const RequestTally& rt, double duration, int all_gpus) {
  const CostConfig& price = s.serving->cost;
  if (!price.any()) return nullptr;
  const auto per_s = [&](double x) { return duration > 0 ? x / duration : 0.0; };
  const double hours = duration / 3600.0;
  const double host_gb = memory.host_capacity() * static_cast<double>(memory.sockets()) / 1e9;
  nlohmann::ordered_json bill;
  double total = 0.0;
  const auto item = [&](const char* name, std::optional<double> unit_price, double quantity, const char* unit) {
    if (!unit_price) return;
    const double usd = *unit_price * quantity;
    bill[name] = {{"quantity", quantity}, {"unit", unit}, {"price_usd", *unit_price}, {"usd", usd}};
    total += usd;
  };
  item("gpus", price.gpu_hour_usd, hours * all_gpus, "GPU-hours");
  item("host_dram", price.host_dram_gb_hour_usd, hours * host_gb, "GB-hours");
  if (price.energy_kwh_usd && !energy) {
    throw ConfigError(s.origin, "/serving/cost/energy_kwh_usd", "an energy price needs the GPUs' power (hardware.gpu.power)");
  }
  item("energy", price.energy_kwh_usd, energy ? *energy / 3.6e6 : 0.0, "kWh");
  const double rps = per_s(static_cast<double>(rt.completed));
  nlohmann::ordered_json c;
  c["items"] = bill;
  c["total_usd"] = total;
  c["per_hour_usd"] = hours > 0 ? total / hours : 0.0;
  c["per_million_output_tokens_usd"] =
      rt.output_completed > 0 ? nlohmann::ordered_json(total / rt.output_completed * 1e6) : nlohmann::ordered_json(nullptr);
  // What one request/s of this load costs per hour (the "cost per QPS" of ESS's documents).
  c["per_hour_per_request_per_s_usd"] =
      rps > 0 && hours > 0 ? nlohmann::ordered_json(total / hours / rps) : nlohmann::ordered_json(nullptr);
  c["per_request_usd"] =
      rt.completed > 0 ? nlohmann::ordered_json(total / static_cast<double>(rt.completed)) : nlohmann::ordered_json(nullptr);
  return c;
}

nlohmann::ordered_json step_table_json(const StepTable& t) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < t.batches().size(); ++i) {
    for (std::size_t c = 0; c < t.contexts().size(); ++c) {
      const auto& p = t.points()[i * t.contexts().size() + c];
      rows.push_back({t.batches()[i], t.contexts()[c], p.time, p.utilization});
    }
  }
  return nlohmann::ordered_json{{"columns", {"batch_per_gpu", "context", "step_time_s", "utilization"}}, {"rows", rows}};
}

}  // namespace

nlohmann::ordered_json serving_json(const Scenario& s, const ServingRun& run, const StepModel& model,
                                    const ServingMemory& memory) {
  const ServingConfig& cfg = *s.serving;
  const RequestTally rt = tally_requests(cfg, run);
  const StepTally st = tally_steps(run);
  const double duration = run.end_time;
  const double nodes = s.hardware.nodes;
  // GPUs of the run: the decode node(s), and the prefill instances when prefill is disaggregated.
  const int prefill_gpus = run.prefill ? run.prefill->instances * run.prefill->gpus_per_instance : 0;
  const int all_gpus = s.hardware.total_gpus() + prefill_gpus;
  const auto per_s = [&](double x) { return duration > 0 ? x / duration : 0.0; };

  nlohmann::ordered_json j;
  if (cfg.arrivals.closed_loop()) {
    j["period_s"] = nullptr;
    j["closed_loop"] = {{"concurrency", cfg.arrivals.concurrency}, {"requests", cfg.arrivals.requests}};
  } else {
    j["period_s"] = cfg.duration.value();
  }
  j["duration_s"] = duration;
  j["requests"] = {{"arrived", rt.sent},
                   {"completed", rt.completed},
                   {"incomplete", static_cast<std::int64_t>(run.requests.size()) - rt.completed},
                   {"total_input_tokens", rt.input_completed},
                   {"total_output_tokens", rt.output_completed},
                   {"generated_tokens", rt.generated}};
  const Distribution ttft = distribution(rt.ttft);
  const Distribution tpot = distribution(rt.tpot);
  j["ttft_s"] = to_json(ttft);
  j["tpot_s"] = to_json(tpot);
  j["itl_s"] = to_json(weighted_distribution(st.itl));
  j["itl_per_token_s"] = to_json(weighted_distribution(st.itl_token));
  j["e2el_s"] = to_json(distribution(rt.e2el));
  j["queue_wait_s"] = to_json(distribution(rt.wait));
  j["throughput"] = {{"output_tokens_per_s", per_s(rt.output_completed)},
                     {"requests_per_s", per_s(static_cast<double>(rt.completed))},
                     {"input_tokens_per_s", per_s(rt.input_completed)},
                     {"output_tokens_per_s_per_gpu", per_s(rt.output_completed) / all_gpus}};
  j["prefill"] = prefill_json(s, run);
  j["band"] = serving_band_json(serving_band(s, run), ttft.mean, tpot.mean, per_s(rt.output_completed));
  const auto slo_value = [](const std::optional<Seconds>& v) {
    return v ? nlohmann::ordered_json(v->value()) : nlohmann::ordered_json(nullptr);
  };
  j["goodput"] = {{"slo_s", {{"ttft", slo_value(cfg.slo.ttft)}, {"tpot", slo_value(cfg.slo.tpot)}, {"e2el", slo_value(cfg.slo.e2el)}}},
                  {"good_requests", rt.good},
                  {"requests_per_s", per_s(static_cast<double>(rt.good))},
                  {"good_share", rt.completed > 0 ? static_cast<double>(rt.good) / static_cast<double>(rt.completed) : 0.0}};
  j["concurrency"] = {{"sessions_per_node_mean", duration > 0 ? st.active_time / duration / nodes : 0.0},
                      {"sessions_per_node_max", static_cast<double>(st.active_max) / nodes},
                      {"batch_per_gpu_max", st.batch_max}};
  const Distribution steps = distribution(st.step_times);
  const auto step_stat = [&](double v) { return steps.count > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  j["steps"] = {{"count", run.steps.size()},
                {"step_time_s", {{"mean", step_stat(steps.mean)}, {"p50", step_stat(steps.median)},
                                 {"p99", step_stat(nearest_rank(st.step_times, 0.99))}, {"max", step_stat(steps.max)}}},
                {"busy_s", st.busy_time},
                {"idle_s", run.idle_time}};
  j["controller"] = controller_json(cfg.controller, run, st, duration);
  const std::optional<double> energy = run_energy(s, run, duration);
  j["energy"] = energy_json(s, run, energy, st, rt, duration);
  j["cost"] = cost_json(s, memory, energy, rt, duration, all_gpus);
  j["memory"] = {{"batch_bound_per_gpu", run.batch_bound},
                 {"batch_bound_clamped_from", memory.clamped() ? nlohmann::ordered_json(*memory.clamped()) : nlohmann::ordered_json(nullptr)},
                 {"hbm_for_caches_per_gpu", memory.hbm_budget()},
                 {"activations_per_request", memory.activations_per_request()},
                 {"hbm_peak_per_gpu", run.hbm_peak},
                 {"host_capacity_per_socket", memory.host_capacity()},
                 {"host_threshold", s.cache.host_memory_threshold},
                 {"host_budget_per_socket", memory.host_budget()},
                 {"host_peak_per_socket", run.host_peak},
                 {"fallback_gpu_only_requests", run.fallback_requests},
                 {"steps_blocked_by_memory", run.blocked_by_memory_steps}};
  j["step_table"] = {{"gpu_only", model.gpu.empty() ? nlohmann::ordered_json(nullptr) : step_table_json(model.gpu)},
                     {"offload", model.offload ? step_table_json(*model.offload) : nlohmann::ordered_json(nullptr)}};
  return j;
}

std::string serving_table(const Scenario& s, const nlohmann::ordered_json& j) {
  std::string out;
  const auto line = [&](const std::string& label, const std::string& value) {
    out += "  " + label + std::string(label.size() < 34 ? 34 - label.size() : 0, ' ') + " " + value + "\n";
  };
  const ArrivalConfig& a = s.serving->arrivals;
  const std::string load = a.closed_loop() ? std::to_string(a.requests) + " requests at concurrency " + std::to_string(a.concurrency)
                                           : format_quantity(s.serving->duration.value(), Dimension::seconds) + " of arrivals";
  out += (s.name.empty() ? s.origin : s.name) + ": serving " + load + " on " + std::to_string(s.hardware.total_gpus()) + " x " +
         s.hardware.gpu.kind + ", " + s.parallelism.describe() + ", engine " + s.engine.name + " (" + (s.cache.mode == CacheMode::offload ? "ESS offload" : "GPU-only cache") + ")\n";
  line(a.closed_loop() ? "requests (completed / sent)" : "requests (completed / arrived)",
       num("%.0f", get(j, {"requests", "completed"})) + " / " + num("%.0f", get(j, {"requests", "arrived"})));
  line("run time (to the last completion)", num("%.1f s", get(j, {"duration_s"})));
  const auto& pf = j.at("prefill");
  if (pf.contains("instances")) {
    line("prefill (disaggregated)", num("%.0f", get(pf, {"instances"})) + " instance(s) of " +
                                        num("%.0f", get(pf, {"nodes_per_instance"})) + " node(s), " +
                                        num("%.0f%% busy", 100.0 * get(pf, {"busy_share"})) + ", steps " +
                                        num("%.0f%% full", 100.0 * get(pf, {"step_fill"})) + "; wait / prefill / transfer mean " +
                                        ms(get(pf, {"wait_s", "mean"})) + " / " + ms(get(pf, {"prefill_s", "mean"})) + " / " +
                                        ms(get(pf, {"transfer_s", "mean"})) + " (" + ms(get(pf, {"transfer_contention_s", "mean"})) +
                                        " of it sharing links)");
    line("TTFT mean / p99", ms(get(j, {"ttft_s", "mean"})) + " / " + ms(get(j, {"ttft_s", "p99"})) +
                                " (prefill, cache transfer and first decode step)");
  } else if (pf.contains("steps_with_prefill")) {
    line("prefill (colocated)", num("%.0f", get(pf, {"tokens_per_gpu"})) +
                                    (s.parallelism.tensor_parallel > 1 ? " tokens per replica per step; chunks in " : " tokens per GPU per step; chunks in ") +
                                    num("%.0f", get(pf, {"steps_with_prefill"})) + " steps (" +
                                    num("%.0f tokens mean", get(pf, {"chunk_tokens_per_step_mean"})) + "), " +
                                    num("%.0f%% of step time", 100.0 * get(pf, {"prefill_time_share"})) +
                                    "; admission to first token mean " + ms(get(pf, {"prefill_s", "mean"})));
    line("TTFT mean / p99", ms(get(j, {"ttft_s", "mean"})) + " / " + ms(get(j, {"ttft_s", "p99"})) +
                                (s.engine.prefill_first ? " (queue and chunked prefill, decode waiting: engine.prefill_schedule prefill_first)"
                                                        : " (queue and chunked prefill beside decode)"));
  } else {
    line("TTFT mean / p99", ms(get(j, {"ttft_s", "mean"})) + " / " + ms(get(j, {"ttft_s", "p99"})) +
                                " (prefill not simulated: serving.prefill.mode none)");
  }
  line("TPOT mean / p99", ms(get(j, {"tpot_s", "mean"})) + " / " + ms(get(j, {"tpot_s", "p99"})));
  line("ITL mean / p99 (per chunk)", ms(get(j, {"itl_s", "mean"})) + " / " + ms(get(j, {"itl_s", "p99"})));
  line("E2E latency mean / p99", num("%.2f s", get(j, {"e2el_s", "mean"})) + " / " + num("%.2f s", get(j, {"e2el_s", "p99"})));
  line("output throughput", num("%.0f tokens/s", get(j, {"throughput", "output_tokens_per_s"})) + " (" +
                                num("%.2f requests/s", get(j, {"throughput", "requests_per_s"})) + ")");
  line("band (1 sigma)", serving_band_text(j.at("band")));
  line("goodput", num("%.2f requests/s", get(j, {"goodput", "requests_per_s"})) + " (" +
                      num("%.1f%% of completed meet the SLO)", 100.0 * get(j, {"goodput", "good_share"})));
  line("sessions per node mean / max", num("%.1f", get(j, {"concurrency", "sessions_per_node_mean"})) + " / " +
                                           num("%.0f", get(j, {"concurrency", "sessions_per_node_max"})));
  line("step time mean / p99", ms(get(j, {"steps", "step_time_s", "mean"})) + " / " + ms(get(j, {"steps", "step_time_s", "p99"})));
  const auto& c = j.at("controller");
  const std::string slot = s.parallelism.tensor_parallel > 1 ? "replica (TP" + std::to_string(s.parallelism.tensor_parallel) + ")" : "GPU";
  line("batch cap per " + slot, std::string(c.at("enabled").get<bool>() ? "adaptive" : "fixed (controller off)") + ": start " +
                                num("%.0f", get(c, {"initial_cap"})) + ", range " + num("%.0f", get(c, {"cap_min"})) + "-" +
                                num("%.0f", get(c, {"cap_max"})) + ", end " + num("%.0f", get(c, {"final_cap"})) + ", " +
                                num("%.0f moves", get(c, {"changes"})) + " (memory bound " +
                                num("%.0f)", get(j, {"memory", "batch_bound_per_gpu"})));
  if (const double given = get(j, {"memory", "batch_bound_clamped_from"}); !std::isnan(given)) {
    line("", num("serving.max_batch_per_gpu %.0f lowered to what HBM holds", given));
  }
  if (get(j, {"requests", "completed"}) == 0.0) {
    line("latencies", "none: no request completed (lengthen serving.drain_limit or lower the load)");
  }
  line("P99 step target", ms(get(c, {"p99_target_s"})) + ": " + num("%.0f", get(c, {"windows_over_target"})) + " of " +
                              num("%.0f", get(c, {"windows"})) + " windows over it");
  if (j.at("energy").is_null()) {
    line("energy", "not modelled (the hardware has no gpu.power)");
  } else {
    line("energy per output token", num("%.3f J", get(j, {"energy", "per_output_token_j"})) + " (mean power " +
                                        num("%.0f W", get(j, {"energy", "mean_power_w"})) + ", utilisation " +
                                        num("%.2f)", get(j, {"energy", "utilization_mean"})));
  }
  if (const auto& bill = j.at("cost"); !bill.is_null()) {
    std::string items;
    for (const auto& [name, it] : bill.at("items").items()) {
      items += (items.empty() ? "" : ", ") + name + " " + num("$%.2f", it.at("usd").get<double>());
    }
    const auto& per_m = bill.at("per_million_output_tokens_usd");
    line("cost", num("$%.2f", get(bill, {"total_usd"})) + " (" + items + "); " +
                     (per_m.is_number() ? num("$%.3f per million output tokens", per_m.get<double>()) : std::string("no tokens")));
  }
  if (s.cache.mode == CacheMode::offload) {
    line("memory protection", num("%.0f requests GPU-only", get(j, {"memory", "fallback_gpu_only_requests"})) + "; host peak " +
                                  num("%.1f%% of a socket", 100.0 * get(j, {"memory", "host_peak_per_socket"}) /
                                                                get(j, {"memory", "host_capacity_per_socket"})) +
                                  " (threshold " + num("%.0f%%)", 100.0 * get(j, {"memory", "host_threshold"})));
  }
  return out;
}

}  // namespace ess
