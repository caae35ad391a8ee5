#include "sim/graph/decode_step.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>

#include "models/alltoall.h"
#include "models/attention.h"
#include "models/collective.h"
#include "models/copy.h"
#include "models/elementwise.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "sim/graph/op_names.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

NormKind norm_kind(NormType t) { return t == NormType::rms ? NormKind::rms : NormKind::layer; }

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

DecodeStepBuilder::DecodeStepBuilder(const Scenario& scenario, std::int64_t batch_per_gpu, std::int64_t offloaded,
                                     double cold_fraction)
    : s_(scenario),
      m_(scenario.model),
      hw_(scenario.hardware),
      batch_(batch_per_gpu),
      gpus_(scenario.hardware.total_gpus()),
      tp_(scenario.parallelism.tensor_parallel),
      ep_(scenario.parallelism.expert_parallel),
      physical_experts_(scenario.model.moe ? scenario.model.moe->routed_experts + scenario.parallelism.redundant_experts : 0),
      layers_total_(static_cast<int>(scenario.model.layers) + scenario.workload.mtp.depth - 1),
      offloaded_(offloaded),
      cold_fraction_(cold_fraction) {
  if (scenario.model.moe) {
    // Experts live in groups of `ep` GPUs; under TP MoE without EP (ep 1) each GPU holds them all.
    routing_.emplace(scenario.model.moe->routed_experts, physical_experts_, ep_, layers_total_,
                     RoutingParams{scenario.workload.expert_skew, scenario.workload.expert_drift, scenario.engine.eplb},
                     Rng(scenario.seed).fork(kExpertRoutingStream));
  }
  if (scenario.cache.mode == CacheMode::offload) {
    overlap_ = overlap_index(scenario.cache.overlap);
    if (registered(prefetch_policies(), "prefetch", scenario.cache.prefetch.policy).make()->prefetches()) {
      prefetch_lookahead_ = scenario.cache.prefetch.lookahead;
    }
  }
  const auto overlaps = overlap_policies();
  for (std::size_t i = 0; i < overlaps.size(); ++i) {
    if (overlaps[i].make == &make_serial_overlap) overlap_serial_ = i;
  }
  if (batch_per_gpu < 1) throw std::invalid_argument("DecodeStepBuilder: batch_per_gpu must be >= 1");
  if (offloaded < 0 || offloaded > batch_per_gpu) {
    throw std::invalid_argument("DecodeStepBuilder: offloaded requests must be in [0, batch_per_gpu]");
  }
  if (scenario.execution.micro_batches == 2 && batch_per_gpu < 2) {
    throw std::invalid_argument("DecodeStepBuilder: two micro-batches need at least 2 requests per GPU");
  }
}

Op DecodeStepBuilder::kernel(std::string_view name, OpCategory category, const KernelCost& c) const {
  return Op{name, category, c.time + s_.engine.kernel_gap, c.flops, c.bytes, c.params};
}

MlaShape DecodeStepBuilder::mla_shape(Tokens t) const {
  const auto& a = m_.attention.mla;
  const MlaKernel& k = *s_.engine.mla_kernel;
  return MlaShape{t.requests, t.queries_per_request, m_.attention.heads / tp_, a.kv_lora_rank + a.qk_rope_head_dim,
                  a.kv_lora_rank, m_.attention.cache_bytes_per_token, k.row_tile, k.mma};
}

std::string_view DecodeStepBuilder::layer_kind(int layer) const {
  if (layer >= m_.layers) return "mtp";
  return (m_.moe && layer >= m_.moe->first_dense_layers) ? "moe" : "dense";
}

std::int64_t DecodeStepBuilder::context_at(int step) const {
  // Every request gains the accepted tokens of each step (on average; acceptance may be fractional).
  return s_.workload.context_length +
         static_cast<std::int64_t>(std::floor(static_cast<double>(step) * s_.workload.mtp.acceptance));
}

