// Alpha-beta models of NVLink point-to-point transfers and NCCL-style collectives.
//
// G = the number of GPUs taking part; `bytes` = the per-GPU buffer size. L = hardware.gpu.count
// (GPUs per node). A collective over G <= L GPUs stays inside one node (NVLink/NVSwitch); over
// G > L GPUs it spans G / L whole nodes and also crosses the scale-out network (one NIC per GPU).
// Formulas are given with each function and in models/README.md.
#pragma once

#include "models/hardware.h"
#include "models/units.h"

namespace ess {

// One GPU-to-GPU copy over NVLink: latency + bytes / bandwidth (hardware.nvlink).
// Throws InputError on bytes < 0, bandwidth <= 0 or latency < 0.
[[nodiscard]] Seconds p2p_time(Bytes bytes, const NvlinkSpec& nvlink);

// All-reduce of `bytes` on each of `gpus` GPUs (ring/tree: 2 (G-1)/G of the buffer crosses each
// GPU's links; NCCL reports that traffic over time as "bus bandwidth").
//   G == 1:  0
//   G <= L:  allreduce_latency + 2 (G-1)/G bytes / allreduce_bus_bandwidth
//   G >  L:  allreduce_latency + network.latency
//            + 2 (G-1)/G bytes / min(allreduce_bus_bandwidth, network.bandwidth_per_gpu)
// Throws InputError if gpus < 1, gpus > hw.total_gpus(), gpus > L and not a multiple
// of L, bytes < 0, or a needed bandwidth <= 0.
[[nodiscard]] Seconds allreduce_time(int gpus, Bytes bytes, const Hardware& hw);

// All-gather: each of the G GPUs contributes `share` bytes and ends with all G shares; a
// reduce-scatter: each holds G shares and ends with the sum of its own. Each is one half of a ring
// all-reduce, priced with its calibrated parameters ((G-1) shares cross each GPU's links):
//   G == 1:  0
//   G <= L:  allreduce_latency + (G-1) share / allreduce_bus_bandwidth
//   G >  L:  allreduce_latency + network.latency + (G-1) share / min(allreduce_bus_bandwidth, network.bandwidth_per_gpu)
// (the latency is the all-reduce's, not half of it: one launch and one synchronisation). Same
// errors as allreduce_time.
[[nodiscard]] Seconds allgather_time(int gpus, Bytes share, const Hardware& hw);
[[nodiscard]] Seconds reduce_scatter_time(int gpus, Bytes share, const Hardware& hw);

// All-to-all: each GPU scatters its `bytes` evenly over the G GPUs (its own 1/G share stays local),
// priced as the engine carries it (one flow per port, hardware.h CollectiveParams):
//   intra(b) = alltoall_latency + b / (alltoall_nvlink_efficiency nvlink.bandwidth)
//   inter(b) = network.latency + alltoall_latency
//              + b / (alltoall_network_efficiency network.bandwidth_per_gpu)
//   G == 1:  0
//   G <= L:  intra((G-1)/G bytes)
//   G >  L:  max(intra((L-1)/G bytes), inter((G-L)/G bytes))     (L = 1: inter only)
// (over nodes the NVLink share and the NIC share move in parallel). Same errors as allreduce_time,
// and an efficiency outside (0, 1].
[[nodiscard]] Seconds alltoall_time(int gpus, Bytes bytes, const Hardware& hw);

}  // namespace ess
