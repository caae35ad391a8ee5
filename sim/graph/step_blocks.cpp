#include "sim/graph/step_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

#include "models/alltoall.h"
#include "models/collective.h"
#include "models/elementwise.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "models/row_gather.h"
#include "sim/base/error.h"
#include "sim/base/op_names.h"

namespace ess {

namespace {

// FP8 GEMMs (DeepGEMM) take FP8 activations: a per-token-group (1 x 128) quantisation kernel turns
// each bf16 input into fp8 plus one fp32 scale per 128 values first (SGLang's and vLLM's
// per_token_group_quant_fp8). It reads 2 B and writes ~1 B per element: priced as an elementwise
// kernel over fp8 elements with 2 inputs and 1 output. Inputs that are already fp8 (DeepEP's fp8
// dispatch into the experts; the experts' activation, fused with its quantisation) need none.
bool needs_quant(DType weights, DType activations) { return weights == DType::fp8 && activations != DType::fp8; }

// The random stream of the experts' long-run popularity (fixed per scenario seed, the same in
// every step); each step's draws come from the step's own stream.
constexpr std::uint64_t kExpertRoutingStream = 0x6578706572747321ULL;  // "experts!"

}  // namespace

StepBlocks::StepBlocks(const RunBase& run)
    : s_(*run.system),
      m_(run.system->model),
      hw_(run.hardware),
      gpus_(run.gpus()),
      tp_(run.parallelism.tensor_parallel),
      ep_(run.parallelism.expert_parallel),
      parallelism_(run.parallelism),
      physical_experts_(m_.moe ? m_.moe->routed_experts + run.parallelism.redundant_experts : 0),
      layers_total_(static_cast<int>(m_.layers) + run.workload.mtp.depth - 1) {
  if (m_.moe) {
    // Experts live in groups of `ep` GPUs; under TP MoE without EP (ep 1) each GPU holds them all.
    routing_.emplace(m_.moe->routed_experts, physical_experts_, ep_, layers_total_,
                     RoutingParams{run.workload.expert_skew, run.workload.expert_drift, s_.engine.eplb},
                     Rng(s_.seed).fork(kExpertRoutingStream));
  }
}

Op StepBlocks::kernel(std::string_view name, OpCategory category, const KernelCost& c) const {
  return Op{name, category, c.time + s_.engine.kernel_gap, c.flops, c.bytes, c.params};
}

std::string_view StepBlocks::layer_kind(int layer) const {
  if (layer >= m_.layers) return layerkind::mtp;
  return (m_.moe && layer >= m_.moe->first_dense_layers) ? layerkind::moe : layerkind::dense;
}

void StepBlocks::append(std::vector<Segment>& out, int layer, std::string_view label, Op op) {
  if (out.empty() || out.back().kind != SegmentKind::compute || out.back().layer != layer ||
      out.back().label != label) {
    Segment seg;
    seg.kind = SegmentKind::compute;
    seg.layer = layer;
    seg.label = label;
    out.push_back(std::move(seg));
  }
  out.back().duration += op.time;
  out.back().ops.push_back(op);
}

void StepBlocks::close_with_allreduce(std::vector<Segment>& out, int layer, std::string_view label,
                                             std::int64_t tokens, int replica) const {
  if (tp_ == 1) return;
  Segment seg;
  seg.kind = SegmentKind::allreduce;
  seg.layer = layer;
  seg.label = label;
  seg.group = replica;
  // The partial sums of the layer output, hidden x activation dtype per token.
  const Bytes bytes(static_cast<double>(tokens * m_.hidden) * bytes_per_element(m_.activation_dtype));
  seg.duration = allreduce_time(tp_, bytes, hw_);
  out.push_back(std::move(seg));
}

void StepBlocks::add_quant(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                                  std::int64_t features) const {
  if (!needs_quant(m_.weight_dtype, m_.activation_dtype)) return;
  append(out, layer, label, kernel(opname::act_quant, OpCategory::elementwise, elementwise({tokens * features, 2, 1, DType::fp8}, hw_)));
}

void StepBlocks::add_attention_input(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t T) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const std::int64_t heads = m_.attention.heads / tp_;
  append(out, layer, label, kernel(opname::attn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  if (m_.attention.kind == AttentionKind::mla) {
    const auto& a = m_.attention.mla;
    const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    add_quant(out, layer, label, T, m_.hidden);
    append(out, layer, label,
           kernel(opname::q_a_kv_a, OpCategory::gemm, gemm({T, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, m_.hidden, w}, hw_)));
    append(out, layer, label, kernel(opname::q_norm, OpCategory::norm, norm({T, a.q_lora_rank, act, NormKind::rms}, hw_)));
    append(out, layer, label, kernel(opname::kv_norm, OpCategory::norm, norm({T, a.kv_lora_rank, act, NormKind::rms}, hw_)));
    add_quant(out, layer, label, T, a.q_lora_rank);
    append(out, layer, label, kernel(opname::q_b, OpCategory::gemm, gemm({T, heads * qk_head, a.q_lora_rank, w}, hw_)));
    if (m_.indexer) {
      const auto& ix = *m_.indexer;
      append(out, layer, label, kernel(opname::indexer_q, OpCategory::gemm, gemm({T, ix.heads * ix.head_dim, a.q_lora_rank, w}, hw_)));
      append(out, layer, label, kernel(opname::indexer_k_w, OpCategory::gemm, gemm({T, ix.head_dim + ix.heads, m_.hidden, w}, hw_)));
    }
  } else {
    const auto& g = m_.attention.gqa;
    const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp_);
    append(out, layer, label, kernel(opname::qkv, OpCategory::gemm, gemm({T, (heads + 2 * kv_local) * g.head_dim, m_.hidden, w}, hw_)));
    append(out, layer, label,
           kernel(opname::rope, OpCategory::elementwise, elementwise({T * (heads + kv_local) * g.head_dim, 1, 1, act}, hw_)));
  }
}

void StepBlocks::add_attention_output(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t T) const {
  const std::int64_t heads = m_.attention.heads / tp_;
  if (m_.attention.kind == AttentionKind::mla) {
    const std::int64_t width = heads * m_.attention.mla.v_head_dim;
    add_quant(out, layer, label, T, width);
    append(out, layer, label, kernel(opname::wo, OpCategory::gemm, gemm({T, m_.hidden, width, m_.weight_dtype}, hw_)));
  } else {
    const std::int64_t width = heads * m_.attention.gqa.head_dim;
    append(out, layer, label, kernel(opname::o, OpCategory::gemm, gemm({T, m_.hidden, width, m_.weight_dtype}, hw_)));
  }
}

void StepBlocks::add_embedding(std::vector<Segment>& out, std::int64_t tokens) const {
  // Embedding lookup: gather one row per token.
  append(out, -1, segname::embedding,
         kernel(opname::embedding, OpCategory::elementwise,
                   elementwise({tokens * m_.hidden, 1, 1, m_.activation_dtype}, hw_)));
}

void StepBlocks::add_dense_mlp(std::vector<Segment>& out, int layer, std::int64_t T, int replica) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const std::int64_t width = m_.dense_intermediate / tp_;
  constexpr std::string_view label = segname::mlp;
  append(out, layer, label, kernel(opname::ffn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  add_quant(out, layer, label, T, m_.hidden);
  append(out, layer, label, kernel(opname::gate_up, OpCategory::gemm, gemm({T, 2 * width, m_.hidden, w}, hw_)));
  append(out, layer, label, kernel(opname::act, OpCategory::elementwise, elementwise({T * width, 2, 1, act}, hw_)));
  add_quant(out, layer, label, T, width);
  append(out, layer, label, kernel(opname::down, OpCategory::gemm, gemm({T, m_.hidden, width, w}, hw_)));
  close_with_allreduce(out, layer, segname::mlp_allreduce, T, replica);
  append(out, layer, label,
         kernel(opname::mlp_residual, OpCategory::elementwise, elementwise({T * m_.hidden, 2, 1, act}, hw_)));
}

void StepBlocks::add_moe_input(std::vector<Segment>& out, int layer, std::int64_t T, std::int64_t shared_width) const {
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  append(out, layer, segname::moe_in, kernel(opname::ffn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  append(out, layer, segname::moe_in,
         kernel(opname::router, OpCategory::gemm, gemm({T, moe.routed_experts, m_.hidden, DType::bf16}, hw_)));
  append(out, layer, segname::moe_in,
         kernel(opname::router_topk, OpCategory::elementwise, elementwise({T * moe.routed_experts, 1, 1, DType::fp32}, hw_)));
  if (shared_width > 0) {
    add_quant(out, layer, segname::moe_in, T, m_.hidden);
    append(out, layer, segname::moe_in,
           kernel(opname::shared_gate_up, OpCategory::gemm, gemm({T, 2 * shared_width, m_.hidden, w}, hw_)));
    append(out, layer, segname::moe_in,
           kernel(opname::shared_act, OpCategory::elementwise, elementwise({T * shared_width, 2, 1, act}, hw_)));
    add_quant(out, layer, segname::moe_in, T, shared_width);
    append(out, layer, segname::moe_in, kernel(opname::shared_down, OpCategory::gemm, gemm({T, m_.hidden, shared_width, w}, hw_)));
  }
}

void StepBlocks::add_experts(std::vector<Segment>& out, int layer, std::span<const std::int64_t> rows_per_expert,
                                    std::int64_t width) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  std::int64_t rows = 0;
  std::int64_t active = 0;
  for (const std::int64_t r : rows_per_expert) {
    rows += r;
    active += r > 0 ? 1 : 0;
  }
  if (rows == 0) return;
  append(out, layer, segname::experts,
         kernel(opname::experts_gate_up, OpCategory::gemm, grouped_gemm({active, rows, 2 * width, m_.hidden, w}, rows_per_expert, hw_)));
  append(out, layer, segname::experts,
         kernel(opname::experts_act, OpCategory::elementwise, elementwise({rows * width, 2, 1, act}, hw_)));
  append(out, layer, segname::experts,
         kernel(opname::experts_down, OpCategory::gemm, grouped_gemm({active, rows, m_.hidden, width, w}, rows_per_expert, hw_)));
}

double StepBlocks::normal_alltoall_sm_fraction() const {
  const int sms = s_.engine.prefill_alltoall_sms;
  if (sms == 0) return 0.0;
  if (!hw_.gpu.sm_count) {
    throw InputError("hardware.gpu.sm_count is needed: engine " + s_.engine.name + "'s prefill all-to-all holds " +
                     std::to_string(sms) + " SMs (engine.prefill_alltoall_sms) and " + hw_.name +
                     " does not say how many the GPU has; add it, or set engine.prefill_alltoall_sms to 0");
  }
  if (sms >= *hw_.gpu.sm_count) {
    throw InputError("engine.prefill_alltoall_sms (" + std::to_string(sms) + ") must be below hardware.gpu.sm_count (" +
                     std::to_string(*hw_.gpu.sm_count) + "): the all-to-all would leave no SM for compute");
  }
  return static_cast<double>(sms) / static_cast<double>(*hw_.gpu.sm_count);
}

void StepBlocks::add_group_moe(std::vector<GpuStepPlan>& gpus, int layer, std::int64_t T, Rng& rng,
                               std::int64_t max_routed) const {
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  // Under TP attention the MoE group is the replica and every GPU of it already holds the
  // replica's T tokens; under DP attention each GPU all-gathers the group's tokens first.
  const bool gather = parallelism_.gathers_tokens();
  const int group = parallelism_.shared_expert_shards();  // the GPUs computing the same tokens
  const int moe_tp = parallelism_.moe_tensor_parallel;
  const std::int64_t experts_per_rank = physical_experts_ / ep_;
  const std::int64_t width = moe.expert_intermediate / moe_tp;
  const std::int64_t shared_width = moe.expert_intermediate * moe.shared_experts / parallelism_.shared_expert_shards();
  const std::int64_t tokens = gather ? T * group : T;
  // DP attention gathers thousands of prefill tokens per GPU: at most max_routed per GPU are
  // routed one by one, the counts scaled (as add_moe's all-to-all path); under TP attention every
  // token is routed.
  const std::int64_t routed = gather && max_routed > 0 ? std::min(tokens, max_routed * group) : tokens;
  const Bytes share(static_cast<double>(T * m_.hidden) * bytes_per_element(act));
  const auto gather_segment = [&](std::string_view label, int g, Seconds time) {
    Segment seg;
    seg.kind = SegmentKind::allreduce;
    seg.layer = layer;
    seg.label = label;
    seg.group = g;
    seg.moe_group = true;
    seg.duration = time;
    return seg;
  };
  std::vector<std::int64_t> rows(static_cast<std::size_t>(ep_ * experts_per_rank));  // [EP rank][local expert]
  std::vector<std::int64_t> picked(static_cast<std::size_t>(moe.experts_per_token));
  for (int g = 0; g < gpus_ / group; ++g) {
    std::fill(rows.begin(), rows.end(), 0);
    // Each token picks experts_per_token distinct physical experts (slot = EP rank x experts per
    // rank + local expert).
    const ExpertRouting::Pass pass = routing_->pass(layer, rng);
    for (std::int64_t tok = 0; tok < routed; ++tok) {
      pass.route(rng, picked);
      for (const std::int64_t e : picked) ++rows[static_cast<std::size_t>(e)];
    }
    if (routed < tokens) {
      const double scale = static_cast<double>(tokens) / static_cast<double>(routed);
      for (std::int64_t& n : rows) n = std::llround(static_cast<double>(n) * scale);
    }
    for (int rank = 0; rank < group; ++rank) {
      auto& out = gpus[static_cast<std::size_t>(g * group + rank)].segments;
      if (gather) out.push_back(gather_segment(segname::moe_allgather, g, allgather_time(group, share, hw_)));
      add_moe_input(out, layer, tokens, shared_width);
      // The GPUs of one EP rank are adjacent; each computes its moe_tensor_parallel share of the
      // rank's experts' columns.
      const std::size_t ep_rank = static_cast<std::size_t>(rank / moe_tp);
      add_experts(out, layer,
                  std::span<const std::int64_t>(rows.data() + ep_rank * static_cast<std::size_t>(experts_per_rank),
                                                static_cast<std::size_t>(experts_per_rank)),
                  width);
      // This GPU's partial sum of the experts' (and shared expert's) outputs, summed over the group
      // by the all-reduce (or reduce-scattered back to the tokens' GPUs), then the residual add.
      append(out, layer, segname::moe_out,
             kernel(opname::combine_sum, OpCategory::elementwise,
                    elementwise({tokens * m_.hidden, static_cast<int>(moe.experts_per_token) + 1, 1, act}, hw_)));
      if (gather) {
        out.push_back(gather_segment(segname::moe_reduce_scatter, g, reduce_scatter_time(group, share, hw_)));
      } else {
        close_with_allreduce(out, layer, segname::moe_allreduce, T, g);
      }
      append(out, layer, segname::moe_out,
             kernel(opname::moe_residual, OpCategory::elementwise, elementwise({T * m_.hidden, 2, 1, act}, hw_)));
    }
  }
}

namespace {

// The copies one source GPU moves to each rank of its EP group in a per_node all-to-all: within
// the source's node a token goes to each GPU once; to a remote node it crosses once and is spread
// over that node's GPUs (their share of the node's per-GPU tokens). `rank_tokens` and
// `node_tokens`: the source's tokens that reached each rank and node.
void spread_node_copies(std::size_t src, std::size_t group_start, std::size_t E, std::size_t L, std::size_t nodes,
                        const std::vector<std::int64_t>& rank_tokens, const std::vector<std::int64_t>& node_tokens,
                        std::vector<double>& moved) {
  const std::size_t own_node = nodes > 1 ? (src - group_start) / L : 0;
  for (std::size_t n = 0; n < nodes; ++n) {
    const std::size_t first = n * (nodes > 1 ? L : E);
    const std::size_t count = nodes > 1 ? L : E;
    std::int64_t node_rank_tokens = 0;
    for (std::size_t r = first; r < first + count; ++r) node_rank_tokens += rank_tokens[r];
    for (std::size_t r = first; r < first + count; ++r) {
      double copies = static_cast<double>(rank_tokens[r]);
      if (n != own_node && node_rank_tokens > 0) {
        copies *= static_cast<double>(node_tokens[n]) / static_cast<double>(node_rank_tokens);
      }
      moved[src * E + r] = copies;
    }
  }
}

}  // namespace

StepBlocks::ExpertTraffic StepBlocks::route_experts(int layer, std::int64_t T, Rng& rng, AlltoallDedup dedup,
                                                    std::int64_t max_routed) const {
  const auto& moe = *m_.moe;
  const std::int64_t experts_per_gpu = physical_experts_ / ep_;
  const auto G = static_cast<std::size_t>(gpus_);
  // Routing: each token picks experts_per_token distinct physical experts in its own EP group
  // (expert_routing.h: this layer's skewed popularity, this pass's drift, the EPLB placement).
  // Routed (token, expert) pairs from each GPU to each GPU of its EP group: G x ep counts, not G x G
  // (thousands of GPUs would need gigabytes for a matrix that is zero outside the groups).
  const auto E = static_cast<std::size_t>(ep_);
  std::vector<std::int64_t> pair_count(G * E, 0);  // [src * ep + rank of dst in the group]
  std::vector<std::int64_t> expert_rows(G * static_cast<std::size_t>(experts_per_gpu), 0);  // [gpu][local expert]
  std::vector<std::int64_t> picked(static_cast<std::size_t>(moe.experts_per_token));
  // Physical expert e of a group lives on the group's GPU e / experts_per_gpu as its local expert
  // e % experts_per_gpu, so its row counter is at group_start x experts_per_gpu + e: no division in
  // the loop (it runs tokens x experts_per_token times per layer).
  std::vector<std::size_t> rank_of(static_cast<std::size_t>(physical_experts_));
  for (std::size_t e = 0; e < rank_of.size(); ++e) rank_of[e] = e / static_cast<std::size_t>(experts_per_gpu);
  // Per node: the copies each GPU sends to each peer, once a token crosses to a remote node once
  // and to a GPU once (counted below); per copy they are the pairs.
  const bool per_node = dedup == AlltoallDedup::per_node;
  // Tokens routed one by one per GPU and pass (at most max_routed, when given).
  const std::int64_t routed = max_routed > 0 ? std::min(T, max_routed) : T;
  std::vector<double> moved;  // [src * ep + rank of dst in the group], per_node only
  std::vector<double> received;  // [gpu], per_node only
  std::vector<std::int64_t> rank_stamp;  // per rank of the group: the last token that reached it
  std::vector<std::int64_t> node_stamp;  // per node of the group: the same
  std::vector<std::int64_t> rank_tokens;  // per src: tokens sent to each rank of the group
  std::vector<std::int64_t> node_tokens;  // per src: tokens sent to each node of the group
  const auto L = static_cast<std::size_t>(hw_.gpu.count);
  const std::size_t nodes = E > L ? E / L : 1;
  if (per_node) {
    moved.assign(G * E, 0.0);
    received.assign(G, 0.0);
    rank_tokens.assign(E, 0);
    node_tokens.assign(nodes, 0);
    rank_stamp.assign(E, -1);
    node_stamp.assign(nodes, -1);
  }
  // One drift draw per pass and EP group (the requests of a group are its own).
  std::optional<ExpertRouting::Pass> pass;
  for (std::size_t src = 0; src < G; ++src) {
    const std::size_t group_start = src / E * E;
    if (src == group_start) pass.emplace(routing_->pass(layer, rng));
    std::int64_t* const rows = expert_rows.data() + group_start * static_cast<std::size_t>(experts_per_gpu);
    std::int64_t* const to = pair_count.data() + src * E;
    if (per_node) {
      std::fill(rank_tokens.begin(), rank_tokens.end(), 0);
      std::fill(node_tokens.begin(), node_tokens.end(), 0);
      std::fill(rank_stamp.begin(), rank_stamp.end(), -1);
      std::fill(node_stamp.begin(), node_stamp.end(), -1);
    }
    for (std::int64_t tok = 0; tok < routed; ++tok) {
      pass->route(rng, picked);
      for (const std::int64_t e : picked) {
        ++to[rank_of[static_cast<std::size_t>(e)]];
        ++rows[e];
      }
      if (!per_node) continue;
      // A rank (node) counts this token once: stamped with the token's number when first reached.
      for (const std::int64_t e : picked) {
        const std::size_t r = rank_of[static_cast<std::size_t>(e)];
        if (rank_stamp[r] == tok) continue;
        rank_stamp[r] = tok;
        ++rank_tokens[r];
        const std::size_t n = nodes > 1 ? r / L : 0;
        if (node_stamp[n] == tok) continue;
        node_stamp[n] = tok;
        ++node_tokens[n];
      }
    }
    if (per_node) {
      spread_node_copies(src, group_start, E, L, nodes, rank_tokens, node_tokens, moved);
      for (std::size_t r = 0; r < E; ++r) received[group_start + r] += static_cast<double>(rank_tokens[r]);
    }
  }

  // Sampled routing: each sampled token stands for T / routed tokens.
  if (routed < T) {
    const double scale = static_cast<double>(T) / static_cast<double>(routed);
    const auto scaled = [scale](std::int64_t& n) { n = std::llround(static_cast<double>(n) * scale); };
    std::for_each(pair_count.begin(), pair_count.end(), scaled);
    std::for_each(expert_rows.begin(), expert_rows.end(), scaled);
    for (double& m : moved) m *= scale;
    for (double& r : received) r *= scale;
  }
  return {std::move(pair_count), std::move(expert_rows), std::move(moved), std::move(received)};
}

void StepBlocks::add_moe(std::vector<GpuStepPlan>& gpus, int layer, std::int64_t T, Rng& rng, AlltoallDedup dedup,
                         std::int64_t max_routed) const {
  if (tp_ > 1 || parallelism_.gathers_tokens()) {
    add_group_moe(gpus, layer, T, rng, max_routed);
    return;
  }
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  const std::int64_t experts_per_gpu = physical_experts_ / ep_;
  const auto G = static_cast<std::size_t>(gpus_);

  const ExpertTraffic traffic = route_experts(layer, T, rng, dedup, max_routed);
  const auto E = static_cast<std::size_t>(ep_);
  const bool per_node = dedup == AlltoallDedup::per_node;
  const auto& pair_count = traffic.pairs;
  const auto& expert_rows = traffic.expert_rows;
  const auto& moved = traffic.moved;
  const auto pairs = [&](std::size_t src, std::size_t dst) { return pair_count[src * E + dst % E]; };

  // Dispatched tokens are fp8 with one fp32 scale per 128 values; combined outputs are bf16
  // (models/alltoall.h, which `ess-sim cost dispatch/combine` prices the same way).
  const double dispatch_bytes = dispatch_bytes_per_copy(m_.hidden).value();
  const double combine_bytes = combine_bytes_per_copy(m_.hidden, act).value();
  const std::int64_t shared_width = moe.expert_intermediate * moe.shared_experts;
  const double sm_fraction = per_node ? normal_alltoall_sm_fraction() : 0.0;
  // Copies moved from `src` to `dst` in a dispatch (the same back in a combine).
  const auto copies = [&](std::size_t src, std::size_t dst) {
    return per_node ? moved[src * E + dst % E] : static_cast<double>(pairs(src, dst));
  };
  // GPU g's side of an all-to-all: to each peer it sends `bytes_per_pair` per copy it sends there
  // (dispatch), or per copy it received from there (combine, `back`).
  const auto alltoall = [&](std::size_t g, std::string_view label, double bytes_per_pair, bool back) {
    Segment seg;
    seg.kind = SegmentKind::alltoall;
    seg.layer = layer;
    seg.label = label;
    seg.group = static_cast<int>(g) / ep_;
    seg.sm_fraction = sm_fraction;
    if (sm_fraction > 0) seg.overlap_efficiency = s_.engine.prefill_alltoall_overlap_efficiency;
    seg.send_bytes.assign(E, 0.0);
    seg.recv_bytes.assign(E, 0.0);
    const std::size_t group_start = g / E * E;
    for (std::size_t i = 0; i < E; ++i) {
      const std::size_t peer = group_start + i;
      seg.send_bytes[i] = copies(back ? peer : g, back ? g : peer) * bytes_per_pair;
      seg.recv_bytes[i] = copies(back ? g : peer, back ? peer : g) * bytes_per_pair;
    }
    return seg;
  };

  // The MoE input is the same on every GPU (same tokens, same widths): priced once.
  std::vector<Segment> input;
  add_moe_input(input, layer, T, shared_width);
  for (std::size_t g = 0; g < G; ++g) {
    auto& out = gpus[g].segments;
    for (const Segment& seg : input) {
      for (const Op& op : seg.ops) append(out, layer, seg.label, op);
    }
    out.push_back(alltoall(g, segname::dispatch, dispatch_bytes, false));

    // Each expert's own rows: the kernel pads every expert to whole tiles (models/gemm.h).
    const std::span<const std::int64_t> rows(expert_rows.data() + g * static_cast<std::size_t>(experts_per_gpu),
                                             static_cast<std::size_t>(experts_per_gpu));
    // DeepEP's normal dispatch delivers each token once per GPU, in arrival order; the contiguous
    // grouped GEMM wants its rows expert by expert: the engines copy them there (SGLang's and
    // vLLM's ep_scatter) and sum each token's expert rows back with its weights (ep_gather).
    // `permute(name, from, to, row_bytes)`: `from` rows read, `to` written.
    const auto permute = [&](std::string_view name, std::int64_t from, std::int64_t to, double row_bytes) {
      append(out, layer, segname::experts, kernel(name, OpCategory::elementwise, row_gather({from, to, row_bytes, row_bytes}, hw_)));
    };
    const std::int64_t expert_copies = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
    const std::int64_t tokens_here = per_node ? std::llround(traffic.received[g]) : 0;
    if (per_node) permute(opname::experts_permute, tokens_here, expert_copies, dispatch_bytes);
    add_experts(out, layer, rows, moe.expert_intermediate);
    if (per_node) permute(opname::experts_unpermute, expert_copies, tokens_here, static_cast<double>(m_.hidden) * bytes_per_element(act));

    // Expert outputs go back to the GPU each token came from.
    out.push_back(alltoall(g, segname::combine, combine_bytes, true));

    // Weighted sum of the experts' outputs (plus the shared expert's) and the residual add.
    append(out, layer, segname::moe_out,
           kernel(opname::combine_sum, OpCategory::elementwise,
                     elementwise({T * m_.hidden, static_cast<int>(moe.experts_per_token) + 2, 1, act}, hw_)));
  }
}

void StepBlocks::add_head(std::vector<Segment>& out, int layer, std::int64_t T) const {
  append(out, layer, segname::head,
         kernel(opname::final_norm, OpCategory::norm, norm({T, m_.hidden, m_.activation_dtype, norm_kind(m_.norm)}, hw_)));
  // Vocabulary-parallel LM head under TP (each rank computes vocab / tp logits).
  append(out, layer, segname::head,
         kernel(opname::lm_head, OpCategory::gemm, gemm({T, m_.vocab / tp_, m_.hidden, m_.activation_dtype}, hw_)));
  append(out, layer, segname::head,
         kernel(opname::sampling, OpCategory::elementwise, elementwise({T * (m_.vocab / tp_), 1, 1, DType::fp32}, hw_)));
}

void StepBlocks::add_mtp_projection(std::vector<Segment>& out, int layer, std::int64_t T) const {
  const DType act = m_.activation_dtype;
  // DeepSeek-V3 MTP module: embed the previous token, RMSNorm it and the last hidden state, and
  // project their concatenation (2 x hidden -> hidden) before the module's transformer layer.
  append(out, layer, segname::mtp_in,
         kernel(opname::mtp_embedding, OpCategory::elementwise, elementwise({T * m_.hidden, 1, 1, act}, hw_)));
  append(out, layer, segname::mtp_in,
         kernel(opname::mtp_norms, OpCategory::norm, norm({T, 2 * m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  add_quant(out, layer, segname::mtp_in, T, 2 * m_.hidden);
  append(out, layer, segname::mtp_in, kernel(opname::eh_proj, OpCategory::gemm, gemm({T, m_.hidden, 2 * m_.hidden, m_.weight_dtype}, hw_)));
}

}  // namespace ess
