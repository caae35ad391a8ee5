// Simulated versus real: per decode step and per operator category, the relative error
// (simulated - real) / real, summarised as median, p95, max and signed bias (models/fit.h).
//
// Alignment is by step index and category: step s of the trace against simulated step s (the
// simulation runs exactly as many steps as the trace holds), GPU 0 of the simulation (the runner
// is one GPU). Categories: gemm, norm, indexer, attention, elementwise (summed kernel time),
// transfer (summed fetch time, hidden or not), exposed_wait (time the compute stream waited for
// fetches), and the step time itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/fit.h"
#include "sim/config/scenario.h"
#include "validate/trace.h"

namespace ess {

struct CategoryError {
  ValidationCategory category = ValidationCategory::gemm;
  ErrorSummary errors;             // over the steps where the real time is > 0
  std::size_t steps_compared = 0;  // = errors.points
  std::size_t only_simulated = 0;  // steps where the trace has none of it but the simulation has some
  double real_total = 0.0;         // seconds over all compared steps
  double simulated_total = 0.0;
};

struct StepComparison {
  std::size_t step = 0;
  double real = 0.0;
  double simulated = 0.0;
  double error = 0.0;  // (simulated - real) / real
};

// One operation (by the name the runner and the simulator share, e.g. "q_b", "sparse_mla"),
// summed over every layer and step.
struct OpComparison {
  std::string name;
  double real = 0.0;       // seconds
  double simulated = 0.0;  // seconds
  double error = 0.0;      // (simulated - real) / real; 0 when real is 0
};

struct ValidationReport {
  std::vector<StepComparison> steps;
  std::vector<OpComparison> ops;  // ess-runner traces only; largest real time first
  ErrorSummary step_errors;
  std::vector<CategoryError> categories;  // categories present in the trace or the simulation
  double threshold = 0.03;
  bool passed = false;  // step_errors.median_abs <= threshold
};

// InputError unless 1 <= steps <= workload.decode_steps: a trace of more steps than the
// scenario decodes cannot be its run.
void check_trace_steps(const Scenario& scenario, std::int64_t steps);

// The simulation's profile of `steps` decode steps of the scenario (GPU 0), with each step's shape
// (ops per category, layers); check_trace_steps first.
[[nodiscard]] std::vector<StepProfile> simulated_profile(const Scenario& scenario, std::int64_t steps);

// The same, with the time per op name per step: GPU 0's ops as the simulation's per-op recorder
// saw them (SimulationOptions::record_ops_of_gpu, StepOpTimes: compute-stream kernels, fetches by
// their segment's label, "prefetch" and "writeback", each summed over the layers).
struct SimulatedRun {
  std::vector<StepProfile> steps;
  std::vector<std::map<std::string, double>> ops;
};
[[nodiscard]] SimulatedRun simulate_for_validation(const Scenario& scenario, std::int64_t steps);

// Per-op comparison of two runs of the same length (names in either; sorted by real time, then name).
[[nodiscard]] std::vector<OpComparison> compare_ops(const std::vector<std::map<std::string, double>>& real,
                                                    const std::vector<std::map<std::string, double>>& simulated);

// Compares two profiles of the same length (InternalError otherwise, or if empty: the callers
// check the steps first; InputError if a real step time is not > 0). Pure: no simulation, no files.
// Also InputError (the CLI's exit 2) when a real step cannot be the simulated one: a
// different number of layers, different GEMM or norm op counts (ess-runner traces, whose ops are
// the simulator's), or GEMM kernel counts more than a factor 4 from the simulation's GEMM ops
// (Kineto traces, where libraries split and fuse kernels). Shapes not recorded (0) are not checked.
[[nodiscard]] ValidationReport compare_profiles(const std::vector<StepProfile>& real,
                                                const std::vector<StepProfile>& simulated, double threshold);

[[nodiscard]] std::string format_validation_report(const ValidationReport& r, const MeasuredTrace& trace);
[[nodiscard]] nlohmann::ordered_json validation_json(const ValidationReport& r, const MeasuredTrace& trace);

}  // namespace ess
