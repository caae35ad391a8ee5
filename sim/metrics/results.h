// Turning a run into what users read: results.json (schema "ess-sim/results/v1") and a table.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/base/text.h"
#include "sim/engine/simulation.h"

namespace ess {

inline constexpr const char* kResultsSchema = "ess-sim/results/v1";

struct StepStats {
  double mean = 0.0;
  double p50 = 0.0;
  double p99 = 0.0;
  double min = 0.0;
  double max = 0.0;
};

// Nearest-rank percentiles of the step times.
[[nodiscard]] StepStats step_stats(const std::vector<double>& step_times);

// Mean over steps and GPUs of the time in each category, idle included; the values sum to the
// mean step time. Keys: gemm, attention, indexer, norm, elementwise, collectives, transfers, idle.
[[nodiscard]] nlohmann::ordered_json time_by_category(const RunResult& r);

// summary.offload of an offload run: placement, misses, bytes, hidden and exposed transfer time.
[[nodiscard]] nlohmann::ordered_json offload_summary(const Scenario& s, const RunResult& r);
// Collectives per step (mean over GPUs): total, exposed (the compute stream waited) and hidden,
// and the compute time lost to the SMs they held.
[[nodiscard]] nlohmann::ordered_json communication_summary(const RunResult& r);
// The summary table's collectives line of communication_summary `c` (empty without collectives).
[[nodiscard]] std::string collectives_line(const nlohmann::ordered_json& c, int micro_batches);

// What every results.json and summary starts with: schema, version, scenario sha256, scenario,
// seed; the summary's model, hardware and calibration; its expert load, GPUs and parallelism; the
// summary table's first two lines ("NAME: WHAT MODEL on N x HW (layout)" and the hardware's
// calibration).
[[nodiscard]] nlohmann::ordered_json results_head(const Scenario& s, const std::string& version,
                                                  const std::string& scenario_sha256);
void add_machine(nlohmann::ordered_json& summary, const Scenario& s);
void add_layout(nlohmann::ordered_json& summary, const Scenario& s, const RunResult& r);
[[nodiscard]] std::string run_title(const Scenario& s, const RunResult& r, const std::string& what);

// results.json's "steps" (per step: context, time, categories, collectives) and "layers" (per
// layer, mean per step and GPU: time by category, FLOPs, HBM bytes, offload).
[[nodiscard]] nlohmann::ordered_json steps_json(const RunResult& r);
[[nodiscard]] nlohmann::ordered_json layers_json(const Scenario& s, const RunResult& r);

// The whole results document. `version` is ess-sim's version; `scenario_sha256` identifies the
// resolved scenario (the text `ess-sim check` prints).
[[nodiscard]] nlohmann::ordered_json results_json(const Scenario& s, const RunResult& r, const std::string& version,
                                                  const std::string& scenario_sha256);

// The human summary printed by `ess-sim run`.
[[nodiscard]] std::string results_table(const Scenario& s, const RunResult& r);

}  // namespace ess