void DecodeStepBuilder::append(std::vector<Segment>& out, int layer, std::string_view label, Op op) {
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

void DecodeStepBuilder::close_with_allreduce(std::vector<Segment>& out, int layer, std::string_view label,
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

void DecodeStepBuilder::add_quant(std::vector<Segment>& out, int layer, std::string_view label, std::int64_t tokens,
                                  std::int64_t features) const {
  if (!needs_quant(m_.weight_dtype, m_.activation_dtype)) return;
  append(out, layer, label, kernel(opname::act_quant, OpCategory::elementwise, elementwise({tokens * features, 2, 1, DType::fp8}, hw_)));
}

void DecodeStepBuilder::add_embedding(std::vector<Segment>& out, Tokens t) const {
  // Embedding lookup: gather one row per token.
  append(out, -1, "embedding",
         kernel(opname::embedding, OpCategory::elementwise,
                   elementwise({t.total() * m_.hidden, 1, 1, m_.activation_dtype}, hw_)));
}

void DecodeStepBuilder::add_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                                      int replica, std::span<const LayerAccess> access, LayerOffload* record) const {
  const bool offload = !access.empty();
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const std::int64_t T = t.total();
  const std::int64_t heads = m_.attention.heads / tp_;
  constexpr std::string_view label = "attention";
  append(out, layer, label, kernel(opname::attn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));

  if (m_.attention.kind == AttentionKind::mla) {
    const auto& a = m_.attention.mla;
    const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    // Fused q_a / kv_a down-projection (replicated across TP ranks), then their RMSNorms. One
    // quantised hidden state feeds it and the indexer's key projection, one quantised q both
    // q_b and the indexer's query projection.
    add_quant(out, layer, label, T, m_.hidden);
    append(out, layer, label,
           kernel(opname::q_a_kv_a, OpCategory::gemm,
                     gemm({T, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, m_.hidden, w}, hw_)));
    append(out, layer, label, kernel(opname::q_norm, OpCategory::norm, norm({T, a.q_lora_rank, act, NormKind::rms}, hw_)));
    append(out, layer, label, kernel(opname::kv_norm, OpCategory::norm, norm({T, a.kv_lora_rank, act, NormKind::rms}, hw_)));
    add_quant(out, layer, label, T, a.q_lora_rank);
    append(out, layer, label, kernel(opname::q_b, OpCategory::gemm, gemm({T, heads * qk_head, a.q_lora_rank, w}, hw_)));
    if (m_.indexer) {
      const auto& ix = *m_.indexer;
      append(out, layer, label,
             kernel(opname::indexer_q, OpCategory::gemm, gemm({T, ix.heads * ix.head_dim, a.q_lora_rank, w}, hw_)));
      // Indexer key projection and per-head weights from the hidden state.
      append(out, layer, label,
             kernel(opname::indexer_k_w, OpCategory::gemm, gemm({T, ix.head_dim + ix.heads, m_.hidden, w}, hw_)));
    }
    if (offload) {
      add_offload_attention(out, layer, t, context, access, *record);
    } else {
    std::int64_t selected = context;
    if (m_.indexer) {
      const auto& ix = *m_.indexer;
      append(out, layer, label,
             kernel(opname::indexer_score, OpCategory::indexer,
                       indexer_scoring({t.requests, t.queries_per_request, ix.heads, ix.head_dim, context,
                                        ix.cache_bytes_per_token},
                                       hw_)));
      append(out, layer, label,
             kernel(opname::indexer_topk, OpCategory::indexer, topk({T, context, ix.top_k}, hw_)));
      selected = std::min(ix.top_k, context);
    }
    // Absorbed MLA (FlashMLA decode): queries projected into the latent space per head, attention
    // over latent entries, then the per-head value up-projection.
    append(out, layer, label,
           kernel(opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_)));
    const MlaShape shape = mla_shape(t);
    const KernelCost attn =
        m_.indexer ? sparse_mla_attention(shape, selected, hw_) : dense_mla_attention(shape, context, hw_);
    append(out, layer, label, kernel(m_.indexer ? opname::sparse_mla : opname::dense_mla, OpCategory::attention, attn));
    }
    const std::string_view post = offload ? "attention_post" : label;
    append(out, layer, post,
           kernel(opname::v_up, OpCategory::gemm, gemm({T, heads * a.v_head_dim, a.kv_lora_rank, act}, hw_)));
    add_quant(out, layer, post, T, heads * a.v_head_dim);
    append(out, layer, post, kernel(opname::wo, OpCategory::gemm, gemm({T, m_.hidden, heads * a.v_head_dim, w}, hw_)));
  } else {
    const auto& g = m_.attention.gqa;
    const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp_);
    append(out, layer, label,
           kernel(opname::qkv, OpCategory::gemm, gemm({T, (heads + 2 * kv_local) * g.head_dim, m_.hidden, w}, hw_)));
    append(out, layer, label,
           kernel(opname::rope, OpCategory::elementwise,
                     elementwise({T * (heads + kv_local) * g.head_dim, 1, 1, act}, hw_)));
    append(out, layer, label,
           kernel(opname::attention, OpCategory::attention,
                     gqa_attention({t.requests, t.queries_per_request, heads, kv_local, g.head_dim, context,
                                    m_.attention.cache_dtype, act},
                                   hw_)));
    append(out, layer, label, kernel(opname::o, OpCategory::gemm, gemm({T, m_.hidden, heads * g.head_dim, w}, hw_)));
  }
  close_with_allreduce(out, layer, "attn_allreduce", T, replica);
  append(out, layer, offload ? "attention_post" : label,
         kernel(opname::attn_residual, OpCategory::elementwise, elementwise({T * m_.hidden, 2, 1, act}, hw_)));
  if (offload && t.offloaded > 0) {
    // The new tokens' latent entries go to the host copy of the cache: one contiguous run per
    // request, started now and waited for only at the end of the step.
    Segment wb;
    wb.kind = SegmentKind::writeback;
    wb.layer = layer;
    wb.label = opname::writeback;
    wb.transfer.h2d = false;
    wb.transfer.gather = s_.cache.transfer == TransferPath::gather;
    wb.transfer.bytes = static_cast<double>(t.offloaded * t.queries_per_request) * m_.attention.cache_bytes_per_token.value();
    wb.transfer.runs = static_cast<double>(t.offloaded);
    record->d2h_bytes = wb.transfer.bytes;
    out.push_back(std::move(wb));
  }
}

