// How a scenario lays out and runs its system: the "parallelism" (attention data and tensor
// parallelism, expert parallelism, redundant experts), "execution" (two-batch overlap, host time)
// and "memory" (reserve, runtime overhead) sections.
#pragma once

#include "models/hardware.h"
#include "models/units.h"
#include "sim/config/model_config.h"
#include "sim/config/reader.h"
#include "sim/config/workload_config.h"

namespace ess {

struct Parallelism {
  int attention_dp = 1;     // data-parallel replicas of attention (each holds its own requests)
  int tensor_parallel = 1;  // GPUs sharing one attention/MLP replica by splitting heads/columns
  int expert_parallel = 1;  // GPUs the routed experts are spread over (1 for dense models)
  // Extra physical copies of routed experts (EPLB's redundant experts): routed + redundant physical
  // experts are spread evenly over the expert-parallel group, so EP sizes that do not divide the
  // routed experts work (EP72 with 288 physical experts). 0 for dense models.
  int redundant_experts = 0;
};

// How the serving engine runs one decode step.
struct ExecutionConfig {
  // 1, or 2 for two-batch overlap (SGLang TBO, vLLM DBO, DeepSeek's decode): the batch runs as two
  // micro-batches on one compute stream, each one's all-to-alls in flight while the other computes.
  int micro_batches = 1;
  // Host time per step on the critical path (scheduling, sampling, launches not hidden by CUDA
  // graphs): the GPUs are idle for it at the start of every step.
  Seconds step_overhead;
};

// Memory that is not weights, caches or activations.
struct MemoryConfig {
  double reserve_fraction = 0.1;  // of HBM capacity, kept free (fragmentation, allocator slack)
  Bytes runtime_overhead;         // CUDA context, cuBLAS/NCCL/all-to-all buffers and workspaces
};

// Each reads and checks its section (ConfigError naming the field on bad input).
[[nodiscard]] Parallelism read_parallelism(ObjectReader& r, const ModelConfig& model, const Hardware& hw);
[[nodiscard]] ExecutionConfig read_execution(ObjectReader& r, const Workload& w, const Parallelism& p);
[[nodiscard]] MemoryConfig read_memory(ObjectReader& r);

}  // namespace ess
