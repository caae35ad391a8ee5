// The names of a step's operators, segments, layer kinds and categories, written once for every program
// that names them: the simulator (sim/graph: decode_step.cpp, weight_gemms.cpp; sim/engine's
// recorders), the GPU runner (kernels/runner: timeline.cpp, trace_file.cpp, cuda/decode_model.cpp),
// the kernel bench (kernels/bench/sweep.cpp) and `ess-sim validate`, which matches the runner's
// trace to the simulation op by op. Header-only, no dependencies beyond <string_view>: the runner
// and the bench build without SimGrid and partly with nvcc (C++17 there).
#pragma once

#include <string_view>

namespace ess {

// Operator names ("the simulator's op name" in the runner's trace, Op::name in the step graph).
namespace opname {
// Embedding and head.
inline constexpr std::string_view embedding = "embedding";
inline constexpr std::string_view final_norm = "final_norm";
inline constexpr std::string_view lm_head = "lm_head";
inline constexpr std::string_view sampling = "sampling";
// MLA attention with DeepSeek's sparse indexer.
inline constexpr std::string_view attn_norm = "attn_norm";
inline constexpr std::string_view q_a_kv_a = "q_a_kv_a";
inline constexpr std::string_view q_norm = "q_norm";
inline constexpr std::string_view kv_norm = "kv_norm";
inline constexpr std::string_view q_b = "q_b";
inline constexpr std::string_view indexer_q = "indexer_q";
inline constexpr std::string_view indexer_k_w = "indexer_k_w";
inline constexpr std::string_view indexer_score = "indexer_score";
inline constexpr std::string_view indexer_topk = "indexer_topk";
inline constexpr std::string_view q_absorb = "q_absorb";
inline constexpr std::string_view sparse_mla = "sparse_mla";
inline constexpr std::string_view dense_mla = "dense_mla";
// Offload: attention over the entries already on the GPU, then over the fetched ones (in two
// halves with DBA), merged.
inline constexpr std::string_view sparse_mla_hits = "sparse_mla_hits";
inline constexpr std::string_view sparse_mla_misses = "sparse_mla_misses";
inline constexpr std::string_view sparse_mla_misses_a = "sparse_mla_misses_a";
inline constexpr std::string_view sparse_mla_misses_b = "sparse_mla_misses_b";
inline constexpr std::string_view attention_merge = "attention_merge";
inline constexpr std::string_view v_up = "v_up";
inline constexpr std::string_view wo = "wo";
// GQA attention.
inline constexpr std::string_view qkv = "qkv";
inline constexpr std::string_view rope = "rope";
inline constexpr std::string_view attention = "attention";
inline constexpr std::string_view o = "o";
inline constexpr std::string_view attn_residual = "attn_residual";
// Dense MLP.
inline constexpr std::string_view ffn_norm = "ffn_norm";
inline constexpr std::string_view gate_up = "gate_up";
inline constexpr std::string_view act = "act";
inline constexpr std::string_view down = "down";
inline constexpr std::string_view mlp_residual = "mlp_residual";
// MoE.
inline constexpr std::string_view router = "router";
inline constexpr std::string_view router_topk = "router_topk";
inline constexpr std::string_view shared_gate_up = "shared_gate_up";
inline constexpr std::string_view shared_act = "shared_act";
inline constexpr std::string_view shared_down = "shared_down";
// Prefill (DeepEP normal kernels): the received tokens copied into expert-major rows for the
// contiguous grouped GEMM, and the expert rows summed back into one row per token.
inline constexpr std::string_view experts_permute = "experts_permute";
inline constexpr std::string_view experts_unpermute = "experts_unpermute";
inline constexpr std::string_view experts_gate_up = "experts_gate_up";
inline constexpr std::string_view experts_act = "experts_act";
inline constexpr std::string_view experts_down = "experts_down";
inline constexpr std::string_view combine_sum = "combine_sum";
inline constexpr std::string_view moe_residual = "moe_residual";
// MTP module.
inline constexpr std::string_view mtp_embedding = "mtp_embedding";
inline constexpr std::string_view mtp_norms = "mtp_norms";
inline constexpr std::string_view eh_proj = "eh_proj";
// Prefill attention (prefill_step.cpp): MLA's latent-to-head up-projection of K and V (the
// non-absorbed form), the causal attention, and the new tokens' entries written to the cache.
inline constexpr std::string_view kv_b = "kv_b";
inline constexpr std::string_view prefill_attention = "prefill_attention";
inline constexpr std::string_view cache_store = "cache_store";
// fp8 activation quantisation before an fp8 GEMM; the serving engine's host time.
inline constexpr std::string_view act_quant = "act_quant";
inline constexpr std::string_view step_overhead = "step_overhead";
// Transfers, named as ops in the runner's trace and in the simulation's per-op times. The on-demand
// fetch is named by its overlap policy's stage label (sim/offload/overlap_*.cpp): "fetch" (serial),
// "fetch_overlap" (DA).
inline constexpr std::string_view fetch = "fetch";
inline constexpr std::string_view fetch_overlap = "fetch_overlap";
inline constexpr std::string_view writeback = "writeback";
inline constexpr std::string_view prefetch = "prefetch";
// The runner's waits on its compute stream (category catname::runner_wait; not ops).
inline constexpr std::string_view wait_fetch = "wait fetch";
inline constexpr std::string_view wait_writeback = "wait writeback";
}  // namespace opname

// Segment labels (Segment::label, sim/graph/op.h): the pieces of a step's graph the engine runs and
// the trace names (layer N/label), written by sim/graph's builders. The on-demand fetch's stage is
// labelled by its overlap policy (sim/offload/overlap_*.cpp).
namespace segname {
inline constexpr std::string_view embedding = "embedding";
inline constexpr std::string_view attention = "attention";
inline constexpr std::string_view attention_post = "attention_post";  // offload: after the fetch
inline constexpr std::string_view attn_allreduce = "attn_allreduce";
inline constexpr std::string_view mlp = "mlp";
inline constexpr std::string_view mlp_allreduce = "mlp_allreduce";
inline constexpr std::string_view moe_in = "moe_in";
inline constexpr std::string_view dispatch = "dispatch";
inline constexpr std::string_view experts = "experts";
inline constexpr std::string_view combine = "combine";
inline constexpr std::string_view moe_out = "moe_out";
inline constexpr std::string_view moe_allreduce = "moe_allreduce";
inline constexpr std::string_view moe_allgather = "moe_allgather";
inline constexpr std::string_view moe_reduce_scatter = "moe_reduce_scatter";
inline constexpr std::string_view mtp_in = "mtp_in";
inline constexpr std::string_view head = "head";
inline constexpr std::string_view host = "host";
inline constexpr std::string_view wait_prefetch = "wait prefetch";
}  // namespace segname

// Layer kinds (DecodeStepBuilder::layer_kind, results.json's per-layer "kind").
namespace layerkind {
inline constexpr std::string_view dense = "dense";
inline constexpr std::string_view moe = "moe";
inline constexpr std::string_view mtp = "mtp";
inline constexpr std::string_view head = "head";  // embedding and LM head, in per-layer results
}  // namespace layerkind

// Category names. The simulator's (OpCategory, sim/graph/op.h; results.json's time_by_category_s)
// and the runner's trace categories agree for kernels; for the rest they differ on purpose:
//   simulator "transfers" (all time lost to offload transfers: exposed fetches, gathers' SMs,
//   write-back waits)   <-> runner "transfer" (one fetch event on the fetch stream) and
//                            "writeback" (one write-back event on the write-back stream);
//   simulator "collectives", "host"  (the runner is one GPU with no serving engine: none);
//   runner "wait" (the compute stream waiting for a transfer: the simulation's exposed time) and
//   "step" (one event spanning each step).
namespace catname {
inline constexpr std::string_view gemm = "gemm";
inline constexpr std::string_view attention = "attention";
inline constexpr std::string_view indexer = "indexer";
inline constexpr std::string_view norm = "norm";
inline constexpr std::string_view elementwise = "elementwise";
inline constexpr std::string_view collectives = "collectives";
inline constexpr std::string_view transfers = "transfers";
inline constexpr std::string_view host = "host";
// The runner's trace only.
inline constexpr std::string_view runner_transfer = "transfer";
inline constexpr std::string_view runner_writeback = "writeback";
inline constexpr std::string_view runner_wait = "wait";
inline constexpr std::string_view runner_step = "step";
}  // namespace catname

}  // namespace ess
