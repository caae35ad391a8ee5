// Calibrating the alpha-beta collective models (models/collective.h) from measured NCCL times
// within one node. Each model is linear in (latency, 1 / bandwidth):
//
//   all-reduce:  time = allreduce_latency + 2 (G-1)/G bytes / allreduce_bus_bandwidth
//   all-to-all:  time = alltoall_latency  + (G-1)/G bytes / alltoall_bandwidth
//   P2P:         time = nvlink.latency    + bytes / nvlink.bandwidth
//
// fitted by relative non-negative least squares. Only points with G <= GPUs per node may be given:
// the scale-out network terms are not fitted here.
#pragma once

#include <span>

#include "models/hardware.h"

namespace ess {

struct CollectivePoint {
  int gpus = 2;          // 2 for P2P
  double bytes = 0.0;    // per-GPU buffer (all-reduce, all-to-all) or bytes copied (P2P)
  double seconds = 0.0;  // measured, > 0
};

// Return (latency, bandwidth) fitted to points[use[...]]. Throw FitError if the points cannot
// separate the two terms or imply no per-byte cost, std::invalid_argument on gpus < 2.
struct AlphaBeta {
  Seconds latency;
  BytesPerSecond bandwidth;
};
[[nodiscard]] AlphaBeta fit_allreduce(std::span<const CollectivePoint> points, std::span<const std::size_t> use);
[[nodiscard]] AlphaBeta fit_alltoall(std::span<const CollectivePoint> points, std::span<const std::size_t> use);
[[nodiscard]] AlphaBeta fit_p2p(std::span<const CollectivePoint> points, std::span<const std::size_t> use);

}  // namespace ess
