// The decode-step operator graph: from the model, parallelism and workload, the segments each GPU
// executes in one step, priced by the cost models. No SimGrid here: the engine (sim/engine)
// schedules what this builds.
//
// Layout: GPUs are split into attention data-parallel replicas of `tensor_parallel` GPUs each
// (replica r = GPUs [r*tp, (r+1)*tp)); routed experts are spread over expert-parallel groups of
// `expert_parallel` GPUs (group g = GPUs [g*ep, (g+1)*ep)), each holding every expert once.
// MoE layouts: tp 1 with EP over replicas (DP attention + EP: all-to-all dispatch and combine);
// tp > 1 with ep = tp (TP attention, experts split over the replica: an all-reduce) or ep = 1
// (TP attention and TP experts: an all-reduce). MLA's latent cache is replicated on TP ranks.
// Each replica serves batch_per_gpu x tp requests; each request has mtp.depth query tokens.
// Physical experts (routed + redundant) are spread evenly over the group; where a routed token
// copy lands follows the expert-load model (expert_routing.h: skewed, drifting popularity; EPLB
// placement when the engine runs it). With two micro-batches every GPU's plan holds both passes
// (lane 0: ceil(batch / 2) requests, lane 1: the rest), each with its own routing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "models/attention.h"
#include "models/cost.h"
#include "sim/graph/expert_routing.h"
#include "sim/config/scenario.h"
#include "sim/graph/op.h"
#include "sim/graph/rng.h"

namespace ess {

class DecodeStepBuilder {
 public:
  // `batch_per_gpu` is the resolved batch (the scenario's, or the largest that fits). In offload
  // mode `offloaded` of them keep their latent cache in host memory (the rest are GPU-only) and
  // `cold_fraction` of each offloaded cache is on NVMe.
  DecodeStepBuilder(const Scenario& scenario, std::int64_t batch_per_gpu, std::int64_t offloaded = 0,
                    double cold_fraction = 0.0);

  [[nodiscard]] int gpus() const { return gpus_; }
  // Layers with their own weights and caches: the main layers, then the MTP modules in use.
  [[nodiscard]] int layer_count() const { return layers_total_; }
  // "dense", "moe" or "mtp" for each layer index.
  [[nodiscard]] std::string_view layer_kind(int layer) const;
  // Cached tokens per request at the start of step `step` (grows by the accepted tokens).
  [[nodiscard]] std::int64_t context_at(int step) const;

  // The plan of step `step`; `rng` drives the MoE routing (one stream per step is advised).
  // Offload mode needs `access`: per layer, what the cache simulation found for this step.
  [[nodiscard]] StepPlan build(int step, Rng& rng, const std::vector<LayerAccess>* access = nullptr) const;

 private:
  struct Tokens {
    std::int64_t requests;             // requests of the replica this GPU serves (this micro-batch)
    std::int64_t queries_per_request;  // query tokens per request in this pass
    std::int64_t offloaded = 0;        // offload: requests of this GPU (this micro-batch) in host memory
    // Requests the kernels compute: the CUDA graph's captured batch the engine pads `requests` to
    // (engine.cuda_graph_sizes); attention reads only the real requests' caches.
    std::int64_t padded = 0;
    [[nodiscard]] std::int64_t total() const { return std::max(requests, padded) * queries_per_request; }
  };

  // One launched kernel of cost `c`: its time plus the engine's gap before the next kernel.
  [[nodiscard]] Op kernel(std::string_view name, OpCategory category, const KernelCost& c) const;
  // MLA decode attention of `t` on this GPU, as the engine's kernel computes it.
  [[nodiscard]] MlaShape mla_shape(Tokens t) const;

  // One micro-batch's whole step (embedding, layers, head, MTP drafts) into `gpus`.
  void add_pass(std::vector<GpuStepPlan>& gpus, std::int64_t batch, std::int64_t offloaded, std::int64_t context,
                Rng& rng, const std::vector<LayerAccess>* access, std::vector<LayerOffload>* records) const;

  void add_embedding(std::vector<Segment>& out, Tokens t) const;
  // `access`: offload, what the cache simulation found in every layer (empty otherwise).
  void add_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context, int replica,
                     std::span<const LayerAccess> access, LayerOffload* record) const;
  // Offload: indexer, miss fetch and sparse attention of one MLA layer in the configured overlap,
  // with the prefetches this layer waits for and issues.
  void add_offload_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                             std::span<const LayerAccess> access, LayerOffload& record) const;
  // Offload with prefetch: the transfer prefetching `target`'s entries (no bytes: nothing to do).
  [[nodiscard]] Transfer prefetch_transfer(const LayerAccess& target, Tokens t) const;
  void add_prefetch(std::vector<Segment>& out, int target, Tokens t, std::span<const LayerAccess> access) const;
  void add_dense_mlp(std::vector<Segment>& out, int layer, Tokens t, int replica) const;
  void add_head(std::vector<Segment>& out, int layer, Tokens t) const;
  void add_mtp_projection(std::vector<Segment>& out, int layer, Tokens t) const;
  // The MoE block of one layer for every GPU at once (the routing couples them).
  void add_moe(std::vector<GpuStepPlan>& gpus, int layer, Tokens t, Rng& rng) const;
  // The same under tensor-parallel attention: experts split over the replica (ep = tp) or
  // sharded by TP (ep = 1); no all-to-all, an all-reduce of the partial outputs.
  void add_tp_moe(std::vector<GpuStepPlan>& gpus, int layer, Tokens t, Rng& rng) const;

  // The MoE block's input on one GPU: norm, router, top-k, shared expert (width per GPU).
  void add_moe_input(std::vector<Segment>& out, int layer, std::int64_t tokens, std::int64_t shared_width) const;
  // The routed experts of one GPU: grouped gate/up, activation, grouped down over each expert's
  // rows (nothing when no token was routed here); `width` is each expert's intermediate per GPU.
  void add_experts(std::vector<Segment>& out, int layer, std::span<const std::int64_t> rows_per_expert,
                   std::int64_t width) const;
  // The fp8 activation quantisation before an FP8 weight GEMM reading `features` per token (none
  // for bf16 weights).
  void add_quant(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                 std::int64_t features) const;
  // Appends `op` to the open compute segment of `out`, opening one labelled `label` if needed.
  static void append(std::vector<Segment>& out, int layer, std::string_view label, Op op);
  void close_with_allreduce(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                            int replica) const;

  const Scenario& s_;
  const ModelConfig& m_;
  const Hardware& hw_;
  std::int64_t batch_;
  int gpus_;
  int tp_;
  int ep_;
  std::int64_t physical_experts_;  // routed + redundant (MoE models)
  std::optional<ExpertRouting> routing_;  // MoE models: where routed token copies land
  int layers_total_;
  std::int64_t offloaded_;
  double cold_fraction_;
  int prefetch_lookahead_ = 0;      // offload with a prefetching policy: layers ahead, else 0
  std::size_t overlap_ = 0;         // offload: registry index of the scenario's overlap policy
  std::size_t overlap_serial_ = 0;  // registry index of the serial one (a layer with nothing to fetch)
};

}  // namespace ess
