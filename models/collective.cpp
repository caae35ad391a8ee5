#include "models/collective.h"

#include "models/check.h"
#include "sim/base/error.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ess {

namespace {

// Checks the group size shared by every collective; true when the group spans several nodes.
bool check_group(std::string_view op, int gpus, Bytes bytes, const Hardware& hw) {
  const std::string name(op);
  if (gpus < 1) {
    throw InputError(name + ": gpus must be >= 1 (got " + std::to_string(gpus) + ")");
  }
  const int per_node = hw.gpu.count;
  if (per_node < 1 || hw.nodes < 1) {
    throw InputError(
        name + ": the hardware must have >= 1 node and >= 1 GPU per node (got " +
        std::to_string(hw.nodes) + " nodes x " + std::to_string(per_node) + " GPUs)");
  }
  if (gpus > hw.total_gpus()) {
    throw InputError(
        name + ": asked for " + std::to_string(gpus) + " GPUs but the hardware has " +
        std::to_string(hw.total_gpus()) + " (" + std::to_string(hw.nodes) +
        (hw.nodes == 1 ? " node x " : " nodes x ") + std::to_string(per_node) + ")");
  }
  check::non_negative("", name + ": bytes", bytes.value(), "B");
  const bool multi_node = gpus > per_node;
  if (multi_node && gpus % per_node != 0) {
    throw InputError(name + " over " + std::to_string(gpus) + " GPUs spans nodes of " +
                     std::to_string(per_node) +
                     " GPUs: the GPU count must be a multiple of " +
                     std::to_string(per_node) + " (whole nodes)");
  }
  if (multi_node) {
    check::positive("", "hardware.network.bandwidth_per_gpu", hw.network.bandwidth_per_gpu.value(),
                     "B/s");
    check::non_negative("", "hardware.network.latency", hw.network.latency.value(), "s");
  }
  return multi_node;
}

}  // namespace

Seconds p2p_time(Bytes bytes, const NvlinkSpec& nvlink) {
  check::non_negative("", "p2p_time: bytes", bytes.value(), "B");
  check::positive("", "hardware.nvlink.bandwidth", nvlink.bandwidth.value(), "B/s");
  check::non_negative("", "hardware.nvlink.latency", nvlink.latency.value(), "s");
  return nvlink.latency + bytes / nvlink.bandwidth;
}

Seconds allreduce_time(int gpus, Bytes bytes, const Hardware& hw) {
  const bool multi_node = check_group("allreduce_time", gpus, bytes, hw);
  if (gpus == 1) return Seconds(0.0);
  const CollectiveParams& c = hw.collectives;
  check::positive("", "hardware.collectives.allreduce_bus_bandwidth", c.allreduce_bus_bandwidth.value(), "B/s");
  check::non_negative("", "hardware.collectives.allreduce_latency", c.allreduce_latency.value(), "s");

  const double g = gpus;
  // Bytes crossing each GPU's links in a ring all-reduce: reduce-scatter then all-gather.
  const Bytes traffic = bytes * (2.0 * (g - 1.0) / g);
  if (!multi_node) return c.allreduce_latency + traffic / c.allreduce_bus_bandwidth;
  const BytesPerSecond bw = std::min(c.allreduce_bus_bandwidth, hw.network.bandwidth_per_gpu);
  return c.allreduce_latency + hw.network.latency + traffic / bw;
}

namespace {

// The ring traffic of one half of an all-reduce (an all-gather or a reduce-scatter) of `share`
// bytes per GPU: (G-1) shares cross each GPU's links, at the all-reduce's bus bandwidth.
Seconds half_allreduce_time(std::string_view op, int gpus, Bytes share, const Hardware& hw) {
  const bool multi_node = check_group(op, gpus, share, hw);
  if (gpus == 1) return Seconds(0.0);
  const CollectiveParams& c = hw.collectives;
  check::positive("", "hardware.collectives.allreduce_bus_bandwidth", c.allreduce_bus_bandwidth.value(), "B/s");
  check::non_negative("", "hardware.collectives.allreduce_latency", c.allreduce_latency.value(), "s");
  const Bytes traffic = share * (static_cast<double>(gpus) - 1.0);
  if (!multi_node) return c.allreduce_latency + traffic / c.allreduce_bus_bandwidth;
  const BytesPerSecond bw = std::min(c.allreduce_bus_bandwidth, hw.network.bandwidth_per_gpu);
  return c.allreduce_latency + hw.network.latency + traffic / bw;
}

}  // namespace

Seconds allgather_time(int gpus, Bytes share, const Hardware& hw) {
  return half_allreduce_time("allgather_time", gpus, share, hw);
}

Seconds reduce_scatter_time(int gpus, Bytes share, const Hardware& hw) {
  return half_allreduce_time("reduce_scatter_time", gpus, share, hw);
}

Seconds alltoall_time(int gpus, Bytes bytes, const Hardware& hw) {
  const bool multi_node = check_group("alltoall_time", gpus, bytes, hw);
  if (gpus == 1) return Seconds(0.0);
  const CollectiveParams& c = hw.collectives;
  check::fraction("", "hardware.collectives.alltoall_nvlink_efficiency", c.alltoall_nvlink_efficiency);
  check::positive("", "hardware.nvlink.bandwidth", hw.nvlink.bandwidth.value(), "B/s");
  check::non_negative("", "hardware.collectives.alltoall_latency", c.alltoall_latency.value(), "s");

  const double g = gpus;
  // The engine's port flows (sim/engine/platform.cpp): one through the NVSwitch port for the GPUs
  // of this node, one through the NIC for the others, concurrently.
  const Seconds intra_latency = alltoall_intranode_latency(hw);
  const BytesPerSecond intra = alltoall_intranode_bandwidth(hw);
  if (!multi_node) return intra_latency + bytes * ((g - 1.0) / g) / intra;
  check::fraction("", "hardware.collectives.alltoall_network_efficiency", c.alltoall_network_efficiency);
  const double l = hw.gpu.count;
  const Seconds nvlink_part = intra_latency + bytes * ((l - 1.0) / g) / intra;
  const Seconds network_part = alltoall_internode_latency(hw) + bytes * ((g - l) / g) / alltoall_internode_bandwidth(hw);
  return l > 1.0 ? std::max(nvlink_part, network_part) : network_part;
}

}  // namespace ess