Transfer DecodeStepBuilder::prefetch_transfer(const LayerAccess& target, Tokens t) const {
  Transfer p;
  p.h2d = true;
  p.gather = s_.cache.transfer == TransferPath::gather;
  p.bytes = target.prefetched * static_cast<double>(t.offloaded) * m_.attention.cache_bytes_per_token.value();
  p.runs = target.prefetch_runs * static_cast<double>(t.offloaded);
  p.nvme_bytes = p.bytes * cold_fraction_;
  return p;
}

void DecodeStepBuilder::add_prefetch(std::vector<Segment>& out, int target, Tokens t, std::span<const LayerAccess> access) const {
  if (target >= layers_total_) return;
  Segment seg;
  seg.kind = SegmentKind::prefetch;
  seg.layer = target;
  seg.label = opname::prefetch;
  seg.transfer = prefetch_transfer(access[static_cast<std::size_t>(target)], t);
  if (seg.transfer.bytes > 0) out.push_back(std::move(seg));
}

void DecodeStepBuilder::add_offload_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                                              std::span<const LayerAccess> all, LayerOffload& record) const {
  const LayerAccess& access = all[static_cast<std::size_t>(layer)];
  const DType act = m_.activation_dtype;
  const auto& a = m_.attention.mla;
  const auto& ix = *m_.indexer;
  const std::int64_t T = t.total();
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t selected = std::min(ix.top_k, context);
  const double entry = m_.attention.cache_bytes_per_token.value();

  // Misses of this GPU: the offloaded requests' mean, scaled (GPU-only requests never miss). Those a
  // prefetch brought early are on the GPU by now: the rest are fetched on demand.
  const double all_misses = std::min(access.misses, static_cast<double>(selected));
  const double early = std::min(access.prefetch_used, all_misses) * static_cast<double>(t.offloaded);
  const double misses = all_misses * static_cast<double>(t.offloaded) - early;
  Transfer fetch;
  fetch.h2d = true;
  fetch.gather = s_.cache.transfer == TransferPath::gather;
  fetch.bytes = misses * entry;
  fetch.runs = access.runs * static_cast<double>(t.offloaded);
  // The runs among the on-demand misses, taken in proportion (where they fall is not tracked).
  if (early > 0) fetch.runs *= misses / (misses + early);
  fetch.nvme_bytes = fetch.bytes * cold_fraction_;
  const Transfer prefetched = prefetch_transfer(access, t);
  record.access = access;
  record.h2d_bytes = fetch.bytes + prefetched.bytes;
  record.prefetch_bytes = prefetched.bytes;
  // Prefetches for the first layers go out before layer 0's indexer runs.
  if (prefetch_lookahead_ > 0 && layer == 0) {
    for (int target = 0; target < prefetch_lookahead_; ++target) add_prefetch(out, target, t, all);
  }

  // Per query token, the selected entries split into those on the GPU and those fetched.
  const double missed_per_request = misses / static_cast<double>(t.requests);
  const auto miss_k = static_cast<std::int64_t>(std::llround(missed_per_request));
  const std::int64_t hit_k = selected - miss_k;
  const MlaShape shape = mla_shape(t);
  const auto scoring = [&](std::int64_t requests) {
    return kernel(opname::indexer_score, OpCategory::indexer,
                     indexer_scoring({requests, t.queries_per_request, ix.heads, ix.head_dim, context, ix.cache_bytes_per_token}, hw_));
  };
  const auto selecting = [&](std::int64_t requests) {
    return kernel(opname::indexer_topk, OpCategory::indexer, topk({requests * t.queries_per_request, context, ix.top_k}, hw_));
  };
  const auto attention_over = [&](std::string_view name, std::int64_t requests, std::int64_t entries) {
    MlaShape part = shape;
    part.requests = requests;
    return kernel(name, OpCategory::attention, sparse_mla_attention(part, std::max<std::int64_t>(1, entries), hw_));
  };
  const Op merge = kernel(opname::attention_merge, OpCategory::elementwise,
                             elementwise({T * heads * a.kv_lora_rank, 2, 1, act}, hw_));
  const Op absorb =
      kernel(opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_));
  const auto fetch_time = [&](double bytes, double runs) {
    const Seconds nvme = bytes > 0 && s_.cache.nvme && fetch.nvme_bytes > 0
                             ? s_.cache.nvme->latency + Bytes(bytes * cold_fraction_) / s_.cache.nvme->bandwidth
                             : Seconds(0.0);
    if (bytes <= 0) return Seconds(0.0);
    return nvme + (fetch.gather ? gather_time(CopyDirection::h2d, Bytes(bytes), hw_.pcie)
                                : copy_time(CopyDirection::h2d, Bytes(bytes), std::max<std::int64_t>(1, std::llround(runs)), hw_.pcie));
  };
  const auto stage = [&](std::string_view label, Transfer part, std::vector<Op> ops) {
    Segment seg;
    seg.kind = SegmentKind::stage;
    seg.layer = layer;
    seg.label = label;
    seg.transfer = part;
    for (const Op& op : ops) seg.duration += op.time;
    seg.ops = std::move(ops);
    out.push_back(std::move(seg));
  };

  // The layer's parts, priced with the cost models alone (no contention), for the overlap policy.
  using P = AttentionPart;
  std::array<Op, kAttentionPartCount> ops{};
  const auto set = [&ops](AttentionPart part, Op op) { ops[static_cast<std::size_t>(part)] = op; };
  set(P::score, scoring(t.requests));
  set(P::topk, selecting(t.requests));
  set(P::absorb, absorb);
  set(P::attention, attention_over(opname::sparse_mla, t.requests, selected));
  set(P::attention_hits, attention_over(opname::sparse_mla_hits, t.requests, hit_k));
  set(P::attention_misses, attention_over(opname::sparse_mla_misses, t.requests, miss_k));
  set(P::merge, merge);
  const std::int64_t half_a = (t.requests + 1) / 2;
  const std::int64_t half_b = t.requests - half_a;
  const double share_a = static_cast<double>(half_a) / static_cast<double>(t.requests);
  AttentionCosts costs;
  costs.splittable = half_b > 0;
  costs.fetch_all = fetch_time(fetch.bytes, fetch.runs);
  if (costs.splittable) {
    set(P::score_a, scoring(half_a));
    set(P::topk_a, selecting(half_a));
    set(P::score_b, scoring(half_b));
    set(P::topk_b, selecting(half_b));
    set(P::misses_a, attention_over(opname::sparse_mla_misses_a, half_a, miss_k));
    set(P::misses_b, attention_over(opname::sparse_mla_misses_b, half_b, miss_k));
    costs.fetch_a = fetch_time(fetch.bytes * share_a, fetch.runs * share_a);
    costs.fetch_b = fetch_time(fetch.bytes * (1 - share_a), fetch.runs * (1 - share_a));
  }
  for (std::size_t i = 0; i < kAttentionPartCount; ++i) costs.part[i] = ops[i].time;

  // Nothing to fetch: nothing to hide, the serial timeline (no stage).
  const auto& policies = overlap_instances();
  std::size_t used = overlap_serial_;
  if (fetch.bytes > 0) used = policies[overlap_]->resolve(overlap_, costs);
  record.overlap = used;

  Transfer part_a = fetch;
  part_a.bytes *= share_a;
  part_a.runs *= share_a;
  part_a.nvme_bytes *= share_a;
  Transfer part_b = fetch;
  part_b.bytes -= part_a.bytes;
  part_b.runs -= part_a.runs;
  part_b.nvme_bytes -= part_a.nvme_bytes;
  bool first = true;
  bool prefetch_done = prefetch_lookahead_ == 0;
  for (const OverlapPiece& piece : policies[used]->pieces(costs)) {
    if (!first && !prefetch_done) {
      // Once the indexer has selected (the first piece), this layer needs what was prefetched for
      // it, and the prefetch of layer + lookahead can go out.
      if (prefetched.bytes > 0) {
        Segment wait;
        wait.kind = SegmentKind::prefetch_wait;
        wait.layer = layer;
        wait.label = "wait prefetch";
        out.push_back(std::move(wait));
      }
      add_prefetch(out, layer + prefetch_lookahead_, t, all);
      prefetch_done = true;
    }
    first = false;
    if (piece.fetch == FetchShare::none) {
      for (const AttentionPart part : piece.parts) {
        append(out, layer, piece.after_fetch ? "attention_post" : "attention", ops[static_cast<std::size_t>(part)]);
      }
      continue;
    }
    const Transfer& moved = piece.fetch == FetchShare::all ? fetch : piece.fetch == FetchShare::half_a ? part_a : part_b;
    // A stage without parts is only the wait for its transfer: none when nothing moves.
    if (piece.parts.empty() && moved.bytes <= 0) continue;
    std::vector<Op> stage_ops;
    for (const AttentionPart part : piece.parts) stage_ops.push_back(ops[static_cast<std::size_t>(part)]);
    stage(piece.label, moved, std::move(stage_ops));
  }
  if (!prefetch_done) throw std::logic_error("overlap policy \"" + std::string(overlap_policies()[used].name) +
                                             "\" gave a single piece: no point after the indexer to wait for prefetches");
}

