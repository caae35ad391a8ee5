// `ess-sim run` and `ess-sim bench` of a scenario with a "serving" section: arrivals, the
// step-time table from Simulation runs, the serving loop, its metrics (sim/serving/).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/serving/serving_run.h"
#include "sim/config/config_error.h"
#include "sim/io/atomic_file.h"
#include "sim/engine/simulation.h"
#include "sim/io/sha256.h"
#include "sim/metrics/results.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/prefill_pool.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/table_builder.h"

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

namespace {

// The prefill table's interpolation error: direct prefill steps at the midpoints between
// consecutive token grid points, at the middle prompt length (not part of the timed run).
nlohmann::ordered_json prefill_checks(const Scenario& s, const StepTable& table, double& worst) {
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  const auto& ts = table.batches();
  const auto& ls = table.contexts();
  const std::int64_t prompt = (ls.front() + ls.back()) / 2;
  for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
    const std::int64_t tokens = (ts[i] + ts[i + 1]) / 2;
    const double predicted = table.at(static_cast<double>(tokens), static_cast<double>(prompt)).time;
    ResourceLimits vetted;  // points between the table's, which serving's preflight passed
    vetted.enforce = false;
    Simulation sim(prefill_instance_run(s, tokens, prompt), SimulationOptions(1, 0, vetted));
    const double direct = sim.run().step_time.at(0);
    const double err = (predicted - direct) / direct;
    worst = std::max(worst, std::abs(err));
    checks.push_back({{"tokens_per_gpu", tokens}, {"prompt", prompt}, {"table_s", predicted}, {"direct_s", direct}, {"error", err}});
  }
  return checks;
}

// The chunk model's error: direct mixed steps (decode batch + chunk) against the decode table plus
// what the chunk model adds, at chunk sizes between its token grid points, at the middle cached
// point, at the decode grid's batches between the chunk model's slices.
double chunk_points(const ChunkModel& m) {
  double n = 0.0;
  for (const ChunkSlice& sl : m.slices) n += static_cast<double>(sl.table.points().size()) + 1.0;
  return n;
}

nlohmann::ordered_json chunk_checks(const Scenario& s, const StepModel& model, const ChunkModel& chunks, double& worst) {
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  const bool offload = s.cache.mode == CacheMode::offload;
  const auto& bs = (offload ? *model.offload : model.gpu).batches();
  const auto& ts = chunks.slices.front().table.batches();
  const auto& cs = chunks.slices.front().table.contexts();
  const std::int64_t cached = (cs.front() + cs.back()) / 2;
  std::vector<std::int64_t> between;
  for (const std::int64_t b : bs) {
    const bool slice = std::any_of(chunks.slices.begin(), chunks.slices.end(), [&](const ChunkSlice& sl) { return sl.batch == b; });
    if (!slice && b >= chunks.slices.front().batch) between.push_back(b);
  }
  for (const std::int64_t b : between) {
    for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
      const std::int64_t tokens = (ts[i] + ts[i + 1]) / 2;
      const double context = static_cast<double>(chunks.context);
      const double predicted = model.at(static_cast<double>(b), context, offload ? 1.0 : 0.0).time +
                               chunks.added(static_cast<double>(b), static_cast<double>(tokens), static_cast<double>(cached)).time;
      const double direct =
          measure_point(table_point_run(s, offload, b, chunks.context, s.serving->table.steps, PrefillChunk{tokens, cached})).time;
      const double err = (predicted - direct) / direct;
      worst = std::max(worst, std::abs(err));
      checks.push_back({{"batch_per_gpu", b}, {"chunk_tokens", tokens}, {"cached", cached}, {"model_s", predicted},
                        {"direct_s", direct}, {"error", err}});
    }
  }
  return checks;
}

}  // namespace

