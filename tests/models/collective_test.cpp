#include "models/collective.h"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bytes;
using ess::BytesPerSecond;
using ess::Hardware;
using ess::test::near;

// Test hardware: 4 nodes x 8 GPUs; NVLink 400 GB/s + 2 us; NIC 50 GB/s per GPU + 5 us;
// all-reduce bus bandwidth 400 GB/s + 10 us; all-to-all 200 GB/s + 20 us.

namespace {
const Bytes kMB(1e6);
}  // namespace

TEST_CASE("p2p: NVLink latency plus bytes over bandwidth", "[collective]") {
  const ess::NvlinkSpec nvlink = ess::test::test_hardware().nvlink;
  // 2 us + 1e6 / 400e9 = 2 + 2.5 = 4.5 us
  CHECK(ess::p2p_time(kMB, nvlink).value() == near(4.5e-6));
  CHECK(ess::p2p_time(Bytes(0.0), nvlink).value() == near(2e-6));
}

TEST_CASE("p2p rejects negative bytes and a zero bandwidth", "[collective][errors]") {
  ess::NvlinkSpec nvlink = ess::test::test_hardware().nvlink;
  CHECK_THROWS_MATCHES(ess::p2p_time(Bytes(-1.0), nvlink), ess::InputError,
                       Catch::Message("p2p_time: bytes must be >= 0 B (got -1 B)"));
  nvlink.bandwidth = BytesPerSecond(0.0);
  CHECK_THROWS_MATCHES(ess::p2p_time(kMB, nvlink), ess::InputError,
                       Catch::Message("hardware.nvlink.bandwidth must be > 0 B/s (got 0 B/s)"));
}

TEST_CASE("allreduce over one GPU takes no time", "[collective]") {
  CHECK(ess::allreduce_time(1, kMB, ess::test::test_hardware()).value() == 0.0);
  CHECK(ess::alltoall_time(1, kMB, ess::test::test_hardware()).value() == 0.0);
}

TEST_CASE("allreduce within a node uses the NVLink bus bandwidth", "[collective]") {
  const Hardware hw = ess::test::test_hardware();
  // G = 8: 10 us + 2*7/8 * 1e6 / 400e9 = 10 + 4.375 = 14.375 us
  CHECK(ess::allreduce_time(8, kMB, hw).value() == near(14.375e-6));
  // G = 2: 10 us + 2*1/2 * 1e6 / 400e9 = 10 + 2.5 = 12.5 us
  CHECK(ess::allreduce_time(2, kMB, hw).value() == near(12.5e-6));
}

TEST_CASE("allreduce across nodes is limited by the NIC", "[collective]") {
  const Hardware hw = ess::test::test_hardware();
  // G = 16: 10 + 5 us + 2*15/16 * 1e6 / min(400, 50)e9 = 15 + 37.5 = 52.5 us
  CHECK(ess::allreduce_time(16, kMB, hw).value() == near(52.5e-6));
  // G = 32: 15 us + 2*31/32 * 1e6 / 50e9 = 15 + 38.75 = 53.75 us
  CHECK(ess::allreduce_time(32, kMB, hw).value() == near(53.75e-6));
}

TEST_CASE("allreduce across nodes uses the bus bandwidth when it is below the NIC's",
          "[collective]") {
  Hardware hw = ess::test::test_hardware();
  hw.collectives.allreduce_bus_bandwidth = BytesPerSecond(40e9);
  // G = 16: 15 us + 2*15/16 * 1e6 / min(40, 50)e9 = 15 + 46.875 = 61.875 us
  CHECK(ess::allreduce_time(16, kMB, hw).value() == near(61.875e-6));
}

TEST_CASE("alltoall within a node keeps the GPU's own share local", "[collective]") {
  const Hardware hw = ess::test::test_hardware();
  // The port runs at alltoall_nvlink_efficiency x nvlink.bandwidth = 0.5 x 400 = 200 GB/s.
  // G = 8: 20 us + 7/8 * 1e6 / 200e9 = 20 + 4.375 = 24.375 us
  CHECK(ess::alltoall_time(8, kMB, hw).value() == near(24.375e-6));
  // G = 4: 20 us + 3/4 * 1e6 / 200e9 = 20 + 3.75 = 23.75 us
  CHECK(ess::alltoall_time(4, kMB, hw).value() == near(23.75e-6));
}

TEST_CASE("alltoall across nodes overlaps the NVLink and NIC shares", "[collective]") {
  const Hardware hw = ess::test::test_hardware();
  // Each port flow pays its own latency (as the engine's port links do): NVLink 20 us, NIC 20 + 5 us.
  // G = 16: max(20 + 7/16 * 1e6 / 200e9 = 22.1875 us, 25 + 8/16 * 1e6 / 50e9 = 35 us) = 35 us
  CHECK(ess::alltoall_time(16, kMB, hw).value() == near(35e-6));
  // G = 32: max(20 + 7/32 * 1e6 / 200e9 = 21.09375 us, 25 + 24/32 * 1e6 / 50e9 = 40 us) = 40 us
  CHECK(ess::alltoall_time(32, kMB, hw).value() == near(40e-6));
}

