// How a scenario lays out and runs its system: the "parallelism" (attention data and tensor
// parallelism, expert parallelism, redundant experts), "execution" (two-batch overlap, host time)
// and "memory" (reserve, runtime overhead) sections.
#pragma once

#include <string>

#include "models/hardware.h"
#include "models/units.h"
#include "sim/config/model_config.h"
#include "sim/config/reader.h"
#include "sim/config/workload_config.h"

namespace ess {

// Attention and MoE are laid out independently, as the engines' launch flags choose them:
// attention_dp x tensor_parallel = all GPUs; the routed experts live in MoE groups of
// expert_parallel x moe_tensor_parallel GPUs (each expert on one EP rank, its columns split over
// moe_tensor_parallel GPUs). Under tensor-parallel attention the MoE group is the replica
// (expert_parallel x moe_tensor_parallel = tensor_parallel: every GPU of the replica holds its
// tokens; an all-reduce sums the partial outputs). Under DP attention (tensor_parallel 1) with
// moe_tensor_parallel 1 tokens travel by all-to-all to their experts' EP ranks; with
// moe_tensor_parallel > 1 every GPU of the MoE group all-gathers the group's tokens, computes its
// shards of its experts on them and a reduce-scatter returns each GPU its own tokens' sums (SGLang's
// DP attention with a tensor-parallel MoE).
struct Parallelism {
  int attention_dp = 1;     // data-parallel replicas of attention (each holds its own requests)
  int tensor_parallel = 1;  // GPUs sharing one attention/MLP replica by splitting heads/columns
  int expert_parallel = 1;  // EP ranks of a MoE group: each holds 1/expert_parallel of the experts (1 for dense models)
  // Extra physical copies of routed experts (EPLB's redundant experts): routed + redundant physical
  // experts are spread evenly over the expert-parallel group, so EP sizes that do not divide the
  // routed experts work (EP72 with 288 physical experts). 0 for dense models.
  int redundant_experts = 0;
  int moe_tensor_parallel = 1;  // GPUs each expert's columns are split over (1 for dense models)

  // GPUs holding one copy of the routed experts: expert_parallel x moe_tensor_parallel.
  [[nodiscard]] int moe_group() const { return expert_parallel * moe_tensor_parallel; }
  // DP attention with a tensor-parallel MoE: the MoE block all-gathers its group's tokens and
  // reduce-scatters the outputs (no all-to-all).
  [[nodiscard]] bool gathers_tokens() const { return tensor_parallel == 1 && moe_tensor_parallel > 1; }
  // GPUs that compute the same tokens in the MoE block and so split the shared expert: the
  // replica under TP attention, the gathering MoE group under DP attention, else 1 (each GPU its
  // own tokens, the shared expert whole).
  [[nodiscard]] int shared_expert_shards() const {
    return tensor_parallel > 1 ? tensor_parallel : (gathers_tokens() ? moe_group() : 1);
  }
  // "attention DP1 x TP8, EP4 x MoE TP2" (the MoE TP part when > 1).
  [[nodiscard]] std::string describe() const;
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
