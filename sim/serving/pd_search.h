// `ess-sim search pd`: for a disaggregated serving scenario's workload and SLOs, the fewest GPUs
// that serve it, over decode node counts and prefill instances, against the colocated
// alternative (the decode nodes prefilling their own prompts in chunks).
//
// On each decode node count (the scenario's layout scaled: scaled_layout) the step tables are
// built once and the prefill pool is run with 1, 2, ... instances until every request completes
// and `attainment` of them meet serving.slo; with `colocated` the same nodes also try prefilling
// their own prompts (`colocated_tokens` per GPU per step). The answer is the fewest GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"

namespace ess {

struct PdSearch {
  std::string scenario;
  std::vector<std::string> sets;
  int max_instances = 16;
  double attainment = 0.9;
  std::vector<int> decode_nodes;  // empty: the scenario's
  bool colocated = false;
  std::int64_t colocated_tokens = kColocatedTokensPerGpu;
  ResourceLimits limits;  // each probe's preflight (serving_preflight.h); --allow-large lifts them
};

struct PdSearchResult {
  Scenario base;  // the scenario as the user's overrides load it
  // What `search pd --json` prints: scenario, attainment, decode_nodes_tried, found, answer,
  // prefill_instances, why_not, probes, colocated, notes.
  nlohmann::ordered_json doc;
  bool found = false;
};

// ConfigError when the scenario is not a disaggregated serving scenario or names no SLO.
[[nodiscard]] PdSearchResult search_pd(const PdSearch& q);

// A latency statistic of a probe row, NaN when no request completed (results.json holds null).
[[nodiscard]] double pd_statistic(const nlohmann::ordered_json& v);

}  // namespace ess
