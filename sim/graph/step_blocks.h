// The blocks every step graph is made of, whatever the phase: kernels with the engine's launch
// gap, the fp8 activation quantisation, embedding, dense MLP, the MoE block (router, shared
// expert, routed experts, all-to-all or all-reduce) and the LM head. The decode step
// (decode_step.h) and the prefill step (prefill_step.h) add their own attention around them.
//
// Layout: GPUs are split into attention data-parallel replicas of `tensor_parallel` GPUs each
// (replica r = GPUs [r*tp, (r+1)*tp)); routed experts are spread over expert-parallel groups of
// `expert_parallel` GPUs (group g = GPUs [g*ep, (g+1)*ep)), each holding every expert once.
// MoE layouts (sim/config/deployment_config.h): tp 1 with EP over replicas (DP attention + EP:
// all-to-all dispatch and combine); tp 1 with moe_tensor_parallel > 1 (DP attention + TP MoE: an
// all-gather of the MoE group's tokens, a reduce-scatter back); tp > 1 with expert_parallel x
// moe_tensor_parallel = tp (TP attention, experts split over the replica by EP and within an EP
// rank by TP: an all-reduce). Physical experts (routed + redundant) are spread
// evenly over the group; where a routed token copy lands follows the expert-load model
// (expert_routing.h). No SimGrid here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "models/cost.h"
#include "models/norm.h"
#include "sim/config/run_request.h"
#include "sim/graph/expert_routing.h"
#include "sim/graph/op.h"
#include "sim/base/rng.h"

namespace ess {

// How the MoE all-to-all moves token copies between nodes.
//   per_copy: every (token, expert) copy crosses the network on its own (DeepEP's low-latency
//             kernels, the decode phase).
//   per_node: a token crosses the network once per remote node that holds any of its experts and
//             is forwarded to them over NVLink there (DeepEP's normal kernels, the prefill phase;
//             the NVLink forwarding is not priced: it runs beside the RDMA and is 3-4x faster).
enum class AlltoallDedup { per_copy, per_node };

// Tokens per GPU routed one by one in a MoE pass of thousands of tokens (prefill, and decode steps
// with a prompt chunk); the rest follow their counts (StepBlocks::add_moe's max_routed). At 16,384
// tokens per GPU (the LMSYS and DeepSeek prefill batch) routing them all takes ~7 s per step of 32
// GPUs; sampled, the per-GPU expert rows carry sqrt(T / 2048) ~ 2.8x the routing noise they have
// (about 1.1% relative per GPU instead of 0.4% at EP32), which the slowest GPU feels.
// tests/engine/prefill_step_test.cpp bounds the step-time difference against exact routing.
inline constexpr std::int64_t kRoutedTokensPerPass = 2048;

// The norm kernel of the model's norm type.
[[nodiscard]] inline NormKind norm_kind(NormType t) { return t == NormType::rms ? NormKind::rms : NormKind::layer; }

class StepBlocks {
 public:
  // `run` must outlive this (its hardware is referenced).
  explicit StepBlocks(const RunBase& run);
  explicit StepBlocks(RunBase&&) = delete;

  [[nodiscard]] int gpus() const { return gpus_; }
  [[nodiscard]] int tp() const { return tp_; }
  // Layers with their own weights and caches: the main layers, then the MTP modules in use.
  [[nodiscard]] int layer_count() const { return layers_total_; }
  // "dense", "moe" or "mtp" for each layer index.
  [[nodiscard]] std::string_view layer_kind(int layer) const;

  // One launched kernel of cost `c`: its time plus the engine's gap before the next kernel.
  [[nodiscard]] Op kernel(std::string_view name, OpCategory category, const KernelCost& c) const;
  // Appends `op` to the open compute segment of `out`, opening one labelled `label` if needed.
  static void append(std::vector<Segment>& out, int layer, std::string_view label, Op op);
  // Under TP, the all-reduce of `tokens` partial layer outputs of replica `replica` (none at tp 1).
  void close_with_allreduce(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                            int replica) const;
  // The fp8 activation quantisation before an FP8 weight GEMM reading `features` per token (none
  // for bf16 weights).
  void add_quant(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                 std::int64_t features) const;