int bench_serving_scenario(const Scenario& s, bool json, const ResourceLimits& limits, std::ostream& out) {
  const auto t0 = std::chrono::steady_clock::now();
  Prepared p = prepare(s, limits);
  const StepModel model = build_step_model(s, p.memory, p.grid);
  const bool disaggregated = s.serving->prefill.disaggregated();
  const bool colocated = s.serving->prefill.colocated();
  const bool closed = s.serving->arrivals.closed_loop();
  const TableGrid prefill_grid = disaggregated ? prefill_table_grid(s, p.requests) : TableGrid{};
  const StepTable prefill_table = disaggregated ? build_prefill_table(s, prefill_grid) : StepTable{};
  const TableGrid chunk_grid = colocated ? chunk_table_grid(s, p.requests) : TableGrid{};
  const ChunkModel chunks = colocated ? build_chunk_model(s, p.memory, p.grid, chunk_grid, p.requests) : ChunkModel{};
  const double table_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  const ServingRun run = disaggregated ? run_disaggregated(s, p.requests, model, p.memory, prefill_table, s.serving->prefill.instances)
                                       : run_serving(s, p.requests, model, p.memory, colocated ? &chunks : nullptr);
  const auto serving = serving_json(s, run, model, p.memory);
  const double loop_s = seconds_since(t1);
  const double total_s = seconds_since(t0);
  double prefill_worst = 0.0;
  const nlohmann::ordered_json pchecks = disaggregated ? prefill_checks(s, prefill_table, prefill_worst) : nlohmann::ordered_json::array();
  const double prefill_points = static_cast<double>(prefill_grid.batches.size() * prefill_grid.contexts.size()) +
                                (colocated ? chunk_points(chunks) : 0.0);
  double chunk_worst = 0.0;
  const nlohmann::ordered_json cchecks = colocated ? chunk_checks(s, model, chunks, chunk_worst) : nlohmann::ordered_json::array();
  // The table's interpolation error: direct runs at the midpoints between consecutive batch grid
  // points, at the middle of the context range (not part of the timed run).
  const bool offload = s.cache.mode == CacheMode::offload;
  const StepTable& table = offload ? *model.offload : model.gpu;
  const auto& bs = table.batches();
  const auto& cs = table.contexts();
  const std::int64_t context = (cs.front() + cs.back()) / 2;
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  double worst = 0.0;
  for (std::size_t i = 0; i + 1 < bs.size(); ++i) {
    const std::int64_t b = (bs[i] + bs[i + 1]) / 2;
    if (b == bs[i]) continue;
    const double predicted = table.at(static_cast<double>(b), static_cast<double>(context)).time;
    const double direct = measure_point(table_point_run(s, offload, b, context, s.serving->table.steps)).time;
    const double err = (predicted - direct) / direct;
    worst = std::max(worst, std::abs(err));
    checks.push_back({{"batch_per_gpu", b}, {"context", context}, {"table_s", predicted}, {"direct_s", direct}, {"error", err}});
  }
  const double table_points =
      static_cast<double>(bs.size() * cs.size()) * ((offload && !model.gpu.empty()) ? 2.0 : 1.0) + prefill_points;
  if (json) {
    out << nlohmann::ordered_json{{"scenario", s.name.empty() ? s.origin : s.name},
                                  {"mode", "serving"},
                                  {"period_s", closed ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.serving->duration.value())},
                                  {"gpus", s.hardware.total_gpus()},
                                  {"requests", p.requests.size()},
                                  {"steps", run.steps.size()},
                                  {"table_points", table_points},
                                  {"table_wall_s", table_s},
                                  {"estimated_table_runs", p.table_runs},
                                  {"estimated_wall_s", p.estimate.wall_seconds()},
                                  {"estimated_memory_bytes", p.estimate.memory_bytes()},
                                  {"loop_wall_s", loop_s},
                                  {"wall_s", total_s},
                                  {"interpolation_checks", checks},
                                  {"interpolation_max_abs_error", worst},
                                  {"prefill_interpolation_checks", pchecks},
                                  {"prefill_interpolation_max_abs_error", prefill_worst},
                                  {"chunk_checks", cchecks},
                                  {"chunk_max_abs_error", chunk_worst}}
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
                p.requests.size(), run.steps.size(), total_s, table_s, table_points, loop_s, worst * 100, checks.size());
  out << buf;
  out << "  preflight estimate   " << describe_estimate(p.estimate);
  for (const auto& c : checks) {
    std::snprintf(buf, sizeof buf, "    batch %3lld context %7lld: table %.3f ms, direct %.3f ms (%+.2f%%)\n",
                  static_cast<long long>(c.at("batch_per_gpu").get<std::int64_t>()),
                  static_cast<long long>(c.at("context").get<std::int64_t>()), c.at("table_s").get<double>() * 1e3,
                  c.at("direct_s").get<double>() * 1e3, c.at("error").get<double>() * 100);
    out << buf;
  }
  if (disaggregated) {
    std::snprintf(buf, sizeof buf, "  prefill table        max |error| %.2f%% at %zu midpoints between token grid points (direct runs, not timed)\n",
                  prefill_worst * 100, pchecks.size());
    out << buf;
    for (const auto& c : pchecks) {
      std::snprintf(buf, sizeof buf, "    tokens/GPU %6lld prompt %7lld: table %.3f ms, direct %.3f ms (%+.2f%%)\n",
                    static_cast<long long>(c.at("tokens_per_gpu").get<std::int64_t>()),
                    static_cast<long long>(c.at("prompt").get<std::int64_t>()), c.at("table_s").get<double>() * 1e3,
                    c.at("direct_s").get<double>() * 1e3, c.at("error").get<double>() * 100);
      out << buf;
    }
  }
  if (colocated) {
    std::snprintf(buf, sizeof buf,
                  "  chunk model          max |error| %.2f%% at %zu mixed steps between its grid points and slices "
                  "(direct runs, not timed)\n",
                  chunk_worst * 100, cchecks.size());
    out << buf;
    for (const auto& c : cchecks) {
      std::snprintf(buf, sizeof buf, "    batch %3lld + chunk %6lld after %7lld: model %.3f ms, direct %.3f ms (%+.2f%%)\n",
                    static_cast<long long>(c.at("batch_per_gpu").get<std::int64_t>()),
                    static_cast<long long>(c.at("chunk_tokens").get<std::int64_t>()),
                    static_cast<long long>(c.at("cached").get<std::int64_t>()), c.at("model_s").get<double>() * 1e3,
                    c.at("direct_s").get<double>() * 1e3, c.at("error").get<double>() * 100);
      out << buf;
    }
  }
  (void)serving;
  return 0;
}

}  // namespace ess
