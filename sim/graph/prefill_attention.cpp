#include "sim/graph/prefill_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/attention.h"
#include "models/elementwise.h"
#include "models/gemm.h"
#include "sim/base/error.h"
#include "sim/base/op_names.h"

namespace ess {

namespace {

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
      throw InternalError("prefill_work: a piece needs tokens >= 1 and cached >= 0 (got " +
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

PrefillAttention::PrefillAttention(const RunBase& run, const StepBlocks& blocks)
    : s_(*run.system), m_(run.system->model), hw_(run.hardware), blocks_(blocks), tp_(run.parallelism.tensor_parallel) {}

void PrefillAttention::add(std::vector<Segment>& out, int layer, std::string_view label, std::string_view name,
                           OpCategory category, const KernelCost& c) const {
  StepBlocks::append(out, layer, label, blocks_.kernel(name, category, c));
}

void PrefillAttention::add_core(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const {
  if (work.queries < 1) throw InternalError("PrefillAttention::add_core: no new tokens");
  if (m_.attention.kind == AttentionKind::mla) {
    add_mla(out, layer, label, work);
  } else {
    add_gqa(out, layer, label, work);
  }
}

void PrefillAttention::add_mla(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const {
  const DType act = m_.activation_dtype;
  const DType w = m_.weight_dtype;
  const auto& a = m_.attention.mla;
  const std::int64_t T = work.queries;
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  // The new tokens' latent entries (and rope keys) into the cache.
  add(out, layer, label, opname::cache_store, OpCategory::elementwise, elementwise({T * (a.kv_lora_rank + a.qk_rope_head_dim), 1, 1, act}, hw_));
  if (m_.indexer) {
    const auto& ix = *m_.indexer;
    // Every query scores every key up to itself (the scores of one query in one row): the indexer
    // shape takes the mean keys per query as its context, which prices the FLOPs and the logits
    // exactly and reads each query's keys once (the keys' bytes are a small term here).
    const std::int64_t mean_keys = mean_rounded(work.key_pairs, T);
    add(out, layer, label, opname::indexer_score, OpCategory::indexer,
        indexer_scoring({1, T, ix.heads, ix.head_dim, mean_keys, ix.cache_bytes_per_token}, hw_));
    add(out, layer, label, opname::indexer_topk, OpCategory::indexer, topk({T, mean_keys, ix.top_k}, hw_));
    // Sparse MLA in the absorbed form (FlashMLA's sparse prefill kernel): each query over its own
    // selection, min(top_k, keys up to it) entries.
    add(out, layer, label, opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_));
    const MlaKernel& k = *s_.engine.mla_kernel;
    const MlaShape shape{T, 1, heads, a.kv_lora_rank + a.qk_rope_head_dim, a.kv_lora_rank,
                         m_.attention.cache_bytes_per_token, k.row_tile, k.mma};
    add(out, layer, label, opname::sparse_mla, OpCategory::attention, sparse_mla_attention(shape, mean_rounded(work.selected, T), hw_));
    add(out, layer, label, opname::v_up, OpCategory::gemm, gemm({T, heads * a.v_head_dim, a.kv_lora_rank, act}, hw_));
  } else {
    // Non-absorbed MLA: every key of the pieces' requests (cached ones included) up-projected from
    // its latent entry to per-head K (nope part) and V, then causal attention over qk 192 / v 128.
    blocks_.add_quant(out, layer, label, work.keys, a.kv_lora_rank);
    add(out, layer, label, opname::kv_b, OpCategory::gemm, gemm({work.keys, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, w}, hw_));
    add(out, layer, label, opname::rope, OpCategory::elementwise, elementwise({T * (heads + 1) * a.qk_rope_head_dim, 1, 1, act}, hw_));
    add(out, layer, label, opname::prefill_attention, OpCategory::attention,
        prefill_attention({T, work.key_pairs, work.keys, heads, heads, qk_head, a.v_head_dim, act}, hw_));
  }
}

void PrefillAttention::add_gqa(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const {
  const DType act = m_.activation_dtype;
  const auto& g = m_.attention.gqa;
  const std::int64_t T = work.queries;
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp_);
  add(out, layer, label, opname::cache_store, OpCategory::elementwise, elementwise({T * 2 * kv_local * g.head_dim, 1, 1, m_.attention.cache_dtype}, hw_));
  add(out, layer, label, opname::prefill_attention, OpCategory::attention,
      prefill_attention({T, work.key_pairs, work.keys, heads, kv_local, g.head_dim, g.head_dim, act}, hw_));
}

}  // namespace ess