  // The attention block's projections of `tokens` tokens, before the attention core: the norm, then
  // MLA's fused q_a / kv_a down-projection, its RMSNorms, q_b and the indexer's query and key
  // projections (one quantised hidden state feeds q_a / kv_a and the indexer's key projection, one
  // quantised q both q_b and the indexer's query projection), or GQA's fused QKV and rope.
  void add_attention_input(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens) const;
  // After the core: the output projection of `tokens` tokens (MLA: with its fp8 quantisation).
  void add_attention_output(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens) const;
  // Embedding lookup of `tokens` tokens.
  void add_embedding(std::vector<Segment>& out, std::int64_t tokens) const;
  void add_dense_mlp(std::vector<Segment>& out, int layer, std::int64_t tokens, int replica) const;
  // Final norm, vocabulary-parallel LM head and sampling of `rows` tokens.
  void add_head(std::vector<Segment>& out, int layer, std::int64_t rows) const;
  void add_mtp_projection(std::vector<Segment>& out, int layer, std::int64_t tokens) const;
  // The MoE block of one layer for every GPU at once (the routing couples them); `tokens` per GPU.
  // `max_routed` > 0 (DP attention + EP only): each GPU routes at most that many of its tokens one by
  // one and every count is scaled by tokens / routed (prefill: thousands of tokens per GPU, where
  // routing each would dominate the run; prefill_step.h says what the sampling costs in accuracy).
  void add_moe(std::vector<GpuStepPlan>& gpus, int layer, std::int64_t tokens, Rng& rng, AlltoallDedup dedup,
               std::int64_t max_routed = 0) const;

 private:
  // The share of the SMs the normal (per_node) all-to-all kernels hold: engine.prefill_alltoall_sms
  // of hardware.gpu.sm_count (InputError naming the fields when that cannot be told).
  [[nodiscard]] double normal_alltoall_sm_fraction() const;
  // Where one layer's routed token copies go under DP attention + EP (add_moe's routing).
  struct ExpertTraffic {
    std::vector<std::int64_t> pairs;        // [src * ep + rank of dst in the group]: routed (token, expert) pairs
    std::vector<std::int64_t> expert_rows;  // [gpu * experts per GPU + local expert]: rows each expert received
    std::vector<double> moved;              // per_node only, as `pairs`: the copies that cross, deduplicated
    std::vector<double> received;           // per_node only, [gpu]: tokens it received (each once, however many of its experts)
  };
  // Routes `tokens` tokens per GPU (at most max_routed one by one, when > 0, the counts scaled by
  // tokens / routed): each token picks experts_per_token distinct physical experts of its EP group.
  [[nodiscard]] ExpertTraffic route_experts(int layer, std::int64_t tokens, Rng& rng, AlltoallDedup dedup,
                                            std::int64_t max_routed) const;
  // The MoE block of a MoE group whose GPUs all compute the group's tokens: under tensor-parallel
  // attention the replica (its tokens; an all-reduce sums the partial outputs), under DP attention
  // with moe_tensor_parallel > 1 the expert_parallel x moe_tensor_parallel GPUs of the group (an
  // all-gather of their tokens before, a reduce-scatter after). Each GPU computes its EP rank's
  // experts at 1/moe_tensor_parallel of their width, and 1/group of the shared expert's.
  void add_group_moe(std::vector<GpuStepPlan>& gpus, int layer, std::int64_t tokens, Rng& rng, std::int64_t max_routed) const;
  // The MoE block's input on one GPU: norm, router, top-k, shared expert (width per GPU).
  void add_moe_input(std::vector<Segment>& out, int layer, std::int64_t tokens, std::int64_t shared_width) const;
  // The routed experts of one GPU: grouped gate/up, activation, grouped down over each expert's
  // rows (nothing when no token was routed here); `width` is each expert's intermediate per GPU.
  void add_experts(std::vector<Segment>& out, int layer, std::span<const std::int64_t> rows_per_expert,
                   std::int64_t width) const;

  const Scenario& s_;
  const ModelConfig& m_;
  const Hardware& hw_;
  int gpus_;
  int tp_;
  int ep_;
  Parallelism parallelism_;
  std::int64_t physical_experts_;         // routed + redundant (MoE models)
  std::optional<ExpertRouting> routing_;  // MoE models: where routed token copies land
  int layers_total_;
};

}  // namespace ess
