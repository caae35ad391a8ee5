// Calibrating the alpha-beta collective models (models/collective.h) from measured NCCL times
// within one node. Each model is linear in (latency, 1 / bandwidth):
//
//   all-reduce:  time = allreduce_latency + 2 (G-1)/G bytes / allreduce_bus_bandwidth
//   all-to-all:  time = alltoall_latency  + (G-1)/G bytes / alltoall_bandwidth
//   P2P:         time = nvlink.latency    + bytes / nvlink.bandwidth
//
// fitted by relative non-negative least squares (all-to-all: the bandwidth, which calibrate writes as
// alltoall_nvlink_efficiency = bandwidth / nvlink.bandwidth). Only points with G <= GPUs per node may be given:
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
// separate the two terms or imply no per-byte cost, InputError on gpus < 2.
struct AlphaBeta {
  Seconds latency;
  BytesPerSecond bandwidth;
};
[[nodiscard]] AlphaBeta fit_allreduce(std::span<const CollectivePoint> points, std::span<const std::size_t> use);
[[nodiscard]] AlphaBeta fit_alltoall(std::span<const CollectivePoint> points, std::span<const std::size_t> use);
[[nodiscard]] AlphaBeta fit_p2p(std::span<const CollectivePoint> points, std::span<const std::size_t> use);

// --- Expert-parallel all-to-all (MoE dispatch / combine, DeepEP low-latency kernels) -------------
//
// One GPU's side of an all-to-all over an EP group of E GPUs on nodes of L GPUs, uniform routing,
// as the engine carries it (sim/engine/platform.h; models/hardware.h CollectiveParams):
//
//   intranode = bytes (min(E, L) - 1) / E           to the other GPUs of its node
//   internode = bytes (E - min(E, L)) / E           to GPUs of other nodes
//   time      = max(intranode > 0 ? alltoall_intranode_latency + intranode / intranode_bandwidth : 0,
//                   internode > 0 ? alltoall_internode_latency + internode / internode_bandwidth : 0)
//
// `bytes` counts every (token, expert) copy of the GPU, its own 1/E share included (as DeepEP
// counts them); that share stays on the GPU.
struct ExpertAlltoallPoint {
  int expert_parallel = 0;  // E >= 2
  int gpus_per_node = 0;    // L >= 1; E divides L or is a multiple of it
  double bytes = 0.0;       // per GPU, each direction
  double seconds = 0.0;     // measured, > 0
};

// The model above on `hw`. Throws InputError on a bad point or a bandwidth <= 0.
[[nodiscard]] Seconds expert_alltoall_time(const ExpertAlltoallPoint& point, const Hardware& hw);

// Fits collectives.{alltoall_nvlink_efficiency, alltoall_network_efficiency, alltoall_latency}
// with nvlink.* and network.* as `hw` gives them: Levenberg-Marquardt on log(predicted/measured)
// from 8 starts, efficiencies in (0, 1) (logistic), latency >= 0 (exponential). An efficiency no
// point depends on (no intranode or no internode traffic) keeps hw's value. Throws FitError with
// fewer than 3 points or on no convergence.
struct AlltoallFit {
  double nvlink_efficiency = 1.0;
  double network_efficiency = 1.0;
  Seconds latency;
};
[[nodiscard]] AlltoallFit fit_expert_alltoall(std::span<const ExpertAlltoallPoint> points,
                                              std::span<const std::size_t> use, const Hardware& hw);

}  // namespace ess