void DecodeStepBuilder::add_dense_mlp(std::vector<Segment>& out, int layer, Tokens t, int replica) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const std::int64_t T = t.total();
  const std::int64_t width = m_.dense_intermediate / tp_;
  constexpr std::string_view label = "mlp";
  append(out, layer, label, kernel(opname::ffn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  add_quant(out, layer, label, T, m_.hidden);
  append(out, layer, label, kernel(opname::gate_up, OpCategory::gemm, gemm({T, 2 * width, m_.hidden, w}, hw_)));
  append(out, layer, label, kernel(opname::act, OpCategory::elementwise, elementwise({T * width, 2, 1, act}, hw_)));
  add_quant(out, layer, label, T, width);
  append(out, layer, label, kernel(opname::down, OpCategory::gemm, gemm({T, m_.hidden, width, w}, hw_)));
  close_with_allreduce(out, layer, "mlp_allreduce", T, replica);
  append(out, layer, label,
         kernel(opname::mlp_residual, OpCategory::elementwise, elementwise({T * m_.hidden, 2, 1, act}, hw_)));
}

void DecodeStepBuilder::add_moe_input(std::vector<Segment>& out, int layer, std::int64_t T, std::int64_t shared_width) const {
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  append(out, layer, "moe_in", kernel(opname::ffn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  append(out, layer, "moe_in",
         kernel(opname::router, OpCategory::gemm, gemm({T, moe.routed_experts, m_.hidden, DType::bf16}, hw_)));
  append(out, layer, "moe_in",
         kernel(opname::router_topk, OpCategory::elementwise, elementwise({T * moe.routed_experts, 1, 1, DType::fp32}, hw_)));
  if (shared_width > 0) {
    add_quant(out, layer, "moe_in", T, m_.hidden);
    append(out, layer, "moe_in",
           kernel(opname::shared_gate_up, OpCategory::gemm, gemm({T, 2 * shared_width, m_.hidden, w}, hw_)));
    append(out, layer, "moe_in",
           kernel(opname::shared_act, OpCategory::elementwise, elementwise({T * shared_width, 2, 1, act}, hw_)));
    add_quant(out, layer, "moe_in", T, shared_width);
    append(out, layer, "moe_in", kernel(opname::shared_down, OpCategory::gemm, gemm({T, m_.hidden, shared_width, w}, hw_)));
  }
}

void DecodeStepBuilder::add_experts(std::vector<Segment>& out, int layer, std::span<const std::int64_t> rows_per_expert,
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
  append(out, layer, "experts",
         kernel(opname::experts_gate_up, OpCategory::gemm, grouped_gemm({active, rows, 2 * width, m_.hidden, w}, rows_per_expert, hw_)));
  append(out, layer, "experts",
         kernel(opname::experts_act, OpCategory::elementwise, elementwise({rows * width, 2, 1, act}, hw_)));
  append(out, layer, "experts",
         kernel(opname::experts_down, OpCategory::gemm, grouped_gemm({active, rows, m_.hidden, width, w}, rows_per_expert, hw_)));
}

void DecodeStepBuilder::add_tp_moe(std::vector<GpuStepPlan>& gpus, int layer, Tokens t, Rng& rng) const {
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  const std::int64_t T = t.total();
  // Experts split over the replica's GPUs (ep = tp) or each sharded over them (ep = 1).
  const bool split = ep_ == tp_;
  const std::int64_t experts_per_gpu = split ? physical_experts_ / ep_ : physical_experts_;
  const std::int64_t width = split ? moe.expert_intermediate : moe.expert_intermediate / tp_;
  const std::int64_t shared_width = moe.expert_intermediate * moe.shared_experts / tp_;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(tp_ * experts_per_gpu));  // [rank][local expert]
  std::vector<std::int64_t> picked(static_cast<std::size_t>(moe.experts_per_token));
  for (int replica = 0; replica < gpus_ / tp_; ++replica) {
    std::fill(rows.begin(), rows.end(), 0);
    // Every GPU of the replica holds all T tokens; each picks experts_per_token distinct experts.
    const ExpertRouting::Pass pass = routing_->pass(layer, rng);
    for (std::int64_t tok = 0; tok < T; ++tok) {
      pass.route(rng, picked);
      for (const std::int64_t e : picked) {
        if (split) {
          ++rows[static_cast<std::size_t>(e)];  // rank e / experts_per_gpu, local expert e % experts_per_gpu
        } else {
          for (int rank = 0; rank < tp_; ++rank) ++rows[static_cast<std::size_t>(rank * experts_per_gpu + e)];
        }
      }
    }
    for (int rank = 0; rank < tp_; ++rank) {
      auto& out = gpus[static_cast<std::size_t>(replica * tp_ + rank)].segments;
      add_moe_input(out, layer, T, shared_width);
      add_experts(out, layer,
                  std::span<const std::int64_t>(rows.data() + rank * experts_per_gpu, static_cast<std::size_t>(experts_per_gpu)),
                  width);
      // This GPU's partial sum of the experts' (and shared expert's) outputs, summed over the
      // replica by the all-reduce, then the residual add.
      append(out, layer, "moe_out",
             kernel(opname::combine_sum, OpCategory::elementwise,
                       elementwise({T * m_.hidden, static_cast<int>(moe.experts_per_token) + 1, 1, act}, hw_)));
      close_with_allreduce(out, layer, "moe_allreduce", T, replica);
      append(out, layer, "moe_out",
             kernel(opname::moe_residual, OpCategory::elementwise, elementwise({T * m_.hidden, 2, 1, act}, hw_)));
    }
  }
}

void DecodeStepBuilder::add_moe(std::vector<GpuStepPlan>& gpus, int layer, Tokens t, Rng& rng) const {
  if (tp_ > 1) {
    add_tp_moe(gpus, layer, t, rng);
    return;
  }
  const auto& moe = *m_.moe;
  const DType act = m_.activation_dtype;
  const std::int64_t T = t.total();
  const std::int64_t experts_per_gpu = physical_experts_ / ep_;
  const auto G = static_cast<std::size_t>(gpus_);

  // Routing: each token picks experts_per_token distinct physical experts in its own EP group
  // (expert_routing.h: this layer's skewed popularity, this pass's drift, the EPLB placement).
  // Routed (token, expert) pairs from each GPU to each GPU of its EP group: G x ep counts, not G x G
  // (thousands of GPUs would need gigabytes for a matrix that is zero outside the groups).
  const auto E = static_cast<std::size_t>(ep_);
  std::vector<std::int64_t> pair_count(G * E, 0);  // [src * ep + rank of dst in the group]
  const auto pairs = [&](std::size_t src, std::size_t dst) -> std::int64_t& { return pair_count[src * E + dst % E]; };
  std::vector<std::int64_t> expert_rows(G * static_cast<std::size_t>(experts_per_gpu), 0);  // [gpu][local expert]
  std::vector<std::int64_t> picked(static_cast<std::size_t>(moe.experts_per_token));
  // Physical expert e of a group lives on the group's GPU e / experts_per_gpu as its local expert
  // e % experts_per_gpu, so its row counter is at group_start x experts_per_gpu + e: no division in
  // the loop (it runs tokens x experts_per_token times per layer).
  std::vector<std::size_t> rank_of(static_cast<std::size_t>(physical_experts_));
  for (std::size_t e = 0; e < rank_of.size(); ++e) rank_of[e] = e / static_cast<std::size_t>(experts_per_gpu);
  // One drift draw per pass and EP group (the requests of a group are its own).
  std::optional<ExpertRouting::Pass> pass;
  for (std::size_t src = 0; src < G; ++src) {
    const std::size_t group_start = src / E * E;
    if (src == group_start) pass.emplace(routing_->pass(layer, rng));
    std::int64_t* const rows = expert_rows.data() + group_start * static_cast<std::size_t>(experts_per_gpu);
    std::int64_t* const to = pair_count.data() + src * E;
    for (std::int64_t tok = 0; tok < T; ++tok) {
      pass->route(rng, picked);
      for (const std::int64_t e : picked) {
        ++to[rank_of[static_cast<std::size_t>(e)]];
        ++rows[e];
      }
    }
  }

  // Dispatched tokens are fp8 with one fp32 scale per 128 values; combined outputs are bf16
  // (models/alltoall.h, which `ess-sim cost dispatch/combine` prices the same way).
  const double dispatch_bytes = dispatch_bytes_per_copy(m_.hidden).value();
  const double combine_bytes = combine_bytes_per_copy(m_.hidden, act).value();
  const std::int64_t shared_width = moe.expert_intermediate * moe.shared_experts;
  // GPU g's side of an all-to-all: to each peer it sends `bytes_per_pair` per routed (token, expert)
  // pair it sends there (dispatch), or per pair it received from there (combine, `back`).
  const auto alltoall = [&](std::size_t g, std::string_view label, double bytes_per_pair, bool back) {
    Segment seg;
    seg.kind = SegmentKind::alltoall;
    seg.layer = layer;
    seg.label = label;
    seg.group = static_cast<int>(g) / ep_;
    seg.send_bytes.assign(E, 0.0);
    seg.recv_bytes.assign(E, 0.0);
    const std::size_t group_start = g / E * E;
    for (std::size_t i = 0; i < E; ++i) {
      const std::size_t peer = group_start + i;
      seg.send_bytes[i] = static_cast<double>(back ? pairs(peer, g) : pairs(g, peer)) * bytes_per_pair;
      seg.recv_bytes[i] = static_cast<double>(back ? pairs(g, peer) : pairs(peer, g)) * bytes_per_pair;
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
    out.push_back(alltoall(g, "dispatch", dispatch_bytes, false));

    // Each expert's own rows: the kernel pads every expert to whole tiles (models/gemm.h).
    add_experts(out, layer,
                std::span<const std::int64_t>(expert_rows.data() + g * static_cast<std::size_t>(experts_per_gpu),
                                              static_cast<std::size_t>(experts_per_gpu)),
                moe.expert_intermediate);

    // Expert outputs go back to the GPU each token came from.
    out.push_back(alltoall(g, "combine", combine_bytes, true));

    // Weighted sum of the experts' outputs (plus the shared expert's) and the residual add.
    append(out, layer, "moe_out",
           kernel(opname::combine_sum, OpCategory::elementwise,
                     elementwise({T * m_.hidden, static_cast<int>(moe.experts_per_token) + 2, 1, act}, hw_)));
  }
}

void DecodeStepBuilder::add_head(std::vector<Segment>& out, int layer, Tokens t) const {
  const std::int64_t T = t.total();
  append(out, layer, "head",
         kernel(opname::final_norm, OpCategory::norm, norm({T, m_.hidden, m_.activation_dtype, norm_kind(m_.norm)}, hw_)));
  // Vocabulary-parallel LM head under TP (each rank computes vocab / tp logits).
  append(out, layer, "head",
         kernel(opname::lm_head, OpCategory::gemm, gemm({T, m_.vocab / tp_, m_.hidden, m_.activation_dtype}, hw_)));
  append(out, layer, "head",
         kernel(opname::sampling, OpCategory::elementwise, elementwise({T * (m_.vocab / tp_), 1, 1, DType::fp32}, hw_)));
}

void DecodeStepBuilder::add_mtp_projection(std::vector<Segment>& out, int layer, Tokens t) const {
  const std::int64_t T = t.total();
  const DType act = m_.activation_dtype;
  // DeepSeek-V3 MTP module: embed the previous token, RMSNorm it and the last hidden state, and
  // project their concatenation (2 x hidden -> hidden) before the module's transformer layer.
  append(out, layer, "mtp_in",
         kernel(opname::mtp_embedding, OpCategory::elementwise, elementwise({T * m_.hidden, 1, 1, act}, hw_)));
  append(out, layer, "mtp_in",
         kernel(opname::mtp_norms, OpCategory::norm, norm({T, 2 * m_.hidden, act, norm_kind(m_.norm)}, hw_)));
  add_quant(out, layer, "mtp_in", T, 2 * m_.hidden);
  append(out, layer, "mtp_in", kernel(opname::eh_proj, OpCategory::gemm, gemm({T, m_.hidden, 2 * m_.hidden, m_.weight_dtype}, hw_)));
}

StepPlan DecodeStepBuilder::build(int step, Rng& rng, const std::vector<LayerAccess>* access) const {
  StepPlan plan;
  plan.step = step;
  plan.context = context_at(step);
  plan.gpus.resize(static_cast<std::size_t>(gpus_));
  const bool offload = s_.cache.mode == CacheMode::offload;
  if (offload) {
    if (access == nullptr || access->size() != static_cast<std::size_t>(layers_total_)) {
      throw std::invalid_argument("DecodeStepBuilder::build: offload mode needs the access of every layer");
    }
    plan.offload.resize(static_cast<std::size_t>(layers_total_));
  }
  // The serving engine's host time comes first: the GPUs wait for it.
  if (s_.execution.step_overhead.value() > 0) {
    for (auto& g : plan.gpus) {
      append(g.segments, -1, "host", Op{opname::step_overhead, OpCategory::host, s_.execution.step_overhead, Flops(0.0), Bytes(0.0)});
    }
  }
  if (s_.execution.micro_batches == 1) {
    add_pass(plan.gpus, batch_, offloaded_, plan.context, rng, access, offload ? &plan.offload : nullptr);
    return plan;
  }
  // Two micro-batches: ceil and floor of half the requests (and of the offloaded ones).
  const std::int64_t batch_a = (batch_ + 1) / 2;
  const std::int64_t offloaded_a = (offloaded_ + 1) / 2;
  for (int lane = 0; lane < 2; ++lane) {
    const std::int64_t batch = lane == 0 ? batch_a : batch_ - batch_a;
    const std::int64_t offloaded = lane == 0 ? offloaded_a : offloaded_ - offloaded_a;
    std::vector<GpuStepPlan> part(static_cast<std::size_t>(gpus_));
    std::vector<LayerOffload> records(plan.offload.size());
    add_pass(part, batch, offloaded, plan.context, rng, access, offload ? &records : nullptr);
    for (std::size_t g = 0; g < part.size(); ++g) {
      auto& segments = plan.gpus[g].segments;
      for (Segment& seg : part[g].segments) {
        seg.lane = lane;
        segments.push_back(std::move(seg));
      }
    }
    // Per layer: the access and overlap of lane 0 (both lanes see the same cache state), bytes summed.
    for (std::size_t l = 0; l < records.size(); ++l) {
      auto& o = plan.offload[l];
      if (lane == 0) {
        o = records[l];
      } else {
        o.h2d_bytes += records[l].h2d_bytes;
        o.prefetch_bytes += records[l].prefetch_bytes;
        o.d2h_bytes += records[l].d2h_bytes;
      }
    }
  }
  return plan;
}

void DecodeStepBuilder::add_pass(std::vector<GpuStepPlan>& gpus, std::int64_t batch, std::int64_t offloaded,
                                 std::int64_t context, Rng& rng, const std::vector<LayerAccess>* access,
                                 std::vector<LayerOffload>* records) const {
  const std::span<const LayerAccess> layers_access =
      access != nullptr && records != nullptr ? std::span<const LayerAccess>(*access) : std::span<const LayerAccess>();
  const auto layer_record = [&](int layer) { return records != nullptr ? &(*records)[static_cast<std::size_t>(layer)] : nullptr; };

  const auto for_each_gpu = [&](const auto& add) {
    for (int g = 0; g < gpus_; ++g) add(gpus[static_cast<std::size_t>(g)].segments, g / tp_);
  };
  // Segments that are the same on every GPU are built once per replica index and copied.
  const auto common = [&](const auto& add) {
    std::vector<Segment> built;
    int built_for = -1;
    for_each_gpu([&](std::vector<Segment>& out, int replica) {
      // Without tensor parallelism every replica's segments are identical (no all-reduce group).
      const int key = tp_ == 1 ? 0 : replica;
      if (key != built_for) {
        built.clear();
        add(built, replica);
        built_for = key;
      }
      out.insert(out.end(), built.begin(), built.end());
    });
  };

  // Verification pass of the main model: depth query tokens per request.
  // The engine replays a CUDA graph captured for a batch at least this replica's (padded rows run
  // through every kernel but attention).
  const std::int64_t padded = s_.engine.graph_batch(batch * tp_);
  const Tokens main{batch * tp_, s_.workload.mtp.depth, offloaded, padded};
  common([&](std::vector<Segment>& out, int) { add_embedding(out, main); });
  for (int layer = 0; layer < m_.layers; ++layer) {
    common([&](std::vector<Segment>& out, int replica) {
      add_attention(out, layer, main, context, replica, layers_access, layer_record(layer));
    });
    if (layer_kind(layer) == "moe") {
      add_moe(gpus, layer, main, rng);
    } else {
      common([&](std::vector<Segment>& out, int replica) { add_dense_mlp(out, layer, main, replica); });
    }
  }
  common([&](std::vector<Segment>& out, int) { add_head(out, -1, main); });

  // Draft passes: MTP module d drafts one more token per request from the previous one.
  const Tokens draft{batch * tp_, 1, offloaded, padded};
  for (int d = 1; d < s_.workload.mtp.depth; ++d) {
    const int layer = static_cast<int>(m_.layers) + d - 1;
    common([&](std::vector<Segment>& out, int) { add_mtp_projection(out, layer, draft); });
    common([&](std::vector<Segment>& out, int replica) {
      add_attention(out, layer, draft, context, replica, layers_access, layer_record(layer));
    });
    if (m_.moe) {
      add_moe(gpus, layer, draft, rng);
    } else {
      common([&](std::vector<Segment>& out, int replica) { add_dense_mlp(out, layer, draft, replica); });
    }
    common([&](std::vector<Segment>& out, int) { add_head(out, layer, draft); });
  }
}

}  // namespace ess
