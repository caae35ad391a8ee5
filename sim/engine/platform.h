// The SimGrid platform of a scenario's hardware: the only place that knows SimGrid's platform API.
//
//   hosts  gpu<r>                one per GPU (global rank r = node x gpus_per_node + local index)
//          node<n>-cpu<s>        one per CPU socket
//   links  gpu<r>-nvs-up/down    the GPU's NVSwitch port, per direction (all-to-all traffic)
//          gpu<r>-nic-up/down    the GPU's scale-out NIC, per direction (traffic between nodes)
//          gpu<r>-pcie-h2d/d2h   the GPU's PCIe link, per direction
//          node<n>-sw<k>-h2d/d2h the uplink of PCIe switch k to its CPU socket, per direction
//   routes GPU <-> GPU in a node: nvs-up(src), nvs-down(dst); across nodes: nic-up(src),
//          nic-down(dst); CPU socket <-> its GPUs: switch uplink + GPU link in each direction.
//
// Every GPU-to-GPU route inside a node has the same latency, so SimGrid shares a port evenly
// among the flows crossing it (flow sharing is weighted by route latency; DESIGN.md section 7).
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
