// The SimGrid platform of a scenario's hardware: the only place that knows SimGrid's platform API.
//
//   hosts  gpu<r>                one per GPU (global rank r = node x gpus_per_node + local index)
//          node<n>-cpu<s>        one per CPU socket
//          node<n>-nvswitch      the NVSwitch fabric of a node; `network` the scale-out fabric
//   links  gpu<r>-nvs-up/down    the GPU's NVSwitch port, per direction (all-to-all traffic):
//                                collectives.alltoall_nvlink_efficiency x nvlink.bandwidth,
//                                latency collectives.alltoall_latency
//          gpu<r>-nic-up/down    the GPU's scale-out NIC, per direction (traffic between nodes):
//                                collectives.alltoall_network_efficiency x network.bandwidth_per_gpu,
//                                latency network.latency + collectives.alltoall_latency
//          gpu<r>-pcie-h2d/d2h   the GPU's PCIe link, per direction
//          gpu<r>-gather-h2d/d2h the rate a UVA gather kernel reaches (gather_*_efficiency x link)
//          node<n>-sw<k>-h2d/d2h the uplink of PCIe switch k to its CPU socket, per direction
//          node<n>-cpu<s>-dram   the socket's memory, one budget for both directions
//                                (cpu.dram_bandwidth_per_socket)
//   routes GPU -> its NVSwitch: nvs-up; NVSwitch -> GPU: nvs-down; GPU <-> network: nic-up/down;
//          CPU socket <-> its GPUs: socket DRAM + switch uplink + GPU link in each direction (copy engines);
//          CPU socket <-> gpu<r>-sm: the same plus the gather-rate link (UVA gather kernels).
//
// All-to-all traffic is carried per port: a GPU sends what it sends to its node's GPUs as one flow
// into the NVSwitch and receives what they send it as one flow out of it (likewise through its
// NIC for other nodes). The switches are non-blocking, so the ports are the bottlenecks; this keeps
// an all-to-all at 4 flows per GPU instead of one per pair of GPUs. Every port link has the latency
// of a whole transfer (the up and down flows run at the same time), so that a flow of b bytes takes
// latency + b / bandwidth (SimGrid's CM02 model without TCP gamma or cross-traffic).
#pragma once

#include <vector>

#include "models/hardware.h"

namespace simgrid::s4u {
class Host;
class Link;
}  // namespace simgrid::s4u

namespace ess {

// GPU hosts run "kernels" whose cost is known in seconds: a kernel of d seconds is an Exec of
// d x kGpuSpeed flops. The value only sets the resolution (1e12: picoseconds).
inline constexpr double kGpuSpeed = 1e12;

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;  // by global rank
  std::vector<simgrid::s4u::Host*> cpus;  // node-major: node n socket s = n x sockets + s
  std::vector<simgrid::s4u::Host*> gpu_socket;  // by global rank: the CPU socket of the GPU
  // By global rank: the GPU's SMs as the end of a UVA gather (routes through the GPU's PCIe link
  // plus a link capped at the gather rate, per direction).
  std::vector<simgrid::s4u::Host*> gpu_gather;
  std::vector<simgrid::s4u::Host*> nvswitch;    // by node
  simgrid::s4u::Host* network = nullptr;
  struct GpuLinks {
    simgrid::s4u::Link* nvs_up = nullptr;
    simgrid::s4u::Link* nvs_down = nullptr;
    simgrid::s4u::Link* nic_up = nullptr;
    simgrid::s4u::Link* nic_down = nullptr;
    simgrid::s4u::Link* pcie_h2d = nullptr;
    simgrid::s4u::Link* pcie_d2h = nullptr;
  };
  std::vector<GpuLinks> links;  // by global rank
};

// Builds and seals the platform in the current SimGrid engine (which must exist and have no
// platform yet).
[[nodiscard]] Platform build_platform(const Hardware& hw);

}  // namespace ess
