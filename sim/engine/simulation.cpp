#include "sim/engine/simulation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"
#include "sim/base/op_names.h"
#include "sim/engine/engine_actors.h"
#include "sim/engine/offload_source.h"
#include "sim/engine/recorders.h"
#include "sim/engine/step_plans.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/prefill_step.h"
#include "sim/base/rng.h"

namespace ess {

namespace {

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// An empty result of the right shape for the recorders: per step and GPU, per layer.
RunResult empty_result(Preflight& checked, bool offload) {
  RunResult result;
  result.batch_per_gpu = checked.batch_per_gpu;
  result.memory = std::move(checked.memory);
  result.offload = offload;
  result.steps = checked.steps;
  return result;
}

template <class Builder>
void shape_result(RunResult& result, const Builder& builder) {
  result.gpus = builder.gpus();
  result.step_context.assign(idx(result.steps), 0);
  result.gpu_steps.assign(idx(result.steps), std::vector<GpuStepTimes>(static_cast<std::size_t>(result.gpus)));
  for (int l = 0; l <= builder.layer_count(); ++l) {
    LayerTimes layer;
    layer.kind = l < builder.layer_count() ? std::string(builder.layer_kind(l)) : std::string(layerkind::head);
    result.layers.push_back(std::move(layer));
  }
  result.step_h2d_bytes.assign(idx(result.steps), 0.0);
  result.step_d2h_bytes.assign(idx(result.steps), 0.0);
}

// Each step's time (the latest GPU's end minus the previous step's), checked: bounded inputs give
// finite, positive times; anything else is a bug, never a result to print.
void step_times(RunResult& result) {
  for (std::size_t s = 0; s < result.gpu_steps.size(); ++s) {
    double end = 0.0;
    for (const auto& g : result.gpu_steps[s]) end = std::max(end, g.end);
    double previous = 0.0;
    if (s > 0) {
      for (const auto& g : result.gpu_steps[s - 1]) previous = std::max(previous, g.end);
    }
    result.step_time.push_back(end - previous);
  }
  for (std::size_t s = 0; s < result.step_time.size(); ++s) {
    if (!std::isfinite(result.step_time[s]) || result.step_time[s] <= 0.0) {
      throw InternalError("step " + std::to_string(s) + " took " + std::to_string(result.step_time[s]) +
                          " s of simulated time (expected a finite, positive duration)");
    }
  }
}

}  // namespace

std::uint64_t synthetic_access_seed(std::uint64_t scenario_seed) {
  // Random stream of the synthetic access model, separate from the MoE routing streams.
  constexpr std::uint64_t kAccessStream = 0xACCE55;
  return Rng(scenario_seed).fork(kAccessStream).next();
}

std::uint64_t predictor_seed(std::uint64_t scenario_seed) {
  // Random stream of the prefetch predictors (those that draw), separate from the others.
  constexpr std::uint64_t kPredictorStream = 0x9E7C4;
  return Rng(scenario_seed).fork(kPredictorStream).next();
}

Simulation::Simulation(const Scenario& scenario, SimulationOptions options)
    : Simulation(run_request(scenario), options) {}

Simulation::Simulation(RunRequest request, SimulationOptions options) : request_(std::move(request)), options_(options) {
  if (options_.steps < 0) throw InternalError("Simulation: steps must be >= 0");
  if (options_.trace_steps < 0) throw InternalError("Simulation: trace_steps must be >= 0");
  if (options_.record_ops_of_gpu && *options_.record_ops_of_gpu < 0) {
    throw InternalError("Simulation: record_ops_of_gpu must be >= 0");
  }
}

RunResult Simulation::run() {
  if (ran_) throw InternalError("Simulation::run called twice");
  ran_ = true;
  if (const auto* prefill = std::get_if<PrefillRun>(&request_)) return run_prefill(*prefill);
  return run_decode(std::get<DecodeRun>(request_));
}

RunResult Simulation::run_decode(const DecodeRun& run) {
  const Scenario& scenario = *run.system;
  // Preparation: what fits, the step graph, where the offload cache behaviour comes from.
  Preflight checked = preflight(run, options_.steps, options_.trace_steps, options_.limits);
  RunResult result = empty_result(checked, run.offload());
  const auto& placement = result.memory.placement;
  const DecodeStepBuilder builder(run, result.batch_per_gpu, result.offload ? placement.offloaded : 0,
                                  placement.cold_fraction);
  shape_result(result, builder);
  if (options_.record_ops_of_gpu && *options_.record_ops_of_gpu >= result.gpus) {
    throw InternalError("Simulation: record_ops_of_gpu is " + std::to_string(*options_.record_ops_of_gpu) +
                        ", the run has " + std::to_string(result.gpus) + " GPUs");
  }
  OffloadSource offload(run, builder, result.steps, options_.access_store, std::move(checked.access));
  PlanCache plans(builder, scenario.seed, result.gpus, offload.access());

  // The recorders, then the engine.
  RecorderSet recorders;
  AccountingRecorder accounting(result);
  recorders.add(accounting);
  TraceRecorder trace(result.trace, result.gpus, result.offload, scenario.execution.micro_batches, options_.trace_steps);
  recorders.add(trace);
  std::optional<OpTimesRecorder> op_times;
  if (options_.record_ops_of_gpu) {
    result.op_times.assign(idx(result.steps), StepOpTimes{});
    recorders.add(op_times.emplace(result.op_times, *options_.record_ops_of_gpu));
  }
  result.activities = run_engine(run, result.offload, plans, result.steps, options_.fast_paths, recorders).activities;

  result.access_store = offload.finish(result.steps);
  step_times(result);
  return result;
}

RunResult Simulation::run_prefill(const PrefillRun& run) {
  if (options_.record_ops_of_gpu) throw InternalError("Simulation: op times are recorded for decode runs only");
  const Scenario& scenario = *run.system;
  RunResult result;
  result.steps = options_.steps > 0 ? options_.steps : run.work.steps;
  enforce_limits(estimate_prefill_resources(run, result.steps), options_.limits);
  const PrefillStepBuilder builder(run);
  shape_result(result, builder);
  const std::vector<PrefillPiece> pieces = run_pieces(run);
  PlanCache plans([&builder, &pieces](int step, Rng& rng) { return builder.build(step, pieces, rng); }, scenario.seed,
                  result.gpus);
  // Price the first step before the engine starts: a cost model that cannot price an operator
  // (a GPU without the model's dtype) fails here, as preflight makes decode runs fail.
  (void)plans.get(0);
  RecorderSet recorders;
  AccountingRecorder accounting(result);
  recorders.add(accounting);
  TraceRecorder trace(result.trace, result.gpus, false, scenario.execution.micro_batches, options_.trace_steps);
  recorders.add(trace);
  result.activities = run_engine(run, false, plans, result.steps, options_.fast_paths, recorders).activities;
  step_times(result);
  return result;
}

}  // namespace ess
