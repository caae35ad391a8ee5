// One simulation run: a run request (sim/config/run_request.h) in, per-step and per-layer timings,
// memory and a trace out.
//
// Simulation::run prepares (preflight, the step graph, the offload cache behaviour:
// offload_source.h), runs the SimGrid engine (engine_actors.h, the only code owning a SimGrid
// engine) and collects what it reports through recorders (recorder.h, recorders.h). SimGrid allows
// one engine per process at a time and keeps global state across engines, so a Simulation is run
// once, and a process should run one Simulation (the CLI does; tests that run several use relative
// times only).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/run_request.h"
#include "sim/engine/preflight.h"
#include "sim/graph/op.h"
#include "sim/io/chrome_trace.h"
#include "sim/memory/memory_plan.h"

namespace ess {

struct SimulationOptions {
  SimulationOptions() = default;
  SimulationOptions(std::int64_t steps_, int trace_steps_, ResourceLimits limits_ = {})
      : steps(steps_), trace_steps(trace_steps_), limits(limits_) {}

  std::int64_t steps = 0;  // 0: the run's workload.decode_steps (prefill: its prefill.steps)
  int trace_steps = 2;     // steps recorded in the Chrome trace (0: none)
  ResourceLimits limits;   // runs estimated above them are refused (ResourceError) before they start
  // Offload with the synthetic access model: where cache-simulation results are shared between
  // runs (sim/engine/access_store.h); empty: none, the cache simulation always runs.
  std::filesystem::path access_store;
  // Uncontended work without SimGrid activities: compute segments while no transfer of the GPU is
  // in flight, and all-to-all port flows with one micro-batch (each alone on its link), timed as
  // SimGrid would time them (they agree to ~1e-6 relative: SimGrid rounds its own clock). false
  // runs every segment and flow in SimGrid; tests compare the two.
  bool fast_paths = true;
  // Records this GPU's time per op and kernels per category, each step (RunResult::op_times), as
  // the GPU runner records its run; for `ess-sim validate`. nullopt: not recorded.
  std::optional<int> record_ops_of_gpu;
};

// What one GPU did in one step. `busy` is time in each operator category; `wait` is time spent
// waiting for the other GPUs of a collective to arrive.
struct GpuStepTimes {
  double start = 0.0;  // seconds since the start of the run
  double end = 0.0;
  // `transfers` = exposed fetch time + compute time lost to gather kernels; `collectives` =
  // exposed collective time + compute time lost to collectives holding SMs.
  CategoryTimes busy{};
  double wait = 0.0;
  // Offload: miss fetches of this step. transfer = fetch durations; exposed = the part the
  // compute stream waited for; hidden = transfer - exposed; lost = compute slowed by gathers.
  double transfer = 0.0;
  double exposed = 0.0;
  double lost_to_gather = 0.0;
  double writeback_wait = 0.0;  // waiting at the end of the step for write-backs to finish
  // Prefetch: transfer = prefetch durations (from the engine starting one to its end); wait = the
  // part the compute stream waited for (exposed, in `busy` as transfers); late = prefetches not
  // there when their layer needed them. fetch_queue_wait: on-demand fetches' time queued behind
  // other transfers of this GPU before they started.
  double prefetch_transfer = 0.0;
  double prefetch_wait = 0.0;
  int prefetch_late = 0;
  int prefetches = 0;
  double fetch_queue_wait = 0.0;
  // Collectives (all-to-alls, all-reduces), both micro-batches: comm = from arriving at the
  // collective to its end, summed; comm_exposed = the part the compute stream waited for. Without
  // two-batch overlap every collective is exposed; hidden = comm - comm_exposed.
  // lost_to_collectives: compute slowed by the SMs collectives held beside it (the prefill
  // all-to-all under two-batch overlap).
  double comm = 0.0;
  double comm_exposed = 0.0;
  double lost_to_collectives = 0.0;
  // The compute stream's time by the calibrated parameter set that priced it (models/cost.h):
  // kernels by their own set, exposed collectives and compute lost to their SMs by theirs, exposed
  // transfers and compute lost to gathers by the PCIe path's. What the calibration bands
  // propagate through (sim/metrics/bands).
  std::array<double, kParamSetCount> by_params{};
};

struct LayerTimes {
  std::string kind;   // "dense", "moe", "mtp", or "head" for embedding and LM head
  CategoryTimes busy{};  // summed over steps and GPUs
  double wait = 0.0;     // summed over steps and GPUs
  Flops flops;           // summed over steps and GPUs
  Bytes bytes;
  // Offload: misses and hits per offloaded request summed over steps; bytes and times summed over
  // steps and GPUs.
  double misses = 0.0;
  double misses_var = 0.0;  // sum of squared standard errors
  double hits = 0.0;
  double h2d_bytes = 0.0;
  double d2h_bytes = 0.0;
  double transfer = 0.0;
  double exposed = 0.0;
  double lost_to_gather = 0.0;
  // Prefetch (per offloaded request summed over steps: entries; per GPU summed over steps and
  // GPUs: bytes and times).
  double fetch_queue_wait = 0.0;  // on-demand fetches queued behind other transfers (part of exposed)
  double prefetched = 0.0;       // entries prefetched
  double prefetch_used = 0.0;    // of them, used by the selection
  double prefetch_bytes = 0.0;   // of h2d_bytes
  double prefetch_transfer = 0.0;
  double prefetch_wait = 0.0;    // exposed
  int prefetch_late = 0;
  int prefetches = 0;
  // Per registered overlap policy (sim/offload/overlap.h, registry order): steps it ran (auto
  // resolved, so choosers stay 0).
  std::vector<int> overlap_steps;
};

// One GPU's step as the GPU runner (kernels/runner) traces it: seconds per op name, summed over
// the step's layers (compute-stream kernels by op name, on-demand fetches by their segment's label,
// "prefetch", "writeback"; waits are not ops), the compute-stream kernels per category, and the
// model layers its segments name (the highest layer + 1).
struct StepOpTimes {
  std::map<std::string, double> seconds;
  std::array<std::size_t, kOpCategoryCount> kernels{};
  int layers = 0;
};

struct RunResult {
  // "read" or "written" when SimulationOptions::access_store was used, else empty. Not in
  // results.json: a run fed from the store writes the same file as one that computed it.
  std::string access_store;
  std::int64_t batch_per_gpu = 0;
  int gpus = 0;
  std::int64_t steps = 0;
  MemoryBudget memory;
  std::vector<std::int64_t> step_context;         // cached tokens per request at each step's start
  std::vector<double> step_time;                  // per step: latest GPU end minus previous latest end
  std::vector<std::vector<GpuStepTimes>> gpu_steps;  // [step][gpu]
  std::vector<LayerTimes> layers;                 // model layers, MTP modules, then "head"
  std::uint64_t activities = 0;                   // SimGrid activities created (execs, comms, sleeps)
  bool offload = false;                           // cache.mode "offload"
  std::vector<double> step_h2d_bytes;             // offload: per step, all GPUs
  std::vector<double> step_d2h_bytes;
  ChromeTrace trace;                               // steps [0, SimulationOptions::trace_steps)
  std::vector<StepOpTimes> op_times;              // SimulationOptions::record_ops_of_gpu: per step
};

// The seed of the synthetic access model (sim/offload/synthetic_access.h) a scenario with this
// seed uses; `ess-sim validate --prepare` records the same selections for the GPU runner.
[[nodiscard]] std::uint64_t synthetic_access_seed(std::uint64_t scenario_seed);
// The seed of the prefetch predictors (sim/offload/prefetch.h) of a scenario with this seed.
[[nodiscard]] std::uint64_t predictor_seed(std::uint64_t scenario_seed);

class Simulation {
 public:
  // The request's system (a Scenario) must outlive the Simulation.
  Simulation(RunRequest request, SimulationOptions options);
  // The scenario's own run: run_request(scenario).
  Simulation(const Scenario& scenario, SimulationOptions options);
  // A decode run: preflight() (the batch, CapacityError if it does not fit, the cost of every
  // operator, a replay trace's coverage, the resource limits), then every step. A prefill run:
  // prefill steps (sim/graph/prefill_step.h), its preflight pricing the first (the decode batch and
  // memory plan do not apply; result.memory stays empty). Call once. An error raised while
  // simulating ends the run and is rethrown here.
  [[nodiscard]] RunResult run();

 private:
  [[nodiscard]] RunResult run_decode(const DecodeRun& run);
  [[nodiscard]] RunResult run_prefill(const PrefillRun& run);
  RunRequest request_;
  SimulationOptions options_;
  bool ran_ = false;
};

}  // namespace ess
