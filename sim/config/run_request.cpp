#include "sim/config/run_request.h"

#include <string>

#include "sim/base/error.h"

namespace ess {

namespace {

// Capacity no batch reaches: 1 EB of HBM and of host memory per socket.
constexpr double kUnboundedBytes = 1e18;

RunBase base_of(const Scenario& s, const Hardware& hardware, const Parallelism& parallelism, const Workload& workload) {
  RunBase b;
  b.system = &s;
  b.hardware = hardware;
  b.parallelism = parallelism;
  b.workload = workload;
  return b;
}

}  // namespace

Bytes DecodeRun::hbm_capacity() const {
  return memory == MemoryBound::unbounded ? Bytes(kUnboundedBytes) : hardware.gpu.hbm_capacity;
}

Bytes DecodeRun::host_capacity_per_socket() const {
  return memory == MemoryBound::unbounded ? Bytes(kUnboundedBytes) : hardware.cpu.dram_capacity_per_socket;
}

double DecodeRun::host_memory_threshold() const {
  return memory == MemoryBound::unbounded ? 1.0 : system->cache.host_memory_threshold;
}

DecodeRun decode_run(const Scenario& s) {
  if (s.prefill) throw InternalError("decode_run: the scenario simulates prefill steps");
  return decode_run(s, s.workload, s.cache.mode, MemoryBound::hardware);
}

DecodeRun decode_run(const Scenario& s, const Workload& workload, CacheMode cache_mode, MemoryBound memory) {
  return DecodeRun{base_of(s, s.hardware, s.parallelism, workload), cache_mode, memory, std::nullopt};
}

PrefillRun prefill_run(const Scenario& s) {
  if (!s.prefill) throw InternalError("prefill_run: the scenario has no prefill section");
  return prefill_run(s, s.hardware.nodes, s.parallelism, *s.prefill);
}

PrefillRun prefill_run(const Scenario& s, int nodes, const Parallelism& parallelism, const PrefillConfig& work) {
  return PrefillRun{base_of(s, with_nodes(s.hardware, nodes), parallelism, s.workload), work};
}

RunRequest run_request(const Scenario& s) {
  if (s.serving) throw InternalError("run_request: a serving scenario runs through sim/serving/serving_run.h");
  if (s.prefill) return prefill_run(s);
  return decode_run(s);
}

Hardware with_nodes(const Hardware& hardware, int nodes) {
  if (nodes < 1) throw InternalError("with_nodes: nodes must be >= 1");
  Hardware h = hardware;
  h.nodes = nodes;
  return h;
}

std::vector<std::string> scaled_layout(const Scenario& s, int nodes) {
  const int gpus = nodes * s.hardware.gpu.count;
  std::vector<std::string> sets = {"hardware.nodes=" + std::to_string(nodes)};
  if (gpus % s.parallelism.tensor_parallel != 0) return {};
  sets.push_back("parallelism.attention_dp=" + std::to_string(gpus / s.parallelism.tensor_parallel));
  if (s.parallelism.expert_parallel == s.hardware.total_gpus() && s.hardware.total_gpus() > 1) {
    sets.push_back("parallelism.expert_parallel=" + std::to_string(gpus));
  }
  return sets;
}

}  // namespace ess
