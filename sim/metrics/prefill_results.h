// What a prefill run gives users: results.json (same schema, "phase": "prefill") and the summary
// `ess-sim run` prints. Prefill throughput counts prompt tokens: tokens_per_gpu new tokens per GPU
// each step (a TP replica shares tp x tokens_per_gpu), divided by the mean step time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"

namespace ess {

// Prompt tokens per second per GPU of a prefill run.
[[nodiscard]] double prefill_tokens_per_s_per_gpu(const PrefillRun& run, const RunResult& r);

[[nodiscard]] nlohmann::ordered_json prefill_results_json(const Scenario& s, const RunResult& r, const std::string& version,
                                                          const std::string& scenario_sha256);

[[nodiscard]] std::string prefill_results_table(const Scenario& s, const RunResult& r);

}  // namespace ess
