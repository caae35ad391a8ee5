#include "sim/engine/platform.h"

#include <algorithm>
#include <string>

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include "models/copy.h"

namespace ess {

namespace sg4 = simgrid::s4u;

namespace {

// A host of known speed for the CPU sockets; nothing runs on them yet.
constexpr double kCpuSpeed = 1e9;

sg4::Link* link(sg4::NetZone* zone, const std::string& name, BytesPerSecond bandwidth, Seconds latency) {
  return zone->create_link(name, bandwidth.value())->set_latency(latency.value())->seal();
}

void route(sg4::NetZone* zone, sg4::Host* src, sg4::Host* dst, std::vector<sg4::LinkInRoute> links) {
  zone->add_route(src->get_netpoint(), dst->get_netpoint(), nullptr, nullptr, links, /*symmetrical=*/false);
}

}  // namespace

Platform build_platform(const Hardware& hw) {
  Platform p;
  auto* zone = sg4::create_full_zone("ess");
  const int per_node = hw.gpu.count;
  const int world = hw.total_gpus();
  // A port flow carries a whole all-to-all transfer's latency (see the header): the link's own plus
  // the all-to-all kernel's, at the fraction of the link the kernel reaches (models/hardware.h).
  const Seconds nvs_latency = alltoall_intranode_latency(hw);
  const Seconds nic_latency = alltoall_internode_latency(hw);
  const BytesPerSecond nvs_bandwidth = alltoall_intranode_bandwidth(hw);
  const BytesPerSecond nic_bandwidth = alltoall_internode_bandwidth(hw);
  const Seconds pcie_half = hw.pcie.latency / 2.0;

  for (int r = 0; r < world; ++r) {
    const std::string name = "gpu" + std::to_string(r);
    p.gpus.push_back(zone->create_host(name, kGpuSpeed)->seal());
    Platform::GpuLinks l;
    l.nvs_up = link(zone, name + "-nvs-up", nvs_bandwidth, nvs_latency);
    l.nvs_down = link(zone, name + "-nvs-down", nvs_bandwidth, nvs_latency);
    l.nic_up = link(zone, name + "-nic-up", nic_bandwidth, nic_latency);
    l.nic_down = link(zone, name + "-nic-down", nic_bandwidth, nic_latency);
    l.pcie_h2d = link(zone, name + "-pcie-h2d", hw.pcie.h2d_bandwidth, pcie_half);
    l.pcie_d2h = link(zone, name + "-pcie-d2h", hw.pcie.d2h_bandwidth, pcie_half);
    p.links.push_back(l);
  }
  const int switches_per_node = per_node / hw.pcie.gpus_per_switch;
  std::vector<sg4::Link*> sw_h2d;
  std::vector<sg4::Link*> sw_d2h;
  // The memory of each CPU socket, shared by the copies and gathers of its GPUs in both directions
  // (DRAM bandwidth is one budget for reads and writes): cpu.dram_bandwidth_per_socket.
  std::vector<sg4::Link*> dram;
  p.network = zone->create_host("network", kCpuSpeed)->seal();
  for (int n = 0; n < hw.nodes; ++n) {
    p.nvswitch.push_back(zone->create_host("node" + std::to_string(n) + "-nvswitch", kCpuSpeed)->seal());
    for (int s = 0; s < hw.cpu.sockets; ++s) {
      const std::string socket = "node" + std::to_string(n) + "-cpu" + std::to_string(s);
      p.cpus.push_back(zone->create_host(socket, kCpuSpeed)->seal());
      dram.push_back(link(zone, socket + "-dram", hw.cpu.dram_bandwidth_per_socket, Seconds(0.0)));
    }
    for (int k = 0; k < switches_per_node; ++k) {
      const std::string name = "node" + std::to_string(n) + "-sw" + std::to_string(k);
      sw_h2d.push_back(link(zone, name + "-h2d", hw.pcie.switch_uplink_bandwidth, pcie_half));
      sw_d2h.push_back(link(zone, name + "-d2h", hw.pcie.switch_uplink_bandwidth, pcie_half));
    }
  }

  using Dir = sg4::LinkInRoute::Direction;
  for (int a = 0; a < world; ++a) {
    const auto& ports = p.links[static_cast<std::size_t>(a)];
    sg4::Host* gpu = p.gpus[static_cast<std::size_t>(a)];
    sg4::Host* fabric = p.nvswitch[static_cast<std::size_t>(a / per_node)];
    route(zone, gpu, fabric, {sg4::LinkInRoute(ports.nvs_up, Dir::NONE)});
    route(zone, fabric, gpu, {sg4::LinkInRoute(ports.nvs_down, Dir::NONE)});
    route(zone, gpu, p.network, {sg4::LinkInRoute(ports.nic_up, Dir::NONE)});
    route(zone, p.network, gpu, {sg4::LinkInRoute(ports.nic_down, Dir::NONE)});
    // The GPU's own CPU socket, through its PCIe switch.
    const int node = a / per_node;
    const int local = a % per_node;
    const auto socket = static_cast<std::size_t>(node * hw.cpu.sockets + std::min(local / hw.cpu.gpus_per_socket, hw.cpu.sockets - 1));
    const auto sw = static_cast<std::size_t>(node * switches_per_node + local / hw.pcie.gpus_per_switch);
    const auto& l = p.links[static_cast<std::size_t>(a)];
    p.gpu_socket.push_back(p.cpus[socket]);
    sg4::Link* memory = dram[socket];
    route(zone, p.cpus[socket], p.gpus[static_cast<std::size_t>(a)],
          {sg4::LinkInRoute(memory, Dir::NONE), sg4::LinkInRoute(sw_h2d[sw], Dir::NONE),
           sg4::LinkInRoute(l.pcie_h2d, Dir::NONE)});
    route(zone, p.gpus[static_cast<std::size_t>(a)], p.cpus[socket],
          {sg4::LinkInRoute(l.pcie_d2h, Dir::NONE), sg4::LinkInRoute(sw_d2h[sw], Dir::NONE),
           sg4::LinkInRoute(memory, Dir::NONE)});
    const std::string name = "gpu" + std::to_string(a);
    sg4::Host* sm = zone->create_host(name + "-sm", kGpuSpeed)->seal();
    p.gpu_gather.push_back(sm);
    sg4::Link* gather_h2d = link(zone, name + "-gather-h2d", gather_rate(CopyDirection::h2d, hw.pcie), Seconds(0.0));
    sg4::Link* gather_d2h = link(zone, name + "-gather-d2h", gather_rate(CopyDirection::d2h, hw.pcie), Seconds(0.0));
    route(zone, p.cpus[socket], sm,
          {sg4::LinkInRoute(memory, Dir::NONE), sg4::LinkInRoute(sw_h2d[sw], Dir::NONE),
           sg4::LinkInRoute(l.pcie_h2d, Dir::NONE), sg4::LinkInRoute(gather_h2d, Dir::NONE)});
    route(zone, sm, p.cpus[socket],
          {sg4::LinkInRoute(gather_d2h, Dir::NONE), sg4::LinkInRoute(l.pcie_d2h, Dir::NONE),
           sg4::LinkInRoute(sw_d2h[sw], Dir::NONE), sg4::LinkInRoute(memory, Dir::NONE)});
  }
  zone->seal();
  return p;
}

}  // namespace ess
