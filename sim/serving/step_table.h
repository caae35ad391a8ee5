// The step-time table of a serving run: decode-step time and GPU utilisation at a grid of
// (requests per GPU, context) points, measured by full Simulation runs (table_builder.h), and
// interpolated in between (linear in the context; along the batch, where the grid doubles, the
// mean of the parabolas through the cell and each neighbouring point: StepTable::at_quadratic).
// Pure data and arithmetic: tests build tables by hand.
//
// Why a table: a serving period of 10 minutes is ~10^4-10^5 decode steps with a different batch
// and contexts each; one SimGrid run of a step costs milliseconds to seconds. Step time is close
// to affine in the batch (GEMM weight reads, then per-request attention and MoE work) and in the
// context (indexer scoring), so linear interpolation between grid points is accurate; the bench
// measures the error at the cells' midpoints against direct runs (sim/README.md, "Serving").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ess {

struct StepPoint {
  double time = 0.0;         // seconds per decode step
  double utilization = 0.0;  // busy compute fraction of the step, mean over GPUs, in [0, 1]
  // One sigma of `time` by the hardware's calibration band (sim/engine/step_band.h), seconds; 0
  // on uncalibrated hardware. Interpolated like the time.
  double sigma = 0.0;
};

class StepTable {
 public:
  StepTable() = default;
  // `points` row-major: points[i * contexts.size() + j] at (batches[i], contexts[j]). Both axes
  // strictly increasing and non-empty; InternalError otherwise.
  StepTable(std::vector<std::int64_t> batches, std::vector<std::int64_t> contexts, std::vector<StepPoint> points);

  // Bilinear in (batch, context); outside the grid the nearest edge value (clamped).
  [[nodiscard]] StepPoint at(double batch, double context) const;
  // The same, but along the batch axis inside the grid the mean of the two parabolas through the
  // cell's points and the point below it, and through them and the point above it (one of them at
  // the grid's ends; only through three points spaced geometrically, else linear): step time bends
  // where weight reads give way to per-request work, and a prompt chunk's time grows with the square
  // of its tokens (causal attention), where a chord between doubling grid points misses by 1-2%.
  [[nodiscard]] StepPoint at_quadratic(double batch, double context) const;
  [[nodiscard]] bool empty() const { return points_.empty(); }
  [[nodiscard]] const std::vector<std::int64_t>& batches() const { return batches_; }
  [[nodiscard]] const std::vector<std::int64_t>& contexts() const { return contexts_; }
  [[nodiscard]] const std::vector<StepPoint>& points() const { return points_; }

 private:
  std::vector<std::int64_t> batches_;
  std::vector<std::int64_t> contexts_;
  std::vector<StepPoint> points_;
};

// The step of a batch mixing requests whose latent cache is offloaded (ESS) and GPU-only ones
// (memory protection's fallback): the GPU-only table plus the offloaded share of the difference
// (offload adds the miss fetches and the gathers' SM share; the compute is the same).
struct StepModel {
  // Every request GPU-only (cache.mode "gpu"); in offload mode empty when memory protection can
  // never keep a request GPU-only (the host memory holds every request the GPUs can).
  StepTable gpu;
  std::optional<StepTable> offload;  // every request offloaded (cache.mode "offload" only)
  // `batch`: requests on the fullest GPU (all GPUs wait for it at the all-to-all); `context`:
  // mean tokens per request; `offloaded_share` in [0, 1]. Each table by at_quadratic.
  [[nodiscard]] StepPoint at(double batch, double context, double offloaded_share) const;
  // A step of `batch` requests (on the fullest GPU, or the replica) that replays the CUDA graph
  // captured for `graph` >= batch requests: the tables at `graph`, whose points ran every request
  // as a real one, less the per-request host time of the padding rows (`host_per_request` seconds
  // each: the engine samples and processes only real requests; 0 when the engine overlaps its host
  // time, whose floor hides behind the GPU's time unless the step is host-bound).
  [[nodiscard]] StepPoint at_graph(double batch, double graph, double context, double offloaded_share,
                                   double host_per_request) const;
};

// Colocated serving (serving.prefill.mode "colocated"): what prompt chunks add to a decode step.
// A chunk's tokens run through the projections and MoE with the decode tokens, so what a chunk
// adds shrinks as the decode batch grows until the batch alone activates every expert (the chunk
// already pays for reading the weights a small decode step is bound by), then stays. Measured by
// Simulation runs of mixed steps at the requests' mean context:
//   slices[0]: steps of slices[0].batch decode requests per GPU that also prefill a chunk, at
//              (chunk tokens per GPU, tokens of its prompt already cached): the table's batch axis
//              holds the chunk's tokens, its context axis the cached tokens; `reference` the same
//              step without a chunk;
//   slices[1..]: the same at larger batches, at one cached point (`table.contexts()`, the middle
//              of slices[0]'s).
// What a chunk adds at batch b: slice 0's (mixed - reference) at (tokens, cached) (each table by
// at_quadratic: causal attention makes a chunk's time convex in its tokens), plus how that
// changes from slice 0's batch to b at the middle cached point, piecewise linear between the
// slices' batches (clamped to them); below the smallest chunk on the grid, in proportion to the
// tokens (nothing at none). `cached` below 0 stands for chunks holding several prompts, with fewer
// causal key pairs than one chunk of their tokens ((pairs - tokens (tokens + 1) / 2) / tokens):
// extrapolated linearly along the cached axis from its first two points (attention work is linear
// in the key pairs), never below nothing added. `ess-sim bench` compares the decode table plus
// this with direct mixed runs between the slices' batches.
struct ChunkCost {
  double time = 0.0;  // seconds added to the step
  double busy = 0.0;  // busy compute seconds added (utilisation x time, mean over GPUs)
};

struct ChunkSlice {
  std::int64_t batch = 1;
  StepTable table;
  StepPoint reference;
};

struct ChunkModel {
  std::vector<ChunkSlice> slices;  // batches strictly increasing; at least one
  std::int64_t context = 1;
  [[nodiscard]] ChunkCost added(double batch, double tokens, double cached) const;
};

}  // namespace ess
