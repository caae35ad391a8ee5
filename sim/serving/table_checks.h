// How well a serving run's step tables interpolate: direct Simulation runs at points between the
// tables' grid points, each against what the table predicts there (`ess-sim bench` prints them;
// they are not part of a run). Every direct run is one serving's preflight already vetted the
// neighbours of, so none is refused.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/serving/serving_run.h"

namespace ess {

struct TableCheck {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();  // one object per direct run
  double worst = 0.0;                                              // largest |relative error|
};

struct TableChecks {
  // Decode table (the scenario's cache mode): midpoints between consecutive batch grid points, at
  // the middle of the context range. Rows: batch_per_gpu, context, table_s, direct_s, error.
  TableCheck decode;
  // Disaggregated: the prefill table at midpoints between its token grid points, at the middle
  // prompt length. Rows: tokens_per_gpu, prompt, table_s, direct_s, error.
  TableCheck prefill;
  // Colocated: mixed steps (decode batch + a prompt chunk) against the decode table plus what the
  // chunk model adds, at chunk sizes between its token grid points, at the middle cached point,
  // at the decode grid's batches between its slices. Rows: batch_per_gpu, chunk_tokens, cached,
  // model_s, direct_s, error.
  TableCheck chunks;
};

[[nodiscard]] TableChecks check_tables(const Scenario& s, const ServingTables& tables);

// The Simulation runs behind the tables: each table's points, plus each chunk slice's reference.
[[nodiscard]] double table_points(const ServingTables& tables);

}  // namespace ess
