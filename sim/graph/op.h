// The pieces of a decode step as the engine executes them: operators (kernels with a cost)
// grouped into segments that run back to back on one GPU stream between synchronisation points.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/units.h"

namespace ess {

// Where a GPU's time goes. `idle` (waiting for other GPUs) is not an operator category; the
// metrics add it.
enum class OpCategory { gemm, attention, indexer, norm, elementwise, collective, transfer };
inline constexpr std::size_t kOpCategoryCount = 7;

[[nodiscard]] constexpr std::string_view to_string(OpCategory c) {
  switch (c) {
    case OpCategory::gemm: return "gemm";
    case OpCategory::attention: return "attention";
    case OpCategory::indexer: return "indexer";
    case OpCategory::norm: return "norm";
    case OpCategory::elementwise: return "elementwise";
    case OpCategory::collective: return "collectives";
    case OpCategory::transfer: return "transfers";
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
};

enum class SegmentKind { compute, alltoall, allreduce };

// One activity of one GPU: a fused run of kernels on the compute stream, or a collective.
struct Segment {
  SegmentKind kind = SegmentKind::compute;
  int layer = -1;          // model layer (MTP modules follow the main layers); -1: embedding / head
  std::string_view label;  // "attention", "experts", "dispatch", ...
  std::vector<Op> ops;     // compute only, in execution order
  Seconds duration;        // compute: sum of the ops; allreduce: the cost model's time
  // alltoall: bytes this GPU sends to every GPU (index = global GPU rank; own entry ignored).
  std::vector<double> send_bytes;
  int group = 0;  // collective group (EP group or TP replica); members must all reach it
};

struct GpuStepPlan {
  std::vector<Segment> segments;
};

// Everything the GPUs do in one decode step.
struct StepPlan {
  int step = 0;
  std::int64_t context = 0;  // cached tokens per request at the start of the step
  std::vector<GpuStepPlan> gpus;
};

}  // namespace ess
