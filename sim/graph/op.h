// The pieces of a decode step as the engine executes them: operators (kernels with a cost)
// grouped into segments that run back to back on one GPU stream between synchronisation points.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/cost.h"
#include "models/units.h"
#include "sim/config/scenario.h"
#include "sim/base/op_names.h"

namespace ess {

// Where a GPU's time goes. `idle` (waiting for other GPUs) is not an operator category; the
// metrics add it. `host`: the serving engine's per-step host time the GPUs wait for.
enum class OpCategory { gemm, attention, indexer, norm, elementwise, collective, transfer, host };
inline constexpr std::size_t kOpCategoryCount = 8;

[[nodiscard]] constexpr std::string_view to_string(OpCategory c) {
  switch (c) {
    case OpCategory::gemm: return catname::gemm;
    case OpCategory::attention: return catname::attention;
    case OpCategory::indexer: return catname::indexer;
    case OpCategory::norm: return catname::norm;
    case OpCategory::elementwise: return catname::elementwise;
    case OpCategory::collective: return catname::collectives;
    case OpCategory::transfer: return catname::transfers;
    case OpCategory::host: return catname::host;
  }
  return "?";
}

// Seconds per category.
using CategoryTimes = std::array<double, kOpCategoryCount>;

struct Op {
  std::string_view name;  // a static label, e.g. "q_b", "indexer_topk"
  OpCategory category = OpCategory::gemm;
  Seconds time;
  Flops flops;
  Bytes bytes;
  ParamSet params = ParamSet::none;  // the calibrated parameters that priced it (models/cost.h)
};

// prefetch: a transfer the GPU starts for a later layer (`layer`) and does not wait for;
// prefetch_wait: the compute stream waits until the prefetch of `layer` has arrived.
enum class SegmentKind { compute, alltoall, allreduce, stage, writeback, prefetch, prefetch_wait };

// A host<->device transfer of latent entries (offload mode).
struct Transfer {
  bool h2d = true;          // host->device (miss fetch) or device->host (write-back)
  bool gather = true;       // a UVA gather kernel (else cudaMemcpyAsync, one call per run)
  double bytes = 0.0;
  double runs = 0.0;        // contiguous runs (copy calls) for the copy path
  double nvme_bytes = 0.0;  // part of `bytes` that must first be read from NVMe
};

// One activity of one GPU: a fused run of kernels on the compute stream, a collective, a stage
// (a transfer running beside kernels: the segment ends when both are done), or a write-back (a
// transfer the GPU starts and does not wait for until the end of the step).
struct Segment {
  SegmentKind kind = SegmentKind::compute;
  int layer = -1;          // model layer (MTP modules follow the main layers); -1: embedding / head
  std::string_view label;  // "attention", "experts", "dispatch", ...
  std::vector<Op> ops;     // compute only, in execution order
  Seconds duration;        // compute: sum of the ops; allreduce (any fixed-time collective): the cost model's time
  // alltoall: bytes this GPU sends to, and receives from, every GPU of its expert-parallel group
  // (index = rank in the group: global rank = group x expert_parallel + index; the own entry stays
  // local and is ignored). Tokens never leave their EP group, so nothing is kept for other GPUs.
  std::vector<double> send_bytes;
  std::vector<double> recv_bytes;
  int group = 0;  // collective group (EP group, TP replica or MoE group); members must all reach it
  // allreduce kind: the collective synchronises the MoE group (DP attention's all-gather and
  // reduce-scatter around a tensor-parallel MoE) instead of the attention replica.
  bool moe_group = false;
  // alltoall: the share of the GPU's SMs its kernels hold from submission to end (compute beside
  // it, under two-batch overlap, runs on the rest); 0 for kernels that hold none while in flight.
  double sm_fraction = 0.0;
  // alltoall: the share of its bandwidth alone it keeps while the compute stream runs beside it
  // (two-batch overlap: engine.prefill_alltoall_overlap_efficiency for the SM-holding kernels).
  double overlap_efficiency = 1.0;
  Transfer transfer;  // stage and writeback only
  // Micro-batch (two-batch overlap): 0, or 0 and 1. A GPU's segments are lane 0's in order, then
  // lane 1's; the engine interleaves the two lanes on one compute stream (engine/simulation.cpp).
  int lane = 0;
};

struct GpuStepPlan {
  std::vector<Segment> segments;
};

// Offload: what the cache simulation says about one layer in one step, per offloaded request.
struct LayerAccess {
  double misses = 0.0;  // selected entries not in the GPU pool (fetched this step)
  double misses_stderr = 0.0;  // standard error of that mean over the sampled requests
  double hits = 0.0;
  double runs = 0.0;  // contiguous runs among the misses
  double evictions = 0.0;
  // Prefetch (sim/offload/prefetch.h): entries prefetched for this layer, of them the ones the
  // selection then missed (fetched early instead of on demand), and the runs among the prefetched.
  double prefetched = 0.0;
  double prefetch_used = 0.0;
  double prefetch_runs = 0.0;
};

// Offload: the per-layer decisions of one step, recorded for the results.
struct LayerOffload {
  std::size_t overlap = 0;  // registry index of the overlap policy used (auto resolved; sim/offload/overlap.h)
  LayerAccess access;                         // per offloaded request
  double h2d_bytes = 0.0;                     // per GPU, on-demand fetches and prefetches
  double d2h_bytes = 0.0;                     // per GPU
  double prefetch_bytes = 0.0;                // per GPU, of h2d_bytes: prefetched for this layer
};

// Everything the GPUs do in one decode step.
struct StepPlan {
  int step = 0;
  std::int64_t context = 0;  // cached tokens per request at the start of the step
  std::vector<GpuStepPlan> gpus;
  std::vector<LayerOffload> offload;  // per layer, offload mode only
  // Host time the engine overlaps with the GPU (engine.host_overlap): the CPU prepares the next
  // step while this one runs, so the step lasts at least this long (0: none).
  Seconds host_floor;
};

}  // namespace ess
