// Building the step-time table of a serving run from real Simulation runs (sim/engine): one run
// of a few decode steps per grid point, every GPU at the point's batch and every request at its
// context. With table_checks.h (the direct runs `bench` compares against), the only part of
// sim/serving that runs SimGrid.
//
// Each point is a DecodeRun of the scenario (sim/config/run_request.h) whose memory does not bound
// it (MemoryBound::unbounded: step time does not depend on the capacities, only on bandwidths and
// compute) and, in offload mode, with every request offloaded; a second table in the GPU cache mode
// prices GPU-only requests when memory protection can keep some GPU-only. Runs in one process share SimGrid's clock, whose
// rounding moves times by ~1e-16 relative between the first and a later run; results depend on
// the runs only through the table, built in the same order every time, so they stay
// byte-identical for the same binary, scenario and seed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "sim/config/run_request.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/step_table.h"

namespace ess {

struct TableGrid {
  std::vector<std::int64_t> batches;
  std::vector<std::int64_t> contexts;
};

// The table's grid: serving.table's lists, or automatically batches 1 (2 with two micro-batches),
// 2, 4, ... up to the bound (for a closed loop at most ceil(concurrency / attention replicas)),
// the bound, and both sides of the engine's largest captured CUDA graph,
// and contexts from the shortest prompt to the longest prompt + output (plus their geometric
// middle when they differ by more than 25%).
[[nodiscard]] TableGrid table_grid(const Scenario& s, const ServingMemory& memory, const std::vector<Request>& requests);

// A grid point as the decode run that prices it: the scenario's system with every GPU at `batch`
// requests of `context` cached tokens for `steps` steps, memory unbounded (MemoryBound::unbounded),
// every request offloaded or none. `chunk`: every step also prefills this prompt chunk per GPU
// (workload.prefill_chunk).
[[nodiscard]] DecodeRun table_point_run(const Scenario& s, bool offload, std::int64_t batch, std::int64_t context,
                                        std::int64_t steps, std::optional<PrefillChunk> chunk = std::nullopt);

// One point: mean step time and utilisation (busy compute over the step, mean over GPUs and
// steps: GEMMs, attention, indexer, norms, elementwise and collectives; not the waits for
// fetches, the host time or the idle) of the run's decode steps, run without resource limits (serving's
// preflight vetted the table). `access_store` (offload, optional): where points that differ only in
// batch share their cache simulation (sim/engine/access_store.h): its result does not depend on the batch.
[[nodiscard]] StepPoint measure_point(const DecodeRun& run, const std::filesystem::path& access_store = {});

// The runs of a step model, each table's points batch-major: offloaded when the scenario offloads,
// and GPU-only when memory protection can keep requests so (or the scenario does not offload).
// What build_step_model runs and serving's preflight prices.
struct StepModelRuns {
  std::vector<DecodeRun> offload;
  std::vector<DecodeRun> gpu;
};
[[nodiscard]] StepModelRuns step_model_runs(const Scenario& s, const ServingMemory& memory, const TableGrid& grid);

// Every run of step_model_runs measured; the offload points share one cache simulation per context
// through an access store in a private temporary directory, removed afterwards.
[[nodiscard]] StepModel build_step_model(const Scenario& s, const ServingMemory& memory, const TableGrid& grid);

// The prefill step table of a disaggregated run (prefill_pool.h): step time at (tokens per GPU,
// prompt length) of one prefill instance, one Simulation step per point. Tokens: 256, 512, ... up
// to serving.prefill.tokens_per_gpu (and it); prompt lengths: the shortest and longest prompt and
// geometric points between them at most a factor 2 apart.
[[nodiscard]] TableGrid prefill_table_grid(const Scenario& s, const std::vector<Request>& requests);
// Its runs, tokens-major: one prefill instance (prefill_instance_run) per point.
[[nodiscard]] std::vector<PrefillRun> prefill_table_runs(const Scenario& s, const TableGrid& grid);
[[nodiscard]] StepTable build_prefill_table(const Scenario& s, const TableGrid& grid);

// The chunk model of a colocated run (step_table.h ChunkModel): chunk tokens per GPU 256, 512, ...
// up to serving.prefill.tokens_per_gpu (and it); cached tokens 0 and from the budget up to the
// longest prompt, at most a factor 2 apart. Its slices: every other batch of the decode table's
// grid from its smallest, and its largest; the first slice at every cached point, the others at
// the middle one; every point at the requests' mean context (prompt plus half the output), in the
// scenario's cache mode (all offloaded under ESS), sharing one cache simulation.
[[nodiscard]] TableGrid chunk_table_grid(const Scenario& s, const std::vector<Request>& requests);
// The chunk model's runs: per slice a reference step without a chunk, then its chunk points
// (tokens-major over `cached`).
struct ChunkSliceRuns {
  std::int64_t batch = 1;
  std::vector<std::int64_t> cached;
  DecodeRun reference;
  std::vector<DecodeRun> points;
};
struct ChunkModelRuns {
  std::int64_t context = 1;  // every run's
  std::vector<ChunkSliceRuns> slices;
};
[[nodiscard]] ChunkModelRuns chunk_model_runs(const Scenario& s, const ServingMemory& memory, const TableGrid& decode_grid,
                                              const TableGrid& grid, const std::vector<Request>& requests);
[[nodiscard]] ChunkModel build_chunk_model(const Scenario& s, const ServingMemory& memory, const TableGrid& decode_grid,
                                           const TableGrid& grid, const std::vector<Request>& requests);

}  // namespace ess
