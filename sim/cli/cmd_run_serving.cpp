// `ess-sim run` and `ess-sim bench` of a scenario with a "serving" section: arrivals, the
// step-time table from Simulation runs, the serving loop, its metrics (sim/serving/).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"
#include "sim/metrics/results.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/serving_run.h"
#include "sim/serving/table_checks.h"

namespace ess {

namespace {

nlohmann::ordered_json results_document(const Scenario& s, const nlohmann::ordered_json& serving) {
  nlohmann::ordered_json j;
  j["schema"] = kResultsSchema;
  j["ess_sim_version"] = ESS_SIM_VERSION;
  j["scenario_sha256"] = sha256_hex(format_resolved(s.resolved));
  j["scenario"] = {{"name", s.name}, {"file", s.origin}};
  j["seed"] = s.seed;
  j["mode"] = "serving";
  j["serving"] = serving;
  return j;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int run_serving_scenario(const Scenario& s, const std::string& out_dir, bool json, const ResourceLimits& limits,
                         std::ostream& out) {
  const ServingOutcome outcome = simulate_serving(s, limits);
  const auto results = results_document(s, outcome.serving);
  const std::string text = results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!out_dir.empty()) {
    const std::filesystem::path dir(out_dir);
    ensure_directory(dir);
    write_output_set(dir, {{"results.json", text}}, std::string("ess-sim ") + ESS_SIM_VERSION);
  }
  if (json) {
    out << text;
  } else {
    out << serving_table(s, results.at("serving"));
    if (!out_dir.empty()) out << "\n  wrote " << out_dir << "/results.json and manifest.json\n";
  }
  return 0;
}

int bench_serving_scenario(const Scenario& s, bool json, const ResourceLimits& limits, std::ostream& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const Prepared p = prepare(s, limits);
  const ServingTables tables = build_tables(s, p);
  const double table_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  const ServingRun run = serve(s, p, tables, s.serving->prefill.instances);
  (void)serving_json(s, run, tables.model, p.memory);  // the metrics are part of the timed run
  const double loop_s = seconds_since(t1);
  const double total_s = seconds_since(t0);
  const bool closed = s.serving->arrivals.closed_loop();
  const TableChecks c = check_tables(s, tables);
  if (json) {
    out << nlohmann::ordered_json{{"scenario", s.name.empty() ? s.origin : s.name},
                                  {"mode", "serving"},
                                  {"period_s", closed ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.serving->duration.value())},
                                  {"gpus", s.hardware.total_gpus()},
                                  {"requests", p.requests.size()},
                                  {"steps", run.steps.size()},
                                  {"table_points", table_points(tables)},
                                  {"table_wall_s", table_s},
                                  {"estimated_table_runs", p.table_runs},
                                  {"estimated_wall_s", p.estimate.wall_seconds()},
                                  {"estimated_memory_bytes", p.estimate.memory_bytes()},
                                  {"loop_wall_s", loop_s},
                                  {"wall_s", total_s},
                                  {"interpolation_checks", c.decode.rows},
                                  {"interpolation_max_abs_error", c.decode.worst},
                                  {"prefill_interpolation_checks", c.prefill.rows},
                                  {"prefill_interpolation_max_abs_error", c.prefill.worst},
                                  {"chunk_checks", c.chunks.rows},
                                  {"chunk_max_abs_error", c.chunks.worst}}
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return 0;
  }
  char buf[768];
  const std::string load = closed ? "at concurrency " + std::to_string(s.serving->arrivals.concurrency)
                                  : fmt("%.0f s of arrivals", s.serving->duration.value());
  std::snprintf(buf, sizeof buf,
                "%s: serving %s on %d GPUs (%zu requests, %zu decode steps)\n"
                "  wall time            %.3f s   (step-time table %.3f s for %.0f Simulation runs; serving loop and metrics %.3f s)\n"
                "  table interpolation  max |error| %.2f%% at %zu midpoints between batch grid points (direct runs, not timed)\n",
                (s.name.empty() ? s.origin : s.name).c_str(), load.c_str(), s.hardware.total_gpus(),
                p.requests.size(), run.steps.size(), total_s, table_s, table_points(tables), loop_s, c.decode.worst * 100,
                c.decode.rows.size());
  out << buf;
  out << "  preflight estimate   " << describe_estimate(p.estimate);
  for (const auto& row : c.decode.rows) {
    std::snprintf(buf, sizeof buf, "    batch %3lld context %7lld: table %.3f ms, direct %.3f ms (%+.2f%%)\n",
                  static_cast<long long>(row.at("batch_per_gpu").get<std::int64_t>()),
                  static_cast<long long>(row.at("context").get<std::int64_t>()), row.at("table_s").get<double>() * 1e3,
                  row.at("direct_s").get<double>() * 1e3, row.at("error").get<double>() * 100);
    out << buf;
  }
  if (s.serving->prefill.disaggregated()) {
    std::snprintf(buf, sizeof buf, "  prefill table        max |error| %.2f%% at %zu midpoints between token grid points (direct runs, not timed)\n",
                  c.prefill.worst * 100, c.prefill.rows.size());
    out << buf;
    for (const auto& row : c.prefill.rows) {
      std::snprintf(buf, sizeof buf, "    tokens/GPU %6lld prompt %7lld: table %.3f ms, direct %.3f ms (%+.2f%%)\n",
                    static_cast<long long>(row.at("tokens_per_gpu").get<std::int64_t>()),
                    static_cast<long long>(row.at("prompt").get<std::int64_t>()), row.at("table_s").get<double>() * 1e3,
                    row.at("direct_s").get<double>() * 1e3, row.at("error").get<double>() * 100);
      out << buf;
    }
  }
  if (s.serving->prefill.colocated()) {
    std::snprintf(buf, sizeof buf,
                  "  chunk model          max |error| %.2f%% at %zu mixed steps between its grid points and slices "
                  "(direct runs, not timed)\n",
                  c.chunks.worst * 100, c.chunks.rows.size());
    out << buf;
    for (const auto& row : c.chunks.rows) {
      std::snprintf(buf, sizeof buf, "    batch %3lld + chunk %6lld after %7lld: model %.3f ms, direct %.3f ms (%+.2f%%)\n",
                    static_cast<long long>(row.at("batch_per_gpu").get<std::int64_t>()),
                    static_cast<long long>(row.at("chunk_tokens").get<std::int64_t>()),
                    static_cast<long long>(row.at("cached").get<std::int64_t>()), row.at("model_s").get<double>() * 1e3,
                    row.at("direct_s").get<double>() * 1e3, row.at("error").get<double>() * 100);
      out << buf;
    }
  }
  return 0;
}

}  // namespace ess
