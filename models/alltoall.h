// ExpertAlltoall: one expert-parallel all-to-all (MoE dispatch or combine) priced the way the event
// engine carries it when nothing else contends for the ports, under uniform routing.
//
// The engine (sim/engine/platform.h, simulation.cpp run_collective) starts an all-to-all when every
// member of the EP group has reached it, then moves each GPU's traffic as at most four concurrent
// flows: what it sends to GPUs of its own node as one flow into its NVSwitch port, what it receives
// from them as one flow out of it, and the same through its NIC for GPUs on other nodes. A flow of
// b bytes over a port takes latency + b / bandwidth, so one GPU's all-to-all takes the slowest of
// its flows. With uniform routing every GPU sends and receives the same expected bytes, so
//
//   copies        = tokens experts_per_token            routed (token, expert) pairs per GPU
//   self          = copies / E                          stay on the GPU (no traffic)
//   intranode     = copies (min(E, L) - 1) / E x bytes_per_copy     per GPU, each direction
//   internode     = copies (E - min(E, L)) / E x bytes_per_copy
//   intranode_s   = intranode > 0 ? nvswitch.latency + intranode / nvswitch.bandwidth : 0
//   internode_s   = internode > 0 ? nic.latency + internode / nic.bandwidth : 0
//   time          = max(intranode_s, internode_s)
//
// E = expert_parallel (the group is E consecutive ranks starting at a multiple of E, as the
// decode-step builder forms it), L = GPUs per node. Each copy goes to the GPU holding its expert;
// every GPU holds the same number of experts, so each of the E GPUs of the group receives 1/E of
// the copies in expectation (exactly so in the mean, whatever the top-k without replacement does).
// Routing noise makes the slowest GPU a little slower than this mean (sqrt(copies) relative);
// skewed routing, contention with other traffic and the barrier wait are not included.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/dtype.h"
#include "models/hardware.h"
#include "models/units.h"
#include "sim/base/fp8.h"

namespace ess {

// Bytes of one dispatched (token, expert) copy: DeepEP dispatches fp8 activations with one fp32
// scale per 128 values (sim/base/fp8.h), hidden x (1 + 4/128). The decode-step builder
// (sim/graph/step_blocks.cpp add_moe) uses the same sizes; tests/engine/alltoall_engine_test.cpp
// fails if the two drift apart.
[[nodiscard]] Bytes dispatch_bytes_per_copy(std::int64_t hidden);
// Bytes of one combined copy: the expert's output in the activation dtype, hidden x B(dtype).
[[nodiscard]] Bytes combine_bytes_per_copy(std::int64_t hidden, DType activation_dtype);

// One port of a GPU as the all-to-all sees it: bandwidth per direction and the latency of one
// transfer, with the hardware fields they come from (for reports such as `ess-sim cost`).
struct AlltoallPort {
  BytesPerSecond bandwidth;
  Seconds latency;
  std::string_view bandwidth_field;  // "hardware.nvlink.bandwidth x hardware.collectives.alltoall_nvlink_efficiency"
  std::string_view latency_field;    // "hardware.network.latency + hardware.collectives.alltoall_latency"
};
struct AlltoallPorts {
  AlltoallPort nvswitch;  // to and from GPUs of the same node
  AlltoallPort nic;       // to and from GPUs of other nodes
};

// The ports of one GPU: the values of models/hardware.h's alltoall_{intra,inter}node_{bandwidth,
// latency} (which sim/engine/platform.cpp builds its port links with), named by their fields.
[[nodiscard]] AlltoallPorts alltoall_ports(const Hardware& hw);

struct ExpertAlltoallShape {
  int expert_parallel = 0;             // E: GPUs in the expert-parallel group, >= 1
  int gpus_per_node = 0;               // L: hardware.gpu.count, >= 1
  std::int64_t tokens = 0;             // tokens per GPU (batch_per_gpu x MTP depth), >= 1
  std::int64_t experts_per_token = 0;  // routed experts per token, >= 1
  Bytes bytes_per_copy;                // per (token, expert) pair, > 0
};

// Per GPU and per direction (sent = received under uniform routing).
struct ExpertAlltoallCost {
  Seconds time;         // max(intranode, internode)
  Seconds intranode;    // the NVSwitch-port flow (0 without intranode traffic)
  Seconds internode;    // the NIC flow (0 without internode traffic)
  double copies = 0.0;  // tokens x experts_per_token
  double self_fraction = 0.0;       // of the copies: stay on the GPU
  double intranode_fraction = 0.0;  // go to another GPU of the node
  double internode_fraction = 0.0;  // go to another node
  Bytes intranode_bytes;
  Bytes internode_bytes;
};

// Throws InputError on a size below its minimum, bytes_per_copy <= 0, a needed port
// bandwidth <= 0 or latency < 0, or a group over partial nodes (E neither divides L nor is a
// multiple of it: then GPUs of one group see different splits, which this model does not average).
[[nodiscard]] ExpertAlltoallCost expert_alltoall(const ExpertAlltoallShape& shape, const Hardware& hw);

}  // namespace ess
