// The hardware profile every cost model reads: datasheet facts, measured facts and the
// calibratable efficiency parameters of each kernel class.
//
// A profile is built by the scenario loader (sim/config) from a preset in scenarios/hardware/ plus
// the user's overrides, or (issue 5) by the calibration fit. Models never read JSON.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "models/dtype.h"
#include "models/gemm_table.h"
#include "models/units.h"
#include "sim/base/error.h"

namespace ess {

// Thrown when a model is asked for something the hardware cannot do (e.g. fp8 on an A100).
class UnsupportedError : public InputError {
 public:
  using InputError::InputError;
};

// Dense (no structured sparsity) tensor-core peak per dtype; empty when the GPU lacks it.
struct PeakCompute {
  std::optional<FlopsPerSecond> fp32;
  std::optional<FlopsPerSecond> bf16;
  std::optional<FlopsPerSecond> fp16;
  std::optional<FlopsPerSecond> fp8;

  // Peak for `t`; throws UnsupportedError naming `gpu_kind` when the GPU has none.
  [[nodiscard]] FlopsPerSecond at(DType t, const std::string& gpu_kind) const;
};

// Electrical power of one GPU, for the serving energy model (sim/serving): the board at idle
// (clocks up, no kernel running) and fully busy (the TDP, an upper bound of a busy GPU's draw).
struct GpuPower {
  Watts idle;
  Watts busy;  // >= idle
};

// A GPU whose preset or profile does not say sustains the clock its peaks are quoted at.
inline constexpr double kDefaultSustainedClock = 1.0;

struct GpuSpec {
  std::string kind;              // e.g. "H200-SXM"
  int count = 0;                 // GPUs per node
  Bytes hbm_capacity;            // per GPU
  BytesPerSecond hbm_bandwidth;  // per GPU, datasheet peak
  PeakCompute peak_compute;
  // Streaming multiprocessors: what share of the GPU a kernel holding some SMs takes (the prefill
  // all-to-all, sim/graph/step_blocks.h). Absent in profiles written before it existed; a run that
  // needs it then fails and names the field.
  std::optional<int> sm_count;
  // The SM clock a compute-bound kernel sustains under the power limit, as a fraction of the clock
  // the peaks are specified at (in (0, 1]). The cost models do not read it: the fitted compute
  // efficiencies already hold it. Calibration's transfer rule does: a compute efficiency fitted on
  // one GPU moves to another scaled by the ratio of their sustained clocks (calibration/README.md).
  double sustained_clock_fraction = kDefaultSustainedClock;
  std::optional<GpuPower> power;  // absent: no energy is reported
};

// One PCIe link per GPU to the host. Bandwidths are per direction (the link is full duplex).
struct PcieSpec {
  int generation = 0;
  BytesPerSecond h2d_bandwidth;  // sustained host->device bandwidth of one large copy
  BytesPerSecond d2h_bandwidth;  // sustained device->host bandwidth of one large copy
  Seconds latency;               // first-byte latency of a DMA transfer
  Seconds h2d_call_overhead;     // fixed cost of one cudaMemcpyAsync call, host->device
  Seconds d2h_call_overhead;     // fixed cost of one cudaMemcpyAsync call, device->host
  // A UVA gather kernel (SMs reading or writing pinned host memory row by row) reaches this
  // fraction of the copy-engine bandwidth, per direction, and occupies this share of the SMs.
  double gather_h2d_efficiency = 1.0;  // in (0, 1]
  double gather_d2h_efficiency = 1.0;  // in (0, 1]
  double gather_sm_fraction = 0.0;     // in [0, 1)
  int gpus_per_switch = 0;       // GPUs sharing one PCIe switch uplink to the CPU
  BytesPerSecond switch_uplink_bandwidth;  // per direction
};

// NVLink / NVSwitch: point-to-point bandwidth per direction between two GPUs of a node.
struct NvlinkSpec {
  BytesPerSecond bandwidth;
  Seconds latency;
};

// Scale-out network between nodes: one NIC per GPU.
struct NetworkSpec {
  BytesPerSecond bandwidth_per_gpu;  // per direction
  Seconds latency;
};

struct CpuSpec {
  int sockets = 0;
  int gpus_per_socket = 0;
  Bytes dram_capacity_per_socket;
  BytesPerSecond dram_bandwidth_per_socket;
};

// Efficiency of one kernel class on one GPU (the calibratable part of a roofline).
//
//   compute time = (flops + compute_ramp) / (peak[dtype] * compute_efficiency)
//   memory time  = (bytes + memory_ramp)  / (hbm_bandwidth * memory_efficiency)
//   kernel time  = max(compute time, memory time) + kernel_overhead                  (transition 0)
//                = (compute^p + memory^p)^(1/p) + kernel_overhead, p = transition    (transition >= 1)
//
// The ramps make efficiency size-dependent: a kernel doing `compute_ramp` FLOP reaches half of
// `compute_efficiency`; a kernel moving `memory_ramp` bytes reaches half of `memory_efficiency`.
// Both forms are linear in their parameters, so calibration fits them by least squares.
struct RooflineParams {
  double compute_efficiency = 1.0;  // in (0, 1]
  Flops compute_ramp;               // >= 0
  double memory_efficiency = 1.0;   // in (0, 1]
  Bytes memory_ramp;                // >= 0
  Seconds kernel_overhead;          // >= 0: fixed GPU time of one kernel (launch, tail)
  // 0: the sharp roofline, max(compute, memory). p in [1, 64]: a smooth one, (c^p + m^p)^(1/p),
  // for kernels that are partly bound by both near the ridge point (p = 1 adds the two; large p
  // approaches the max). Fitted by calibration for GEMMs; the presets use 0.
  double transition = 0.0;
};

struct KernelParams {
  RooflineParams gemm;          // dense GEMMs (cuBLAS / DeepGEMM)
  // Grouped MoE expert GEMMs (DeepGEMM m-grouped masked / contiguous): one kernel over many
  // experts' weights, slower than a dense GEMM of the same FLOP (DeepGEMM README: 932 TFLOP/s for
  // 4 experts x 256 rows of 4096 x 7168 vs 1410 for one 4096-row GEMM of that weight).
  RooflineParams grouped_gemm;
  RooflineParams attention;     // dense MLA and GQA decode attention (FlashMLA dense, FlashDecoding)
  // Sparse MLA (DeepSeek-V3.2 top-k attention, FlashMLA sparse FP8-KV decode: 410-460 TFLOP/s
  // on H800 against 660 for the dense BF16 kernel).
  RooflineParams sparse_attention;
  // Causal prefill attention (FlashAttention-3 on Hopper): the roofline of the FLOP it executes,
  // which are the causal key pairs plus `prefill_attention_row_keys` keys per query row (the
  // diagonal tile computed in full and each query tile's pipeline fill; fitted to FlashAttention-3's
  // published forward rates, calibration/README.md).
  RooflineParams prefill_attention;
  double prefill_attention_row_keys = 0.0;  // >= 0: JSON kernels.prefill_attention.row_keys
  RooflineParams indexer;       // lightning-indexer scoring
  RooflineParams memory_bound;  // norms, elementwise, top-k: bytes only
  double topk_passes = 1.0;     // passes of the top-k selection over the logits (>= 1)
  // GEMM times measured on this GPU (a calibrated profile's hardware.kernels.gemm_measured); the
  // GEMM model uses them for the weight shapes they cover (models/gemm_table.h). Shared and
  // immutable, so that copying a Hardware stays cheap. Null: roofline only.
  std::shared_ptr<const GemmTable> gemm_measured;
};

// Alpha-beta collectives (NCCL-style) and the expert-parallel all-to-all (DeepEP-style).
//
// The all-to-all is carried per GPU port (sim/engine/platform.h): what a GPU exchanges with GPUs of
// its node moves at alltoall_nvlink_efficiency x nvlink.bandwidth after alltoall_latency; what it
// exchanges with other nodes at alltoall_network_efficiency x network.bandwidth_per_gpu after
// network.latency + alltoall_latency. The efficiencies are what the all-to-all kernels reach of
// the links (DeepEP low-latency on H800: fitted, calibration/README.md), so a GPU with other links
// keeps them and its own nvlink.bandwidth and network.* drive the run. nvlink.latency is not added:
// it is a copy's (NCCL send/recv where fitted), whose software path the all-to-all kernels do not
// take; alltoall_latency is the all-to-all's own fixed time.
struct CollectiveParams {
  BytesPerSecond allreduce_bus_bandwidth;  // NCCL "busbw" of a large all-reduce within a node
  Seconds allreduce_latency;               // fixed time of a small all-reduce
  double alltoall_nvlink_efficiency = 1.0;   // in (0, 1]: of nvlink.bandwidth, per direction
  double alltoall_network_efficiency = 1.0;  // in (0, 1]: of network.bandwidth_per_gpu, per direction
  Seconds alltoall_latency;  // fixed time of an all-to-all flow (plus network.latency across nodes)
};

struct Hardware {
  std::string name;  // preset or profile name
  int nodes = 1;
  GpuSpec gpu;
  PcieSpec pcie;
  NvlinkSpec nvlink;
  NetworkSpec network;
  CpuSpec cpu;
  KernelParams kernels;
  CollectiveParams collectives;

  [[nodiscard]] int total_gpus() const { return nodes * gpu.count; }
};

// The bandwidth and latency of one GPU's all-to-all flows (see CollectiveParams), the values the
// engine's port links are built with (sim/engine/platform.cpp).
[[nodiscard]] inline BytesPerSecond alltoall_intranode_bandwidth(const Hardware& hw) {
  return hw.nvlink.bandwidth * hw.collectives.alltoall_nvlink_efficiency;
}
[[nodiscard]] inline BytesPerSecond alltoall_internode_bandwidth(const Hardware& hw) {
  return hw.network.bandwidth_per_gpu * hw.collectives.alltoall_network_efficiency;
}
[[nodiscard]] inline Seconds alltoall_intranode_latency(const Hardware& hw) { return hw.collectives.alltoall_latency; }
[[nodiscard]] inline Seconds alltoall_internode_latency(const Hardware& hw) {
  return hw.network.latency + hw.collectives.alltoall_latency;
}

}  // namespace ess
