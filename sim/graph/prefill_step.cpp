#include "sim/graph/prefill_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/attention.h"
#include "models/elementwise.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "sim/graph/op_names.h"

namespace ess {

namespace {

// Tokens per GPU routed one by one in each MoE pass; the rest follow their counts (step_blocks.h).
// At 16,384 tokens per GPU (the LMSYS and DeepSeek prefill batch) routing them all takes ~7 s per
// step of 32 GPUs; sampled, the per-GPU expert rows carry sqrt(T / 2048) ~ 2.8x the routing noise
// they have (about 1.1% relative per GPU instead of 0.4% at EP32), which the slowest GPU feels.
// tests/graph/prefill_step_test.cpp bounds the step-time difference against exact routing.
constexpr std::int64_t kRoutedTokensPerPass = 2048;

double as_double(std::int64_t v) { return static_cast<double>(v); }

// Sum over i = 1..n of min(k, c + i): the entries the queries of a piece attend to under top-k.
double selected_sum(std::int64_t n, std::int64_t c, std::int64_t k) {
  // Queries with c + i <= k see every earlier key; the rest see k.
  const std::int64_t full = std::clamp<std::int64_t>(k - c, 0, n);
  return as_double(full) * as_double(c) + as_double(full) * as_double(full + 1) / 2.0 + as_double(n - full) * as_double(k);
}

std::int64_t mean_rounded(double total, std::int64_t count) {
  return std::max<std::int64_t>(1, std::llround(total / as_double(count)));
}

}  // namespace

PrefillWork prefill_work(std::span<const PrefillPiece> pieces, std::int64_t top_k) {
  PrefillWork w;
  for (const PrefillPiece& p : pieces) {
    if (p.tokens < 1 || p.cached < 0) {
      throw std::invalid_argument("prefill_work: a piece needs tokens >= 1 and cached >= 0 (got " +
                                  std::to_string(p.tokens) + " and " + std::to_string(p.cached) + ")");
    }
    w.queries += p.tokens;
    w.key_pairs += as_double(p.tokens) * as_double(p.cached) + as_double(p.tokens) * as_double(p.tokens + 1) / 2.0;
    w.keys += p.cached + p.tokens;
    w.longest = std::max(w.longest, p.cached + p.tokens);
    if (top_k > 0) w.selected += selected_sum(p.tokens, p.cached, top_k);
    ++w.pieces;
  }
  return w;
}

std::vector<std::vector<PrefillPiece>> split_in_two(std::span<const PrefillPiece> pieces) {
  std::int64_t total = 0;
  for (const PrefillPiece& p : pieces) total += p.tokens;
  std::vector<std::vector<PrefillPiece>> lanes(2);
  std::int64_t left = (total + 1) / 2;  // tokens still to give the first micro-batch
  for (const PrefillPiece& p : pieces) {
    const std::int64_t first = std::min(left, p.tokens);
    if (first > 0) lanes[0].push_back({first, p.cached});
    if (first < p.tokens) lanes[1].push_back({p.tokens - first, p.cached + first});
    left -= first;
  }
  return lanes;
}

std::vector<PrefillPiece> whole_prompts(std::int64_t tokens, std::int64_t prompt_length, std::int64_t cached) {
  if (tokens < 1 || prompt_length < 1) throw std::invalid_argument("whole_prompts: tokens and prompt_length must be >= 1");
  if (cached < 0 || cached >= prompt_length) throw std::invalid_argument("whole_prompts: cached must be in [0, prompt_length)");
  const std::int64_t fresh = prompt_length - cached;
  std::vector<PrefillPiece> pieces(static_cast<std::size_t>(tokens / fresh), PrefillPiece{fresh, cached});
  if (tokens % fresh > 0) pieces.push_back({tokens % fresh, cached});
  return pieces;
}

std::vector<PrefillPiece> scenario_pieces(const Scenario& s) {
  if (!s.prefill) throw std::logic_error("scenario_pieces: the scenario has no prefill section");
  const PrefillConfig& p = *s.prefill;
  return whole_prompts(p.tokens_per_gpu * s.parallelism.tensor_parallel, p.prompt_length, p.cached_tokens);
}

PrefillStepBuilder::PrefillStepBuilder(const Scenario& scenario)
    : s_(scenario),
      m_(scenario.model),
      hw_(scenario.hardware),
      blocks_(scenario),
      tp_(scenario.parallelism.tensor_parallel) {}

void PrefillStepBuilder::add(std::vector<Segment>& out, int layer, std::string_view name, OpCategory category,
                             const KernelCost& c) const {
  StepBlocks::append(out, layer, "attention", blocks_.kernel(name, category, c));
}

void PrefillStepBuilder::add_mla(std::vector<Segment>& out, int layer, const PrefillWork& work) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const auto& a = m_.attention.mla;
  const std::int64_t T = work.queries;
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  constexpr std::string_view label = "attention";
  add(out, layer, opname::attn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_));
  blocks_.add_quant(out, layer, label, T, m_.hidden);
  add(out, layer, opname::q_a_kv_a, OpCategory::gemm, gemm({T, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, m_.hidden, w}, hw_));
  add(out, layer, opname::q_norm, OpCategory::norm, norm({T, a.q_lora_rank, act, NormKind::rms}, hw_));
  add(out, layer, opname::kv_norm, OpCategory::norm, norm({T, a.kv_lora_rank, act, NormKind::rms}, hw_));
  blocks_.add_quant(out, layer, label, T, a.q_lora_rank);
  add(out, layer, opname::q_b, OpCategory::gemm, gemm({T, heads * qk_head, a.q_lora_rank, w}, hw_));
  // The new tokens' latent entries (and rope keys) into the cache.
  add(out, layer, opname::cache_store, OpCategory::elementwise, elementwise({T * (a.kv_lora_rank + a.qk_rope_head_dim), 1, 1, act}, hw_));
  if (m_.indexer) {
    const auto& ix = *m_.indexer;
    add(out, layer, opname::indexer_q, OpCategory::gemm, gemm({T, ix.heads * ix.head_dim, a.q_lora_rank, w}, hw_));
    add(out, layer, opname::indexer_k_w, OpCategory::gemm, gemm({T, ix.head_dim + ix.heads, m_.hidden, w}, hw_));
    // Every query scores every key up to itself (the scores of one query in one row): the indexer
    // shape takes the mean keys per query as its context, which prices the FLOPs and the logits
    // exactly and reads each query's keys once (the keys' bytes are a small term here).
    const std::int64_t mean_keys = mean_rounded(work.key_pairs, T);
    add(out, layer, opname::indexer_score, OpCategory::indexer,
        indexer_scoring({1, T, ix.heads, ix.head_dim, mean_keys, ix.cache_bytes_per_token}, hw_));
    add(out, layer, opname::indexer_topk, OpCategory::indexer, topk({T, mean_keys, ix.top_k}, hw_));
    // Sparse MLA in the absorbed form (FlashMLA's sparse prefill kernel): each query over its own
    // selection, min(top_k, keys up to it) entries.
    add(out, layer, opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_));
    const MlaKernel& k = *s_.engine.mla_kernel;
    const MlaShape shape{T, 1, heads, a.kv_lora_rank + a.qk_rope_head_dim, a.kv_lora_rank,
                         m_.attention.cache_bytes_per_token, k.row_tile, k.mma};
    add(out, layer, opname::sparse_mla, OpCategory::attention, sparse_mla_attention(shape, mean_rounded(work.selected, T), hw_));
    add(out, layer, opname::v_up, OpCategory::gemm, gemm({T, heads * a.v_head_dim, a.kv_lora_rank, act}, hw_));
  } else {
    // Non-absorbed MLA: every key of the pieces' requests (cached ones included) up-projected from
    // its latent entry to per-head K (nope part) and V, then causal attention over qk 192 / v 128.
    blocks_.add_quant(out, layer, label, work.keys, a.kv_lora_rank);
    add(out, layer, opname::kv_b, OpCategory::gemm, gemm({work.keys, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, w}, hw_));
    add(out, layer, opname::rope, OpCategory::elementwise, elementwise({T * (heads + 1) * a.qk_rope_head_dim, 1, 1, act}, hw_));
    add(out, layer, opname::prefill_attention, OpCategory::attention,
        prefill_attention({T, work.key_pairs, work.keys, heads, heads, qk_head, a.v_head_dim, act}, hw_));
  }
  blocks_.add_quant(out, layer, label, T, heads * a.v_head_dim);
  add(out, layer, opname::wo, OpCategory::gemm, gemm({T, m_.hidden, heads * a.v_head_dim, w}, hw_));
}

