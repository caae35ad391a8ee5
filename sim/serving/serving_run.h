// Serving's library entry point: a scenario with a "serving" section in, its serving run and
// metrics out (simulate_serving), and the stages behind it that the commands share (run, bench,
// check, search pd): the checks serving mode makes of a scenario, its requests, memory plan,
// step-table grid and preflight (prepare), its step tables (build_tables) and the run of each
// prefill mode on them (serve). The command line only parses, calls these and prints.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/step_table.h"
#include "sim/serving/table_builder.h"

namespace ess {

// What serving supports today, checked against the rest of the scenario (ConfigError otherwise).
void check_serving_scenario(const Scenario& s);

struct Prepared {
  std::vector<Request> requests;
  ServingMemory memory;
  TableGrid grid;
  ResourceEstimate estimate;  // the requests' and every step-table run's (sim/serving/serving_preflight.h)
  std::int64_t table_runs = 0;
};

// The scenario checked, its requests, the memory plan over their lengths and the decode table's
// grid, with serving's preflight: the requests are estimated before they are drawn and the
// step-table runs before any is built, each stage refused beyond `limits` (ResourceError).
[[nodiscard]] Prepared prepare(const Scenario& s, const ResourceLimits& limits);

// The step tables a serving run reads, each built from the Simulation runs table_builder.h lists.
struct ServingTables {
  StepModel model;    // decode steps
  StepTable prefill;  // disaggregated prefill: one prefill instance's steps (empty otherwise)
  ChunkModel chunks;  // colocated prefill: what a prompt chunk adds to a decode step (empty otherwise)
};
[[nodiscard]] ServingTables build_tables(const Scenario& s, const Prepared& p);

// The serving run of each prefill mode: the decode loop alone, after a prefill pool of
// `prefill_instances` instances (disaggregated: serving.prefill.instances for the scenario's own
// run), or with prompt chunks in its steps (colocated).
[[nodiscard]] ServingRun serve(const Scenario& s, const Prepared& p, const ServingTables& tables, int prefill_instances);

struct ServingOutcome {
  Prepared prepared;
  ServingTables tables;
  ServingRun run;
  nlohmann::ordered_json serving;  // results.json's "serving" object (serving_metrics.h)
};

// The whole serving run of `s`: prepare (preflight under `limits`), the step tables, serve, the metrics.
[[nodiscard]] ServingOutcome simulate_serving(const Scenario& s, const ResourceLimits& limits);

}  // namespace ess
