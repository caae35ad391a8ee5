// Serving's preflight, as decode has its own (sim/engine/preflight.h): the requests, step-table
// runs, memory and wall time a serving run (run, bench, check, search pd) will need, estimated
// before any of that work is done, and refused beyond the limits unless --allow-large.
//
// Two stages, because the second needs what the first allows to be made:
//  1. before the requests are drawn: how many there will be (Poisson: the rates times their
//     periods; a closed loop: its count; a trace: its lines) and what holding and serving them costs;
//  2. once the requests, memory plan and step-table grids are known, before any table is built:
//     every Simulation run the decode tables, the colocated chunk model and the prefill table will
//     make, each priced by the decode or prefill estimate of that one run.
#pragma once

#include <vector>

#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/table_builder.h"

namespace ess {

// Stage 1: the requests a serving scenario will draw (expected count for Poisson arrivals) and the
// memory and loop time they need.
[[nodiscard]] ResourceEstimate estimate_requests(const Scenario& s);

// Stage 2: the step-table runs of a serving run with these requests, memory plan and decode grid
// (the tables of serve(): decode, and by serving.prefill.mode the chunk model or the prefill
// table). `runs` receives the number of Simulation runs.
[[nodiscard]] ResourceEstimate estimate_tables(const Scenario& s, const ServingMemory& memory, const TableGrid& decode,
                                               const std::vector<Request>& requests, std::int64_t& runs);

}  // namespace ess
