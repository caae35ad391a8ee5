// Capacity-planning searches over the simulator: each probe is a real `ess-sim run` of the scenario
// (a child process, as sweep points are), never a formula.
//  - max_batch: the largest batch per GPU whose P99 step time, or TPOT, meets a target. Bisection
//    between batch 1 and the largest batch that fits in memory: it assumes the latency does not
//    fall as the batch grows (true of every cost the simulator has; the brute-force test checks it
//    on a grid).
//  - min_gpus: the fewest GPUs (nodes of the scenario's GPU count) whose total throughput reaches a
//    target, the layout scaled with the nodes (DP attention and EP over every GPU when the scenario
//    spreads them over all; TP kept). Doubling, then bisection; it assumes the throughput does not
//    fall as nodes are added.
//  - fit_advice: when a scenario does not fit in GPU memory, what would (the largest batch, the
//    largest pool ratio, the GPU-only cache's alternative, the smallest EP or TP degree), from the
//    memory plan alone (no simulation needed).
//  - pareto_table: the throughput-latency front of a sweep ledger, ranked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/ledger.h"

namespace ess {

struct Scenario;

struct SearchContext {
  std::string executable;            // the ess-sim binary the probes run
  std::string scenario;              // scenario file, as given
  std::vector<std::string> sets;     // the user's --set overrides, applied to every probe
  std::int64_t steps = 0;            // decode steps per probe (0: the scenario's)
  std::filesystem::path work_dir;    // probes' output files (created, emptied afterwards)
  std::ostream* progress = nullptr;  // one line per probe (null: silent)
};

// One probe: what was changed, what came back, the value compared with the target.
struct SearchProbe {
  std::vector<std::string> sets;  // the probe's own overrides (after the user's)
  PointOutcome outcome;
  double value = std::numeric_limits<double>::quiet_NaN();  // the searched metric (NaN if not ok)
  bool meets = false;
};

struct SearchResult {
  std::string question;  // what was searched, in words with units
  bool found = false;
  std::int64_t answer = 0;  // batch per GPU (max_batch) or GPUs (min_gpus)
  std::string bound;        // what limits the answer: "target", "memory", "search range"
  std::string message;      // why nothing was found, or a remark on the answer
  // Whether the answer lies inside the calibration band (results.json summary.band): the target
  // within one sigma of the answer's value, or of its neighbour's that missed; empty when not found.
  std::string band;
  std::vector<std::string> answer_sets;  // the overrides of the answer's probe
  nlohmann::ordered_json answer_summary;  // its results.json summary
  std::vector<SearchProbe> probes;        // in the order they ran
};

enum class LatencyTarget { p99_step_time, tpot };

// Largest batch per GPU with P99 step time (or TPOT = mean step time / accepted tokens per step)
// <= target_s. Throws ConfigError for a scenario that cannot run at all (not out of memory).
[[nodiscard]] SearchResult search_max_batch(const SearchContext& context, LatencyTarget metric, double target_s);

// Fewest GPUs with total tokens/s >= target, over 1 .. max_nodes nodes.
[[nodiscard]] SearchResult search_min_gpus(const SearchContext& context, double tokens_per_s, int max_nodes);

struct FitSuggestion {
  std::string what;               // in words
  std::vector<std::string> sets;  // the overrides that make it fit
};
struct FitAdvice {
  bool fits = false;
  std::int64_t batch_per_gpu = 0;  // the scenario's batch when it fits (resolved "max" included)
  std::string budget;              // the memory budget message when it does not
  std::vector<FitSuggestion> suggestions;
};
// `overrides` in --set form. Throws ConfigError for a bad scenario.
[[nodiscard]] FitAdvice fit_advice(const std::string& scenario, const std::vector<std::string>& overrides,
                                   int max_nodes);

// The Pareto front of a ledger's ok points (tokens/s per GPU up, TPOT down): the front's records
// ranked by tokens/s per GPU, highest first, at most `top` (0: all). ConfigError when the ledger
// lacks the two metrics (names the spec metrics to add).
struct ParetoRow {
  std::size_t point = 0;
  double tokens_per_s_per_gpu = 0.0;
  double tpot_s = 0.0;
  nlohmann::ordered_json record;
};
struct ParetoTable {
  std::size_t ok_points = 0;
  std::size_t front_points = 0;
  std::vector<ParetoRow> rows;
};
[[nodiscard]] ParetoTable pareto_table(const std::vector<nlohmann::ordered_json>& records, std::size_t top,
                                       const std::string& origin);

}  // namespace ess