void PrefillStepBuilder::add_gqa(std::vector<Segment>& out, int layer, const PrefillWork& work) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const auto& g = m_.attention.gqa;
  const std::int64_t T = work.queries;
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp_);
  add(out, layer, opname::attn_norm, OpCategory::norm, norm({T, m_.hidden, act, norm_kind(m_.norm)}, hw_));
  add(out, layer, opname::qkv, OpCategory::gemm, gemm({T, (heads + 2 * kv_local) * g.head_dim, m_.hidden, w}, hw_));
  add(out, layer, opname::rope, OpCategory::elementwise, elementwise({T * (heads + kv_local) * g.head_dim, 1, 1, act}, hw_));
  add(out, layer, opname::cache_store, OpCategory::elementwise, elementwise({T * 2 * kv_local * g.head_dim, 1, 1, m_.attention.cache_dtype}, hw_));
  add(out, layer, opname::prefill_attention, OpCategory::attention,
      prefill_attention({T, work.key_pairs, work.keys, heads, kv_local, g.head_dim, g.head_dim, act}, hw_));
  add(out, layer, opname::o, OpCategory::gemm, gemm({T, m_.hidden, heads * g.head_dim, w}, hw_));
}

void PrefillStepBuilder::add_attention(std::vector<Segment>& out, int layer, const PrefillWork& work, int replica) const {
  if (m_.attention.kind == AttentionKind::mla) {
    add_mla(out, layer, work);
  } else {
    add_gqa(out, layer, work);
  }
  const std::int64_t T = work.queries;
  blocks_.close_with_allreduce(out, layer, "attn_allreduce", T, replica);
  StepBlocks::append(out, layer, "attention",
                     blocks_.kernel(opname::attn_residual, OpCategory::elementwise,
                                    elementwise({T * m_.hidden, 2, 1, m_.activation_dtype}, hw_)));
}

