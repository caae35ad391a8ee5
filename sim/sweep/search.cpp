#include "sim/sweep/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include "sim/config/config_error.h"
#include "sim/config/scenario.h"
#include "sim/memory/memory_plan.h"
#include "sim/sweep/pareto.h"
#include "sim/sweep/runner.h"

namespace ess {

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}


Scenario load_with(const std::string& scenario, const std::vector<std::string>& sets) {
  Scenario s = load_scenario(scenario, parse_overrides(sets));
  require_decode_scenario(s, "search");
  return s;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string joined(const std::vector<std::string>& sets) {
  std::string out;
  for (const auto& s : sets) out += (out.empty() ? "" : " ") + std::string("--set ") + s;
  return out;
}

// A metric of a results.json summary by JSON pointer; NaN when absent or not a number.
double summary_value(const nlohmann::ordered_json& results, const char* pointer) {
  const nlohmann::json::json_pointer ptr(pointer);
  if (!results.contains(ptr) || !results.at(ptr).is_number()) return std::numeric_limits<double>::quiet_NaN();
  return results.at(ptr).get<double>();
}

// Runs probes, each once (a repeated probe takes the first answer).
class Prober {
 public:
  Prober(const SearchContext& context, SearchResult& result) : c_(context), r_(result) {}

  // Runs the scenario with `sets`, records the probe; `measure` turns the results into the value
  // and `meets` compares it with the target.
  template <typename Measure, typename Meets>
  const SearchProbe& probe(const std::vector<std::string>& sets, Measure measure, Meets meets) {
    const std::string key = joined(sets);
    if (const auto it = seen_.find(key); it != seen_.end()) return r_.probes[it->second];
    SearchProbe p;
    p.sets = sets;
    p.outcome = run_scenario_child(c_.executable, c_.scenario, concat(c_.sets, sets), c_.steps, {}, c_.work_dir);
    if (p.outcome.status == "ok") {
      p.value = measure(p.outcome.results);
      p.meets = std::isfinite(p.value) && meets(p.value);
    }
    if (c_.progress != nullptr) {
      *c_.progress << "  probe " << (r_.probes.size() + 1) << ": " << key << "  ->  "
                   << (p.outcome.status == "ok" ? number(p.value) + (p.meets ? " (meets)" : " (misses)")
                                                : p.outcome.status + " (" + p.outcome.reason_code + ")")
                   << "\n"
                   << std::flush;
    }
    seen_[key] = r_.probes.size();
    r_.probes.push_back(std::move(p));
    return r_.probes.back();
  }

 private:
  const SearchContext& c_;
  SearchResult& r_;
  std::map<std::string, std::size_t> seen_;
};

// The relative calibration band of a probe's run (one sigma), or NaN without one.
double band_of(const SearchProbe& p) {
  const auto& s = p.outcome.results.value("summary", nlohmann::ordered_json());
  const auto& b = s.value("band", nlohmann::ordered_json());
  return b.is_object() && b.contains("relative") && b["relative"].is_number() ? b["relative"].get<double>()
                                                                               : std::numeric_limits<double>::quiet_NaN();
}

// summary.band's verdict on an answer: `value` of the answer against `target` ("<=" targets when
// `at_most`), and the neighbour that missed (nullptr if none was probed). `what` names the values.
std::string band_verdict(const SearchProbe& best, const SearchProbe* missed, double target, bool at_most,
                         const std::string& answer, const std::string& neighbour, const std::string& unit, double scale) {
  const double rel = band_of(best);
  if (!std::isfinite(rel)) return "no calibration band (uncalibrated hardware): how close real hardware comes is unknown";
  const auto pct = [](double x) { return number(std::round(x * 1000.0) / 10.0) + "%"; };
  // A step-time-like value is wrong by +-rel; throughput by the same relative amount.
  const double margin = at_most ? (target - best.value) / best.value : (best.value - target) / best.value;
  std::string out = answer + " is " + number(best.value * scale) + " " + unit + ", " + pct(margin) + " from the target; band +-" +
                    pct(rel) + " (one sigma)";
  out += margin < rel ? ": inside the band, real hardware may miss the target at " + answer
                      : ": outside the band";
  if (missed != nullptr && std::isfinite(missed->value)) {
    const double m = at_most ? (missed->value - target) / missed->value : (target - missed->value) / missed->value;
    const double mrel = band_of(*missed);
    if (std::isfinite(mrel) && m < mrel) {
      out += "; " + neighbour + " (" + number(missed->value * scale) + " " + unit + ") is within its band too and may meet it";
    }
  }
  return out;
}

void answer(SearchResult& r, std::int64_t value, const SearchProbe& p, const std::string& bound) {
  r.found = true;
  r.answer = value;
  r.bound = bound;
  r.answer_sets = p.sets;
  if (p.outcome.results.contains("summary")) r.answer_summary = p.outcome.results["summary"];
}

bool loads(const std::string& scenario, const std::vector<std::string>& sets) {
  try {
    (void)load_with(scenario, sets);
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

}  // namespace

SearchResult search_max_batch(const SearchContext& c, LatencyTarget metric, double target_s) {
  SearchResult r;
  const bool p99 = metric == LatencyTarget::p99_step_time;
  r.question = std::string("largest batch per GPU with ") + (p99 ? "P99 step time" : "TPOT") +
               " <= " + number(target_s * 1e3) + " ms";
  // The scenario must load as given (the batch aside): a bad file is an error, not "not found".
  (void)load_with(c.scenario, concat(c.sets, {"workload.batch_per_gpu=max"}));
  Prober prober(c, r);
  const auto measure = [p99](const nlohmann::ordered_json& results) {
    if (p99) return summary_value(results, "/summary/step_time_s/p99");
    const double otps = summary_value(results, "/summary/otps_per_request");
    return otps > 0 ? 1.0 / otps : std::numeric_limits<double>::quiet_NaN();
  };
  const auto meets = [target_s](double v) { return v <= target_s; };
  const auto batch_sets = [](std::int64_t b) { return std::vector<std::string>{"workload.batch_per_gpu=" + std::to_string(b)}; };

  const SearchProbe& most = prober.probe({"workload.batch_per_gpu=max"}, measure, meets);
  if (most.outcome.status != "ok") {
    r.message = "the largest batch that fits could not run: " + most.outcome.status + " (" +
                most.outcome.reason_message.substr(0, most.outcome.reason_message.find('\n')) + ")";
    if (most.outcome.status == "out_of_memory") r.message += "; `ess-sim search fit` says what would fit";
    return r;
  }
  const auto hi_batch = static_cast<std::int64_t>(summary_value(most.outcome.results, "/summary/batch_per_gpu"));
  if (most.meets) {
    answer(r, hi_batch, most, "memory");
    r.message = "the largest batch that fits in GPU memory meets the target";
    r.band = band_verdict(most, nullptr, target_s, true, "batch " + std::to_string(hi_batch), "", "ms", 1e3);
    return r;
  }
  if (hi_batch <= 1) {
    r.message = "batch 1 (the only one that fits) misses the target: " + number(most.value * 1e3) + " ms";
    return r;
  }
  const SearchProbe& one = prober.probe(batch_sets(1), measure, meets);
  if (!one.meets) {
    r.message = one.outcome.status == "ok" ? "even batch 1 misses the target: " + number(one.value * 1e3) + " ms"
                                           : "batch 1 could not run: " + one.outcome.status;
    return r;
  }
  std::int64_t lo = 1;        // meets
  std::int64_t hi = hi_batch;  // misses
  std::size_t best = r.probes.size() - 1;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    const SearchProbe& p = prober.probe(batch_sets(mid), measure, meets);
    if (p.meets) {
      lo = mid;
      best = static_cast<std::size_t>(&p - r.probes.data());
    } else {
      hi = mid;
    }
  }
  answer(r, lo, r.probes[best], "target");
  r.message = "batch " + std::to_string(lo + 1) + " misses the target; " + std::to_string(hi_batch) + " fit in memory";
  const SearchProbe* next = nullptr;
  for (const auto& p : r.probes) {
    if (p.sets == batch_sets(lo + 1)) next = &p;
  }
  if (hi == hi_batch) next = &r.probes.front();  // the "max" probe is batch hi_batch
  r.band = band_verdict(r.probes[best], next, target_s, true, "batch " + std::to_string(lo),
                        "batch " + std::to_string(lo + 1), "ms", 1e3);
  return r;
}

SearchResult search_min_gpus(const SearchContext& c, double tokens_per_s, int max_nodes) {
  SearchResult r;
  r.question = "fewest GPUs with total throughput >= " + number(tokens_per_s) + " tokens/s";
  const Scenario base = load_with(c.scenario, c.sets);
  // The node counts whose scaled layout the loader accepts (EP must divide the experts, ...).
  std::vector<int> candidates;
  for (int n = 1; n <= max_nodes; ++n) {
    const auto sets = scaled_layout(base, n);
    if (!sets.empty() && loads(c.scenario, concat(c.sets, sets))) candidates.push_back(n);
  }
  if (candidates.empty()) {
    r.message = "no node count in 1.." + std::to_string(max_nodes) + " gives a layout the scenario accepts";
    return r;
  }
  Prober prober(c, r);
  const auto measure = [](const nlohmann::ordered_json& results) {
    return summary_value(results, "/summary/tokens_per_s_total");
  };
  const auto meets = [tokens_per_s](double v) { return v >= tokens_per_s; };
  const auto run = [&](std::size_t i) -> const SearchProbe& {
    return prober.probe(scaled_layout(base, candidates[i]), measure, meets);
  };
  // Doubling over the candidates, then bisection between the last miss and the first hit. A node
  // count that does not fit in memory counts as a miss (more nodes shrink each GPU's share).
  std::size_t hit = candidates.size();
  std::size_t miss_below = 0;  // candidates[< miss_below] all miss
  for (std::size_t i = 0;; i = std::min(candidates.size() - 1, i == 0 ? 1 : 2 * i)) {
    if (run(i).meets) {
      hit = i;
      break;
    }
    miss_below = i + 1;
    if (i == candidates.size() - 1) break;
  }
  if (hit == candidates.size()) {
    const SearchProbe& last = r.probes.back();
    r.message = "even " + std::to_string(candidates.back() * base.hardware.gpu.count) + " GPUs (" +
                std::to_string(candidates.back()) + " nodes, --max-nodes) reach only " +
                (last.outcome.status == "ok" ? number(last.value) + " tokens/s" : last.outcome.status);
    return r;
  }
  std::size_t lo = miss_below;  // first candidate not known to miss
  std::size_t hi = hit;         // known to meet
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (run(mid).meets) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const SearchProbe& best = run(hi);
  answer(r, static_cast<std::int64_t>(candidates[hi]) * base.hardware.gpu.count, best, "target");
  r.message = std::to_string(candidates[hi]) + " nodes of " + std::to_string(base.hardware.gpu.count) + " GPUs";
  const SearchProbe* fewer = nullptr;
  if (hi > 0) {
    const auto sets = scaled_layout(base, candidates[hi - 1]);
    for (const auto& p : r.probes) {
      if (p.sets == sets) fewer = &p;
    }
  }
  const std::string gpus = std::to_string(candidates[hi] * base.hardware.gpu.count) + " GPUs";
  r.band = band_verdict(best, fewer, tokens_per_s, false, gpus,
                        hi > 0 ? std::to_string(candidates[hi - 1] * base.hardware.gpu.count) + " GPUs" : "", "tokens/s", 1.0);
  return r;
}

FitAdvice fit_advice(const std::string& scenario, const std::vector<std::string>& overrides, int max_nodes) {
  FitAdvice a;
  const Scenario s = load_with(scenario, overrides);
  const auto fits = [&](const std::vector<std::string>& extra, std::int64_t* batch = nullptr) {
    try {
      const Scenario t = load_with(scenario, concat(overrides, extra));
      const std::int64_t b = resolve_batch(decode_run(t));
      if (batch != nullptr) *batch = b;
      return true;
    } catch (const CapacityError&) {
      return false;
    } catch (const ConfigError&) {
      return false;
    }
  };
  try {
    a.batch_per_gpu = resolve_batch(decode_run(s));
    a.fits = true;
    return a;
  } catch (const CapacityError& e) {
    a.budget = e.what();
  }
  const bool offload = s.cache.mode == CacheMode::offload;
  // 1. A smaller batch.
  std::int64_t largest = 0;
  if (s.workload.batch_per_gpu && fits({"workload.batch_per_gpu=max"}, &largest)) {
    a.suggestions.push_back({"a batch of at most " + std::to_string(largest) + " per GPU (the largest that fits)",
                             {"workload.batch_per_gpu=" + std::to_string(largest)}});
  }
  // 2. Offload: a smaller GPU pool (largest ratio that fits, to 3 significant digits).
  if (offload && s.cache.pool_ratio && s.workload.batch_per_gpu) {
    double lo = 0.0;
    double hi = *s.cache.pool_ratio;
    for (int i = 0; i < 30 && hi - lo > 1e-3 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      if (fits({"cache.pool_ratio=" + number(mid)})) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const double ratio = std::floor(lo * 1000.0) / 1000.0;
    if (ratio > 0 && fits({"cache.pool_ratio=" + number(ratio)})) {
      a.suggestions.push_back({"a GPU pool ratio of at most " + number(ratio) + " (now " + number(*s.cache.pool_ratio) + ")",
                               {"cache.pool_ratio=" + number(ratio)}});
    }
  }
  // 3. GPU-only cache: offload to host memory instead (models with a sparse indexer).
  if (!offload && s.model.indexer && fits({"cache.mode=offload", "cache.pool_ratio=0.1"})) {
    a.suggestions.push_back({"ESS offload of the latent cache to host memory, GPU pool ratio 0.1",
                             {"cache.mode=offload", "cache.pool_ratio=0.1"}});
  }
  // 4. More GPUs for the experts (smallest EP degree that fits), or a larger TP degree.
  if (s.parallelism.tensor_parallel == 1 && s.parallelism.expert_parallel == s.hardware.total_gpus()) {
    for (int n = s.hardware.nodes + 1; n <= max_nodes; ++n) {
      const auto sets = scaled_layout(s, n);
      if (!sets.empty() && fits(sets)) {
        a.suggestions.push_back({"expert parallelism over " + std::to_string(n * s.hardware.gpu.count) + " GPUs (" +
                                     std::to_string(n) + " nodes): fewer experts per GPU",
                                 sets});
        break;
      }
    }
  }
  if (s.parallelism.tensor_parallel > 1) {
    for (int tp = s.parallelism.tensor_parallel * 2; tp <= s.hardware.gpu.count; tp *= 2) {
      if (s.hardware.total_gpus() % tp != 0) break;
      std::vector<std::string> sets = {"parallelism.tensor_parallel=" + std::to_string(tp),
                                       "parallelism.attention_dp=" + std::to_string(s.hardware.total_gpus() / tp)};
      if (s.parallelism.expert_parallel == s.parallelism.tensor_parallel) {
        sets.push_back("parallelism.expert_parallel=" + std::to_string(tp));
      }
      if (fits(sets)) {
        a.suggestions.push_back({"tensor parallelism of " + std::to_string(tp), sets});
        break;
      }
    }
  }
  return a;
}

ParetoTable pareto_table(const std::vector<nlohmann::ordered_json>& records, std::size_t top, const std::string& origin) {
  ParetoTable t;
  std::vector<ParetoPoint> points;
  std::map<std::size_t, const nlohmann::ordered_json*> by_point;
  bool has_columns = records.empty();
  for (const auto& rec : records) {
    if (rec.contains("tokens_per_s_per_gpu") && rec.contains("otps_per_request_tokens_per_s")) has_columns = true;
    if (rec.value("status", "") != "ok") continue;
    ++t.ok_points;
    // value(), not operator[]: on a const object a missing key is undefined behaviour.
    const nlohmann::ordered_json tps = rec.value("tokens_per_s_per_gpu", nlohmann::ordered_json());
    const nlohmann::ordered_json otps = rec.value("otps_per_request_tokens_per_s", nlohmann::ordered_json());
    const nlohmann::ordered_json index = rec.value("point", nlohmann::ordered_json());
    if (!tps.is_number() || !otps.is_number() || otps.get<double>() <= 0 || !index.is_number_unsigned()) continue;
    const auto point = index.get<std::size_t>();
    points.push_back({1.0 / otps.get<double>(), tps.get<double>(), point});
    by_point[point] = &rec;
  }
  if (!has_columns) {
    throw ConfigError(origin, "", "the ledger has no tokens_per_s_per_gpu and otps_per_request_tokens_per_s: add "
                                  "\"tokens_per_s_per_gpu\" and \"otps_per_request\" to the spec's \"metrics\"");
  }
  const auto front = pareto_front(points);
  t.front_points = front.size();
  for (const auto& p : front) t.rows.push_back({p.index, p.throughput, p.latency, *by_point.at(p.index)});
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const ParetoRow& a, const ParetoRow& b) {
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  });
  if (top > 0 && t.rows.size() > top) t.rows.resize(top);
  return t;
}

}  // namespace ess
