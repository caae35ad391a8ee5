// ExpertAlltoall (models/alltoall.h), worked out by hand on the test hardware
// (tests/models/test_hardware.h, 8 GPUs per node) with its all-to-all ports set here:
//   NVSwitch port: 400 GB/s NVLink x 0.5 = 200 GB/s after the 20 us all-to-all latency (the NVLink
//                  latency is 0 here, so the test does not depend on whether it is added);
//   NIC:           50 GB/s x 1.0 = 50 GB/s after 5 us network + 20 us all-to-all latency = 25 us.
#include "models/alltoall.h"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bytes;
using ess::BytesPerSecond;
using ess::ExpertAlltoallShape;
using ess::test::near;

namespace {
ess::Hardware a2a_hardware() {
  auto hw = ess::test::test_hardware();
  hw.nvlink.bandwidth = BytesPerSecond(400e9);
  hw.nvlink.latency = ess::Seconds(0.0);
  hw.network.bandwidth_per_gpu = BytesPerSecond(50e9);
  hw.network.latency = ess::Seconds(5e-6);
  hw.collectives.alltoall_nvlink_efficiency = 0.5;
  hw.collectives.alltoall_network_efficiency = 1.0;
  hw.collectives.alltoall_latency = ess::Seconds(20e-6);
  return hw;
}

// DeepSeek-V3 hidden 7168: fp8 + one fp32 scale per 128 values = 7168 x 1.03125 = 7392 B.
const Bytes kDispatchCopy(7392.0);
}  // namespace

TEST_CASE("dispatch copies are fp8 with a scale per 128 values, combine copies the activation dtype", "[alltoall]") {
  CHECK(ess::dispatch_bytes_per_copy(7168).value() == near(7392.0));
  CHECK(ess::combine_bytes_per_copy(7168, ess::DType::bf16).value() == near(14336.0));
  CHECK(ess::combine_bytes_per_copy(4096, ess::DType::fp32).value() == near(16384.0));
}

TEST_CASE("all-to-all inside one node: the NVSwitch port carries (E-1)/E of the copies", "[alltoall]") {
  // 128 tokens x 8 experts = 1024 copies; 7/8 of them leave the GPU: 896 x 7392 = 6,623,232 B;
  // 20 us + 6,623,232 / 200e9 (33.11616 us) = 53.11616 us.
  const auto c = ess::expert_alltoall({8, 8, 128, 8, kDispatchCopy}, a2a_hardware());
  CHECK(c.copies == near(1024.0));
  CHECK(c.self_fraction == near(0.125));
  CHECK(c.intranode_fraction == near(0.875));
  CHECK(c.internode_fraction == 0.0);
  CHECK(c.intranode_bytes.value() == near(6623232.0));
  CHECK(c.internode_bytes.value() == 0.0);
  CHECK(c.intranode.value() == near(53.11616e-6));
  CHECK(c.internode.value() == 0.0);
  CHECK(c.time.value() == near(53.11616e-6));
}

TEST_CASE("all-to-all over four nodes: NVSwitch and NIC flows run together, the slower one counts", "[alltoall]") {
  // EP 32 on nodes of 8: 7/32 to the node (224 copies, 1,655,808 B: 20 + 8.27904 = 28.27904 us),
  // 24/32 to other nodes (768 copies, 5,677,056 B: 5 + 20 + 113.54112 = 138.54112 us).
  const auto c = ess::expert_alltoall({32, 8, 128, 8, kDispatchCopy}, a2a_hardware());
  CHECK(c.intranode_fraction == near(7.0 / 32.0));
  CHECK(c.internode_fraction == near(24.0 / 32.0));
  CHECK(c.intranode_bytes.value() == near(1655808.0));
  CHECK(c.internode_bytes.value() == near(5677056.0));
  CHECK(c.intranode.value() == near(28.27904e-6));
  CHECK(c.internode.value() == near(138.54112e-6));
  CHECK(c.time.value() == near(138.54112e-6));
}

TEST_CASE("a group smaller than the node stays on NVSwitch, and a group of one moves nothing", "[alltoall]") {
  // EP 4: 3/4 of 1024 copies = 768 x 7392 = 5,677,056 B: 20 + 28.38528 = 48.38528 us.
  const auto four = ess::expert_alltoall({4, 8, 128, 8, kDispatchCopy}, a2a_hardware());
  CHECK(four.time.value() == near(48.38528e-6));
  CHECK(four.internode.value() == 0.0);
  const auto one = ess::expert_alltoall({1, 8, 128, 8, kDispatchCopy}, a2a_hardware());
  CHECK(one.self_fraction == 1.0);
  CHECK(one.time.value() == 0.0);
}

TEST_CASE("the ports are read from the hardware fields the engine's platform uses", "[alltoall]") {
  const auto p = ess::alltoall_ports(a2a_hardware());
  CHECK(p.nvswitch.bandwidth.value() == near(200e9));
  CHECK(p.nvswitch.latency.value() == near(20e-6));
  CHECK(p.nvswitch.bandwidth_field == "hardware.nvlink.bandwidth x hardware.collectives.alltoall_nvlink_efficiency");
  CHECK(p.nvswitch.latency_field == "hardware.collectives.alltoall_latency");
  CHECK(p.nic.bandwidth.value() == near(50e9));
  CHECK(p.nic.latency.value() == near(25e-6));
  CHECK(p.nic.latency_field == "hardware.network.latency + hardware.collectives.alltoall_latency");
}

TEST_CASE("expert_alltoall rejects bad shapes, partial nodes and a missing NIC with precise messages",
          "[alltoall][errors]") {
  const auto hw = a2a_hardware();
  CHECK_THROWS_MATCHES(ess::expert_alltoall({0, 8, 128, 8, kDispatchCopy}, hw), ess::InputError,
                       Catch::Message("expert_alltoall: expert_parallel must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::expert_alltoall({8, 8, 0, 8, kDispatchCopy}, hw), ess::InputError,
                       Catch::Message("expert_alltoall: tokens must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::expert_alltoall({8, 8, 128, 8, Bytes(0.0)}, hw), ess::InputError,
                       Catch::Message("expert_alltoall: bytes_per_copy must be > 0 B (got 0 B)"));
  CHECK_THROWS_MATCHES(ess::expert_alltoall({12, 8, 128, 8, kDispatchCopy}, hw), ess::InputError,
                       Catch::Message("expert_alltoall: an expert-parallel group of 12 GPUs on nodes of 8 covers "
                                      "partial nodes; expert_parallel must divide or be a multiple of the GPUs per node"));
  auto no_nic = hw;
  no_nic.network.bandwidth_per_gpu = BytesPerSecond(0.0);
  CHECK(ess::expert_alltoall({8, 8, 128, 8, kDispatchCopy}, no_nic).time.value() == near(53.11616e-6));
  CHECK_THROWS_MATCHES(ess::expert_alltoall({16, 8, 128, 8, kDispatchCopy}, no_nic), ess::InputError,
                       Catch::Message("expert_alltoall: hardware.network.bandwidth_per_gpu x "
                                      "hardware.collectives.alltoall_network_efficiency must be > 0 B/s (got 0 B/s)"));
}
