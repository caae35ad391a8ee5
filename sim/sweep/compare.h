// Comparing scenarios that differ in policy with common random numbers: every scenario runs with
// the same seeds (all of ess-sim's random streams are forked from the scenario's seed alone), so
// per seed the runs see the same MoE routing, top-k selections and arrivals, and the per-seed
// difference B - A is a paired sample whose spread is the policy's, not the seeds'. The statistics
// (means, paired differences and their Student-t confidence intervals), the metrics of a
// results.json, the resolved-scenario paths two scenarios differ in, and the table and JSON of a
// comparison. No processes: `ess-sim compare` (sim/cli/cmd_compare.cpp) runs the simulations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

// The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1] (continued
// fraction, Numerical Recipes 3rd ed. section 6.4); InternalError outside.
[[nodiscard]] double regularized_incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with `dof` > 0 degrees of freedom: 1 - I_{dof / (dof + t^2)}(dof / 2, 1 / 2) / 2
// for t >= 0, by symmetry below.
[[nodiscard]] double student_t_cdf(double t, double dof);
// The t with student_t_cdf(t, dof) = p, p in (0, 1), by bisection to 1e-12 relative;
// InternalError outside. t(0.975, 1) = 12.706, t(0.975, 30) = 2.042.
[[nodiscard]] double student_t_quantile(double p, double dof);

// The paired difference b - a over seeds (a[i] and b[i] from the same seed; a NaN in either drops
// the pair). ci_low/ci_high: mean -+ t((1 + confidence) / 2, n - 1) * sd / sqrt(n) with the sample
// standard deviation (n - 1 divisor); NaN with fewer than two pairs. relative: mean / |mean of a|
// (0 when both are 0, NaN when only a's is). significant: the interval excludes 0.
struct PairedDifference {
  std::size_t n = 0;
  double mean = 0.0;
  double ci_low = 0.0;
  double ci_high = 0.0;
  double relative = 0.0;
  bool significant = false;
};
[[nodiscard]] PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b,
                                                 double confidence);

// The metrics of a results.json: every number (not a boolean) reachable through objects, as its
// dotted path ("summary.step_time_s.mean"), in document order. Arrays (per-step and per-layer
// lists) are skipped, and so is the top-level "seed", which is the run's input.
[[nodiscard]] std::vector<std::pair<std::string, double>> result_metrics(const nlohmann::ordered_json& results);

// The JSON pointers of the values two resolved scenarios (Scenario::resolved, each leaf
// {"value", "source"}) differ in, sources ignored: in a's key order, each object's keys only b
// has after a's. The free-text /name and /description are left out.
[[nodiscard]] std::vector<std::string> resolved_differences(const nlohmann::ordered_json& a,
                                                            const nlohmann::ordered_json& b);
// Whether a pointer lies under /cache, /serving or /execution: the policy-like sections a
// comparison of policies is expected to differ in.
[[nodiscard]] bool is_policy_path(const std::string& pointer);

struct ComparedScenario {
  std::string label;  // "A", "B", ... (table columns)
  std::string file;
  std::vector<std::string> differs;  // resolved_differences from the first scenario
};

struct MetricComparison {
  std::string name;
  std::vector<std::vector<double>> samples;  // [scenario][seed]; NaN where that run lacks the metric
  std::vector<double> means;                 // per scenario, over the seeds that have it (NaN: none)
  std::vector<PairedDifference> diffs;       // scenario i + 1 minus the first
};

struct Comparison {
  std::vector<std::uint64_t> seeds;
  std::vector<ComparedScenario> scenarios;
  double confidence = 0.95;
  std::int64_t steps = 0;  // decode steps per run (0: each scenario's own)
  std::vector<MetricComparison> metrics;  // those that differ between some two runs
  // Metrics equal in every run (the GPU count, HBM capacity, ...): named once, not compared.
  std::vector<std::pair<std::string, double>> constants;
};

// "A".."Z", then "S27", "S28", ...
[[nodiscard]] std::string scenario_label(std::size_t index);

// Builds the comparison from results[scenario][seed] (the results.json of each run). Metrics are
// in the order they first appear (first scenario and seed first); a metric a run lacks is NaN
// there. `scenarios` gives the labels, files and differences.
[[nodiscard]] Comparison compare_results(std::vector<ComparedScenario> scenarios, std::vector<std::uint64_t> seeds,
                                         const std::vector<std::vector<nlohmann::ordered_json>>& results,
                                         double confidence, std::int64_t steps);

// {"seeds", "scenarios" (files), "labels", "confidence", "steps", "differs" {label: [pointers]}
// for the scenarios after the first, "metrics": [{"name", "values" (means), "samples", "diffs":
// [{"n", "mean", "ci_low", "ci_high", "relative", "significant"}]}], "constants" {name: value}};
// NaN is null.
[[nodiscard]] nlohmann::ordered_json comparison_json(const Comparison& c);
// The side-by-side table: metric | A | B | B-A | CI | rel | C | C-A | ..., a legend naming each
// scenario's file and differences, and the constants. A difference whose CI excludes 0 has a '*'.
[[nodiscard]] std::string comparison_table(const Comparison& c);

}  // namespace ess
