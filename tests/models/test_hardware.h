// A small hand-written hardware profile with round numbers, so that every expected value in the
// model tests can be worked out by hand from the formulas in models/README.md.
//
// Effective rates used in the hand calculations (peak x efficiency):
//   gemm:         bf16 100e12 x 0.5 = 5e13 FLOP/s, fp8 200e12 x 0.5 = 1e14, fp32 50e12 x 0.5
//   = 2.5e13;
//                 HBM 1e12 x 0.5 = 5e11 B/s; ramps 1e8 FLOP and 1e6 B; overhead 2 us
//   attention:    bf16 100e12 x 0.4 = 4e13 FLOP/s; HBM 1e12 x 0.8 = 8e11 B/s; no ramps; 3 us
//   indexer:      fp8 200e12 x 0.25 = 5e13 FLOP/s; HBM 1e12 x 0.5 = 5e11 B/s; no ramps; 4 us
//   memory_bound: HBM 1e12 x 0.5 = 5e11 B/s; memory ramp 1e5 B; 1 us; top-k passes 3
// Each kernel class has different parameters, so a model reading the wrong class fails its test.
#pragma once

#include <catch2/catch.hpp>

#include "models/hardware.h"

namespace ess::test {

// Relative tolerance of every expected time, byte and FLOP count in the model tests.
inline constexpr double kRelTol = 1e-9;

inline Approx near(double expected) { return Approx(expected).epsilon(kRelTol); }

inline Hardware test_hardware() {
  Hardware hw;
  hw.name = "test";
  hw.nodes = 4;

  hw.gpu.kind = "TestGPU";
  hw.gpu.count = 8;
  hw.gpu.hbm_capacity = Bytes(100e9);
  hw.gpu.hbm_bandwidth = BytesPerSecond(1e12);  // 1 TB/s
  hw.gpu.peak_compute.fp32 = FlopsPerSecond(50e12);
  hw.gpu.peak_compute.bf16 = FlopsPerSecond(100e12);
  hw.gpu.peak_compute.fp16 = FlopsPerSecond(100e12);
  hw.gpu.peak_compute.fp8 = FlopsPerSecond(200e12);

  hw.pcie.generation = 5;
  hw.pcie.h2d_bandwidth = BytesPerSecond(50e9);
  hw.pcie.d2h_bandwidth = BytesPerSecond(40e9);
  hw.pcie.latency = Seconds(1e-6);
  hw.pcie.h2d_call_overhead = Seconds(2e-6);
  hw.pcie.d2h_call_overhead = Seconds(3e-6);
  hw.pcie.gather_h2d_efficiency = 0.5;  // gather: 25 GB/s h2d, 30 GB/s d2h
  hw.pcie.gather_d2h_efficiency = 0.75;
  hw.pcie.gather_sm_fraction = 0.1;
  hw.pcie.gpus_per_switch = 2;
  hw.pcie.switch_uplink_bandwidth = BytesPerSecond(64e9);

  hw.nvlink.bandwidth = BytesPerSecond(400e9);
  hw.nvlink.latency = Seconds(2e-6);

  hw.network.bandwidth_per_gpu = BytesPerSecond(50e9);
  hw.network.latency = Seconds(5e-6);

  hw.cpu.sockets = 2;
  hw.cpu.gpus_per_socket = 4;
  hw.cpu.dram_capacity_per_socket = Bytes(1e12);
  hw.cpu.dram_bandwidth_per_socket = BytesPerSecond(300e9);

  hw.kernels.gemm = {.compute_efficiency = 0.5,
                     .compute_ramp = Flops(1e8),
                     .memory_efficiency = 0.5,
                     .memory_ramp = Bytes(1e6),
                     .kernel_overhead = Seconds(2e-6)};
  // The same as gemm, so that the hand-derived grouped GEMM expectations read like the dense ones;
  // tests that the grouped class is its own change it.
  hw.kernels.grouped_gemm = hw.kernels.gemm;
  hw.kernels.attention = {.compute_efficiency = 0.4,
                          .compute_ramp = Flops(0.0),
                          .memory_efficiency = 0.8,
                          .memory_ramp = Bytes(0.0),
                          .kernel_overhead = Seconds(3e-6)};
  // The same as attention (the sparse MLA expectations were derived with it); see above.
  hw.kernels.sparse_attention = hw.kernels.attention;
  hw.kernels.indexer = {.compute_efficiency = 0.25,
                        .compute_ramp = Flops(0.0),
                        .memory_efficiency = 0.5,
                        .memory_ramp = Bytes(0.0),
                        .kernel_overhead = Seconds(4e-6)};
  hw.kernels.memory_bound = {.compute_efficiency = 1.0,
                             .compute_ramp = Flops(0.0),
                             .memory_efficiency = 0.5,
                             .memory_ramp = Bytes(1e5),
                             .kernel_overhead = Seconds(1e-6)};
  hw.kernels.topk_passes = 3.0;

  hw.collectives.allreduce_bus_bandwidth = BytesPerSecond(400e9);
  hw.collectives.allreduce_latency = Seconds(10e-6);
  hw.collectives.alltoall_nvlink_efficiency = 0.5;  // 200 GB/s of the 400 GB/s NVLink
  hw.collectives.alltoall_network_efficiency = 1.0;
  hw.collectives.alltoall_latency = Seconds(20e-6);
  return hw;
}

// The same GPU without fp8 tensor cores (A100-like).
inline Hardware test_hardware_without_fp8() {
  Hardware hw = test_hardware();
  hw.gpu.kind = "NoFp8GPU";
  hw.gpu.peak_compute.fp8.reset();
  return hw;
}

}  // namespace ess::test
