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
// Throws std::invalid_argument on bytes < 0, bandwidth <= 0 or latency < 0.
[[nodiscard]] Seconds p2p_time(Bytes bytes, const NvlinkSpec& nvlink);

// All-reduce of `bytes` on each of `gpus` GPUs (ring/tree: 2 (G-1)/G of the buffer crosses each
// GPU's links; NCCL reports that traffic over time as "bus bandwidth").
//   G == 1:  0
//   G <= L:  allreduce_latency + 2 (G-1)/G bytes / allreduce_bus_bandwidth
//   G >  L:  allreduce_latency + network.latency
//            + 2 (G-1)/G bytes / min(allreduce_bus_bandwidth, network.bandwidth_per_gpu)
// Throws std::invalid_argument if gpus < 1, gpus > hw.total_gpus(), gpus > L and not a multiple
// of L, bytes < 0, or a needed bandwidth <= 0.
[[nodiscard]] Seconds allreduce_time(int gpus, Bytes bytes, const Hardware& hw);

// All-to-all: each GPU scatters its `bytes` evenly over the G GPUs (its own 1/G share stays local).
//   G == 1:  0
//   G <= L:  alltoall_latency + (G-1)/G bytes / alltoall_bandwidth
//   G >  L:  alltoall_latency + network.latency
//            + max((L-1)/G bytes / alltoall_bandwidth, (G-L)/G bytes / network.bandwidth_per_gpu)
// (over nodes the NVLink share and the NIC share move in parallel). Same errors as allreduce_time.
[[nodiscard]] Seconds alltoall_time(int gpus, Bytes bytes, const Hardware& hw);

}  // namespace ess