TEST_CASE("alltoall across nodes is bound by NVLink when NVLink is slower", "[collective]") {
  Hardware hw = ess::test::test_hardware();
  hw.collectives.alltoall_nvlink_efficiency = 0.025;  // 10 GB/s of 400
  // G = 16: max(20 + 7/16 * 1e6 / 10e9 = 63.75 us, 25 + 8/16 * 1e6 / 50e9 = 35 us) = 63.75 us
  CHECK(ess::alltoall_time(16, kMB, hw).value() == near(63.75e-6));
  // The NIC share is derated by alltoall_network_efficiency: at 0.5 the NIC runs at 25 GB/s.
  hw.collectives.alltoall_network_efficiency = 0.5;
  // G = 32: max(20 + 7/32 * 1e6 / 10e9 = 41.875 us, 25 + 24/32 * 1e6 / 25e9 = 55 us) = 55 us
  CHECK(ess::alltoall_time(32, kMB, hw).value() == near(55e-6));
}

TEST_CASE("collectives reject more GPUs than the hardware has", "[collective][errors]") {
  const Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(
      ess::allreduce_time(64, kMB, hw), ess::InputError,
      Catch::Message("allreduce_time: asked for 64 GPUs but the hardware has 32 (4 nodes x 8)"));
  Hardware one_node = hw;
  one_node.nodes = 1;
  CHECK_THROWS_MATCHES(
      ess::alltoall_time(16, kMB, one_node), ess::InputError,
      Catch::Message("alltoall_time: asked for 16 GPUs but the hardware has 8 (1 node x 8)"));
}

TEST_CASE("collectives across nodes require whole nodes", "[collective][errors]") {
  const Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(ess::allreduce_time(12, kMB, hw), ess::InputError,
                       Catch::Message("allreduce_time over 12 GPUs spans nodes of 8 GPUs: the "
                                      "GPU count must be a multiple of 8 (whole nodes)"));
  CHECK_THROWS_MATCHES(ess::alltoall_time(20, kMB, hw), ess::InputError,
                       Catch::Message("alltoall_time over 20 GPUs spans nodes of 8 GPUs: the "
                                      "GPU count must be a multiple of 8 (whole nodes)"));
  // Within one node any group size is fine.
  CHECK_NOTHROW(ess::allreduce_time(3, kMB, hw));
}

TEST_CASE("collectives reject a non-positive GPU count, negative bytes and bad parameters",
          "[collective][errors]") {
  Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(ess::allreduce_time(0, kMB, hw), ess::InputError,
                       Catch::Message("allreduce_time: gpus must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::alltoall_time(-1, kMB, hw), ess::InputError,
                       Catch::Message("alltoall_time: gpus must be >= 1 (got -1)"));
  CHECK_THROWS_MATCHES(ess::allreduce_time(8, Bytes(-1.0), hw), ess::InputError,
                       Catch::Message("allreduce_time: bytes must be >= 0 B (got -1 B)"));

  Hardware no_gpus = hw;
  no_gpus.gpu.count = 0;
  CHECK_THROWS_MATCHES(ess::allreduce_time(1, kMB, no_gpus), ess::InputError,
                       Catch::Message("allreduce_time: the hardware must have >= 1 node and "
                                      ">= 1 GPU per node (got 4 nodes x 0 GPUs)"));

  hw.collectives.allreduce_bus_bandwidth = BytesPerSecond(0.0);
  CHECK_THROWS_MATCHES(
      ess::allreduce_time(8, kMB, hw), ess::InputError,
      Catch::Message("hardware.collectives.allreduce_bus_bandwidth must be > 0 B/s (got 0 B/s)"));
  hw = ess::test::test_hardware();
  hw.collectives.alltoall_nvlink_efficiency = 0.0;
  CHECK_THROWS_MATCHES(
      ess::alltoall_time(8, kMB, hw), ess::InputError,
      Catch::Message("hardware.collectives.alltoall_nvlink_efficiency must be in (0, 1] (got 0)"));
  hw = ess::test::test_hardware();
  hw.collectives.alltoall_network_efficiency = 1.5;
  CHECK_THROWS_MATCHES(
      ess::alltoall_time(16, kMB, hw), ess::InputError,
      Catch::Message("hardware.collectives.alltoall_network_efficiency must be in (0, 1] (got 1.5)"));
  hw = ess::test::test_hardware();
  hw.network.bandwidth_per_gpu = BytesPerSecond(0.0);
  CHECK_THROWS_MATCHES(
      ess::alltoall_time(16, kMB, hw), ess::InputError,
      Catch::Message("hardware.network.bandwidth_per_gpu must be > 0 B/s (got 0 B/s)"));
  // A single-node collective does not need the network.
  CHECK_NOTHROW(ess::alltoall_time(8, kMB, hw));
}

TEST_CASE("collectives: time never decreases with bytes", "[collective][property]") {
  const Hardware hw = ess::test::test_hardware();
  for (const int gpus : {2, 4, 8, 16, 32}) {
    double previous_allreduce = 0.0;
    double previous_alltoall = 0.0;
    for (double bytes = 0.0; bytes <= 1e10; bytes = bytes * 2.0 + 1024.0) {
      const double ar = ess::allreduce_time(gpus, Bytes(bytes), hw).value();
      const double a2a = ess::alltoall_time(gpus, Bytes(bytes), hw).value();
      CHECK(ar >= previous_allreduce);
      CHECK(a2a >= previous_alltoall);
      previous_allreduce = ar;
      previous_alltoall = a2a;
    }
  }
}
