#include "sim/serving/pd_search.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/run_request.h"
#include "sim/base/text.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/serving_run.h"

namespace ess {

double pd_statistic(const nlohmann::ordered_json& v) { return v.is_number() ? v.get<double>() : std::nan(""); }

namespace {

struct Candidate {
  std::string kind;  // "disaggregated" or "colocated"
  int decode_nodes = 0;
  int prefill_instances = 0;
  int gpus = 0;
};

Scenario load_probe(const PdSearch& q, const std::vector<std::string>& more) {
  std::vector<std::string> sets = q.sets;
  sets.insert(sets.end(), more.begin(), more.end());
  return load_scenario(q.scenario, parse_overrides(sets));
}

// The overrides that put the scenario's decode side on `nodes` nodes (none for its own count).
std::optional<std::vector<std::string>> decode_layout(const Scenario& base, int nodes) {
  if (nodes == base.hardware.nodes) return std::vector<std::string>{};
  std::vector<std::string> sets = scaled_layout(base, nodes);
  if (sets.empty()) return std::nullopt;
  return sets;
}

// One probe's row: the latencies against the SLOs, and whether it meets them.
nlohmann::ordered_json probe_row(const nlohmann::ordered_json& j, double attainment, bool& meets) {
  const double share = j.at("goodput").at("good_share").get<double>();
  const bool complete = j.at("requests").at("incomplete").get<std::int64_t>() == 0;
  meets = complete && share >= attainment;
  return {{"ttft_p99_s", j.at("ttft_s").at("p99")},
          {"tpot_p99_s", j.at("tpot_s").at("p99")},
          {"good_share", share},
          {"incomplete", j.at("requests").at("incomplete")},
          {"cost_per_million_output_tokens_usd",
           j.at("cost").is_null() ? nlohmann::ordered_json(nullptr) : j.at("cost").at("per_million_output_tokens_usd")},
          {"meets", meets}};
}

// Why the last probe of a decode node count missed: the SLO, incomplete requests, or steps too
// empty for more prefill instances to help.
std::string why_missed(const nlohmann::ordered_json& last, const SloConfig& slo, double attainment, bool disaggregated) {
  std::string why = std::to_string(static_cast<int>(last.at("good_share").get<double>() * 100.0)) +
                    "% of requests meet the SLOs (needed " + std::to_string(static_cast<int>(attainment * 100.0)) + "%)";
  const double ttft = pd_statistic(last.at("ttft_p99_s"));
  const double tpot = pd_statistic(last.at("tpot_p99_s"));
  const bool incomplete = last.at("incomplete").get<std::int64_t>() > 0;
  if (disaggregated && !incomplete && last.at("prefill_step_fill").get<double>() < 0.5 && slo.ttft && ttft > slo.ttft->value()) {
    why += "; the prefill steps are " + std::to_string(static_cast<int>(last.at("prefill_step_fill").get<double>() * 100.0)) +
           "% full, so more instances will not help: a prompt's own prefill, its transfer and the decode queue exceed the "
           "TTFT SLO (a smaller prefill.tokens_per_gpu, TP attention or more decode GPUs might)";
  } else if (incomplete) {
    why += disaggregated ? "; requests are left incomplete: the decode side cannot keep up with the arrivals"
                         : "; requests are left incomplete: the nodes cannot keep up with the arrivals";
  }
  if (std::isnan(ttft)) why += "; no request completed";
  if (slo.ttft && ttft > slo.ttft->value()) why += "; TTFT p99 " + fmt("%.2f s", ttft) + " against the SLO's " + fmt("%.2f s", slo.ttft->value());
  if (slo.tpot && tpot > slo.tpot->value()) {
    why += "; TPOT p99 " + fmt("%.2f ms", tpot * 1e3) + " against the SLO's " +
           fmt("%.2f ms", slo.tpot->value() * 1e3);
  }
  return why;
}

// Prefill instances 1 .. max for the decode side of `s`, until one meets the SLOs; both step
// tables are built once (neither depends on the instance count).
std::optional<Candidate> search_instances(const Scenario& s, const PdSearch& q, nlohmann::ordered_json& rows, std::string& why) {
  const Prepared p = prepare(s, q.limits);
  const ServingTables tables = build_tables(s, p);
  const int gpus_per_node = s.hardware.gpu.count;
  for (int k = 1; k <= q.max_instances; ++k) {
    const ServingRun run = serve(s, p, tables, k);
    const auto j = serving_json(s, run, tables.model, p.memory);
    bool meets = false;
    nlohmann::ordered_json row = {{"decode_nodes", s.hardware.nodes},
                                  {"prefill_instances", k},
                                  {"prefill_gpus", j.at("prefill").at("gpus")},
                                  {"decode_gpus", s.hardware.total_gpus()}};
    row.update(probe_row(j, q.attainment, meets));
    row["prefill_busy_share"] = j.at("prefill").at("busy_share");
    row["prefill_step_fill"] = j.at("prefill").at("step_fill");
    rows.push_back(row);
    if (meets) {
      return Candidate{"disaggregated", s.hardware.nodes, k,
                       k * s.serving->prefill.nodes_per_instance * gpus_per_node + s.hardware.total_gpus()};
    }
  }
  why = "with " + std::to_string(q.max_instances) + " prefill instance(s) " + why_missed(rows.back(), s.serving->slo, q.attainment, true);
  return std::nullopt;
}

// The colocated alternative on the decode side of `s`: its nodes prefill their own prompts.
std::optional<Candidate> probe_colocated(const Scenario& s, const PdSearch& q, nlohmann::ordered_json& rows, std::string& why) {
  const Prepared p = prepare(s, q.limits);
  const ServingTables tables = build_tables(s, p);
  const ServingRun run = serve(s, p, tables, 0);  // colocated: no prefill instances
  const auto j = serving_json(s, run, tables.model, p.memory);
  bool meets = false;
  nlohmann::ordered_json row = {{"decode_nodes", s.hardware.nodes}, {"gpus", s.hardware.total_gpus()}};
  row.update(probe_row(j, q.attainment, meets));
  row["prefill_time_share"] = j.at("prefill").at("prefill_time_share");
  rows.push_back(row);
  if (meets) return Candidate{"colocated", s.hardware.nodes, 0, s.hardware.total_gpus()};
  why = why_missed(row, s.serving->slo, q.attainment, false);
  return std::nullopt;
}

}  // namespace

PdSearchResult search_pd(const PdSearch& q) {
  const Scenario base = load_probe(q, {});
  if (!base.serving || !base.serving->prefill.disaggregated()) {
    throw ConfigError(base.origin, "/serving/prefill/mode",
                      "search pd chooses the prefill instances of a disaggregated serving run: give the scenario a "
                      "\"serving\" section with \"prefill\": {\"mode\": \"disaggregated\", \"instances\": 1}");
  }
  const SloConfig& slo = base.serving->slo;
  if (!slo.ttft && !slo.tpot && !slo.e2el) {
    throw ConfigError(base.origin, "/serving/slo", "search pd needs at least one SLO (serving.slo.ttft, tpot or e2el) to meet");
  }
  const std::vector<int> nodes = q.decode_nodes.empty() ? std::vector<int>{base.hardware.nodes} : q.decode_nodes;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  nlohmann::ordered_json colocated_rows = nlohmann::ordered_json::array();
  std::optional<Candidate> best;
  std::vector<std::string> why;
  std::vector<std::string> colocated_misses;  // noted beside an answer found elsewhere
  const auto consider = [&best](const std::optional<Candidate>& c) {
    if (c && (!best || c->gpus < best->gpus)) best = c;
  };
  for (const int d : nodes) {
    const auto layout = decode_layout(base, d);
    if (!layout) {
      why.push_back(std::to_string(d) + " decode node(s): the GPUs do not divide into the scenario's TP groups");
      continue;
    }
    std::string miss;
    consider(search_instances(load_probe(q, *layout), q, rows, miss));
    if (!miss.empty()) why.push_back(std::to_string(d) + " decode node(s): " + miss);
    if (!q.colocated) continue;
    std::vector<std::string> sets = *layout;
    sets.push_back("serving.prefill={\"mode\":\"colocated\",\"tokens_per_gpu\":" + std::to_string(q.colocated_tokens) + "}");
    std::string cmiss;
    consider(probe_colocated(load_probe(q, sets), q, colocated_rows, cmiss));
    if (!cmiss.empty()) {
      why.push_back("colocated on " + std::to_string(d) + " node(s): " + cmiss);
      colocated_misses.push_back("colocated on " + std::to_string(d) + " node(s) misses: " + cmiss);
    }
  }
  std::string why_not;
  for (const auto& w : why) why_not += (why_not.empty() ? "" : "; and ") + w;
  nlohmann::ordered_json answer = nullptr;
  if (best) {
    answer = {{"kind", best->kind}, {"decode_nodes", best->decode_nodes}, {"gpus", best->gpus}};
    if (best->kind == "disaggregated") answer["prefill_instances"] = best->prefill_instances;
  }
  nlohmann::ordered_json doc = {
      {"scenario", base.name.empty() ? base.origin : base.name},
      {"attainment", q.attainment},
      {"decode_nodes_tried", nodes},
      {"found", best.has_value()},
      {"answer", answer},
      {"prefill_instances", best && best->kind == "disaggregated" ? nlohmann::ordered_json(best->prefill_instances) : nlohmann::ordered_json(nullptr)},
      {"why_not", best ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(why_not)},
      {"probes", rows},
      {"colocated", q.colocated ? colocated_rows : nlohmann::ordered_json(nullptr)},
      {"notes", best ? nlohmann::ordered_json(colocated_misses) : nlohmann::ordered_json::array()}};
  return {base, std::move(doc), best.has_value()};
}

}  // namespace ess
