#include "models/alltoall.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/check.h"
#include "sim/base/error.h"

namespace ess {

Bytes dispatch_bytes_per_copy(std::int64_t hidden) {
  check::at_least("dispatch_bytes_per_copy", "hidden", hidden, 1);
  return Bytes(static_cast<double>(hidden) * (1.0 + static_cast<double>(kFp8ScaleBytes) / kFp8ScaleGroup));
}

Bytes combine_bytes_per_copy(std::int64_t hidden, DType activation_dtype) {
  check::at_least("combine_bytes_per_copy", "hidden", hidden, 1);
  return Bytes(static_cast<double>(hidden) * bytes_per_element(activation_dtype));
}

AlltoallPorts alltoall_ports(const Hardware& hw) {
  // The values are models/hardware.h's, which sim/engine/platform.cpp builds its port links with;
  // the names say which fields they come from.
  return {
      {alltoall_intranode_bandwidth(hw), alltoall_intranode_latency(hw),
       "hardware.nvlink.bandwidth x hardware.collectives.alltoall_nvlink_efficiency",
       "hardware.collectives.alltoall_latency"},
      {alltoall_internode_bandwidth(hw), alltoall_internode_latency(hw),
       "hardware.network.bandwidth_per_gpu x hardware.collectives.alltoall_network_efficiency",
       "hardware.network.latency + hardware.collectives.alltoall_latency"},
  };
}

namespace {

// latency + bytes / bandwidth for a port that carries traffic; 0 for one that carries none.
Seconds flow_time(Bytes bytes, const AlltoallPort& port) {
  if (!(bytes.value() > 0.0)) return Seconds(0.0);
  check::positive("expert_alltoall", port.bandwidth_field, port.bandwidth.value(), "B/s");
  check::non_negative("expert_alltoall", port.latency_field, port.latency.value(), "s");
  return port.latency + bytes / port.bandwidth;
}

}  // namespace

ExpertAlltoallCost expert_alltoall(const ExpertAlltoallShape& s, const Hardware& hw) {
  constexpr std::string_view kModel = "expert_alltoall";
  check::at_least(kModel, "expert_parallel", s.expert_parallel, 1);
  check::at_least(kModel, "gpus_per_node", s.gpus_per_node, 1);
  check::at_least(kModel, "tokens", s.tokens, 1);
  check::at_least(kModel, "experts_per_token", s.experts_per_token, 1);
  check::positive(kModel, "bytes_per_copy", s.bytes_per_copy.value(), "B");
  const int E = s.expert_parallel;
  const int L = s.gpus_per_node;
  if (L % E != 0 && E % L != 0) {
    throw InputError(std::string(kModel) + ": an expert-parallel group of " + std::to_string(E) +
                     " GPUs on nodes of " + std::to_string(L) +
                     " covers partial nodes; expert_parallel must divide or be a multiple of the GPUs per "
                     "node");
  }
  const int in_node = std::min(E, L);  // group members on this GPU's node, itself included

  ExpertAlltoallCost c;
  c.copies = static_cast<double>(s.tokens) * static_cast<double>(s.experts_per_token);
  c.self_fraction = 1.0 / E;
  c.intranode_fraction = static_cast<double>(in_node - 1) / E;
  c.internode_fraction = static_cast<double>(E - in_node) / E;
  c.intranode_bytes = Bytes(c.copies * c.intranode_fraction * s.bytes_per_copy.value());
  c.internode_bytes = Bytes(c.copies * c.internode_fraction * s.bytes_per_copy.value());
  const AlltoallPorts ports = alltoall_ports(hw);
  c.intranode = flow_time(c.intranode_bytes, ports.nvswitch);
  c.internode = flow_time(c.internode_bytes, ports.nic);
  c.time = std::max(c.intranode, c.internode);
  return c;
}

}  // namespace ess