void PrefillStepBuilder::add_pass(std::vector<GpuStepPlan>& gpus, const PrefillWork& work, Rng& rng) const {
  const int G = blocks_.gpus();
  // Segments that are the same on every GPU are built once per replica (once at tp 1) and copied.
  const auto common = [&](const auto& add) {
    std::vector<Segment> built;
    int built_for = -1;
    for (int g = 0; g < G; ++g) {
      const int replica = g / tp_;
      const int key = tp_ == 1 ? 0 : replica;
      if (key != built_for) {
        built.clear();
        add(built, replica);
        built_for = key;
      }
      auto& out = gpus[static_cast<std::size_t>(g)].segments;
      out.insert(out.end(), built.begin(), built.end());
    }
  };
  // DeepEP's normal kernels under DP attention + EP (tp 1); TP layouts all-reduce instead.
  const AlltoallDedup dedup = AlltoallDedup::per_node;
  const std::int64_t T = work.queries;
  const auto mlp = [&](int layer) {
    if (blocks_.layer_kind(layer) == "dense" || !m_.moe) {
      common([&](std::vector<Segment>& out, int replica) { blocks_.add_dense_mlp(out, layer, T, replica); });
    } else {
      blocks_.add_moe(gpus, layer, T, rng, dedup, kRoutedTokensPerPass);
    }
  };
  common([&](std::vector<Segment>& out, int) { blocks_.add_embedding(out, T); });
  for (int layer = 0; layer < m_.layers; ++layer) {
    common([&](std::vector<Segment>& out, int replica) { add_attention(out, layer, work, replica); });
    mlp(layer);
  }
  common([&](std::vector<Segment>& out, int) { blocks_.add_head(out, -1, work.pieces); });
  for (int d = 1; d < s_.workload.mtp.depth; ++d) {
    const int layer = static_cast<int>(m_.layers) + d - 1;
    common([&](std::vector<Segment>& out, int) { blocks_.add_mtp_projection(out, layer, T); });
    common([&](std::vector<Segment>& out, int replica) { add_attention(out, layer, work, replica); });
    mlp(layer);
    common([&](std::vector<Segment>& out, int) { blocks_.add_head(out, layer, work.pieces); });
  }
}

StepPlan PrefillStepBuilder::build(int step, std::span<const PrefillPiece> pieces, Rng& rng) const {
  if (pieces.empty()) throw std::invalid_argument("PrefillStepBuilder::build: a prefill step needs at least one piece");
  const std::int64_t top_k = m_.indexer ? m_.indexer->top_k : 0;
  const PrefillWork all = prefill_work(pieces, top_k);
  StepPlan plan;
  plan.step = step;
  plan.context = all.longest;
  plan.gpus.resize(static_cast<std::size_t>(blocks_.gpus()));
  if (s_.execution.step_overhead.value() > 0) {
    for (auto& g : plan.gpus) {
      StepBlocks::append(g.segments, -1, "host",
                         Op{opname::step_overhead, OpCategory::host, s_.execution.step_overhead, Flops(0.0), Bytes(0.0)});
    }
  }
  if (s_.execution.micro_batches == 1) {
    add_pass(plan.gpus, all, rng);
    return plan;
  }
  if (all.queries < 2) throw std::invalid_argument("PrefillStepBuilder::build: two micro-batches need at least 2 tokens");
  const auto lanes = split_in_two(pieces);
  for (int lane = 0; lane < 2; ++lane) {
    std::vector<GpuStepPlan> part(plan.gpus.size());
    add_pass(part, prefill_work(lanes[static_cast<std::size_t>(lane)], top_k), rng);
    for (std::size_t g = 0; g < part.size(); ++g) {
      for (Segment& seg : part[g].segments) {
        seg.lane = lane;
        plan.gpus[g].segments.push_back(std::move(seg));
      }
    }
  }
  return plan;
}

}  // namespace ess
