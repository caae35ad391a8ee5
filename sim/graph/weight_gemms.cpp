#include "sim/graph/weight_gemms.h"

#include <algorithm>
#include <stdexcept>

#include "sim/base/error.h"
#include "sim/base/op_names.h"

namespace ess {

std::vector<WeightGemm> weight_gemms(const ModelConfig& m, int tensor_parallel, int expert_parallel, int mtp_depth) {
  if (tensor_parallel < 1) throw InternalError("weight_gemms: tensor_parallel must be >= 1");
  if (expert_parallel < 1) throw InternalError("weight_gemms: expert_parallel must be >= 1");
  Parallelism p;
  p.tensor_parallel = tensor_parallel;
  p.expert_parallel = expert_parallel;
  p.moe_tensor_parallel = tensor_parallel > 1 && tensor_parallel % expert_parallel == 0 ? tensor_parallel / expert_parallel : 1;
  return weight_gemms(m, p, mtp_depth);
}

std::vector<WeightGemm> weight_gemms(const ModelConfig& m, const Parallelism& p, int mtp_depth) {
  if (p.tensor_parallel < 1) throw InternalError("weight_gemms: tensor_parallel must be >= 1");
  if (p.expert_parallel < 1) throw InternalError("weight_gemms: expert_parallel must be >= 1");
  if (p.moe_tensor_parallel < 1) throw InternalError("weight_gemms: moe_tensor_parallel must be >= 1");
  if (mtp_depth < 1) throw InternalError("weight_gemms: mtp_depth must be >= 1");
  const std::int64_t tp = p.tensor_parallel;
  const DType w = m.weight_dtype;
  const DType act = m.activation_dtype;
  const std::int64_t heads = m.attention.heads / tp;  // query heads per GPU
  std::vector<WeightGemm> out;
  const auto add = [&out](std::string_view name, WeightGemmForm form, std::int64_t n, std::int64_t k, DType dtype) {
    out.push_back(WeightGemm{name, form, n, k, dtype});
  };
  constexpr auto dense = WeightGemmForm::dense;

  // Attention (DecodeStepBuilder::add_attention).
  if (m.attention.kind == AttentionKind::mla) {
    const auto& a = m.attention.mla;
    // The fused down-projections, replicated on every TP rank.
    add(opname::q_a_kv_a, dense, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, m.hidden, w);
    add(opname::q_b, dense, heads * (a.qk_nope_head_dim + a.qk_rope_head_dim), a.q_lora_rank, w);
    if (m.indexer) {
      add(opname::indexer_q, dense, m.indexer->heads * m.indexer->head_dim, a.q_lora_rank, w);
      add(opname::indexer_k_w, dense, m.indexer->head_dim + m.indexer->heads, m.hidden, w);
    }
    add(opname::q_absorb, WeightGemmForm::per_head, heads * a.kv_lora_rank, a.qk_nope_head_dim, act);
    add(opname::v_up, WeightGemmForm::per_head, heads * a.v_head_dim, a.kv_lora_rank, act);
    add(opname::wo, dense, m.hidden, heads * a.v_head_dim, w);
  } else {
    const auto& g = m.attention.gqa;
    const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp);
    add(opname::qkv, dense, (heads + 2 * kv_local) * g.head_dim, m.hidden, w);
    add(opname::o, dense, m.hidden, heads * g.head_dim, w);
  }

  // The MLP of each layer: dense for the first layers (all of them without MoE), MoE for the rest;
  // the MTP modules' layers are MoE whenever the model has MoE.
  const bool drafts = mtp_depth > 1;
  const bool any_dense = m.dense_layer_count() > 0 || (drafts && !m.moe);
  const bool any_moe = m.moe && (m.layers > m.moe->first_dense_layers || drafts);
  if (any_dense) {  // add_dense_mlp
    const std::int64_t width = m.dense_intermediate / tp;
    add(opname::gate_up, dense, 2 * width, m.hidden, w);
    add(opname::down, dense, m.hidden, width, w);
  }
  if (any_moe) {  // add_moe: router and shared experts on every GPU, routed experts grouped
    const auto& e = *m.moe;
    add(opname::router, dense, e.routed_experts, m.hidden, DType::bf16);
    // In a MoE group whose GPUs compute the same tokens (add_group_moe: TP attention, or DP
    // attention gathering them) the shared experts are sharded over the group; the routed ones
    // are split over moe_tensor_parallel GPUs.
    const std::int64_t shared_width = e.expert_intermediate * e.shared_experts / p.shared_expert_shards();
    const std::int64_t routed_width = e.expert_intermediate / p.moe_tensor_parallel;
    if (shared_width > 0) {
      add(opname::shared_gate_up, dense, 2 * shared_width, m.hidden, w);
      add(opname::shared_down, dense, m.hidden, shared_width, w);
    }
    add(opname::experts_gate_up, WeightGemmForm::grouped, 2 * routed_width, m.hidden, w);
    add(opname::experts_down, WeightGemmForm::grouped, m.hidden, routed_width, w);
  }

  // The vocabulary-parallel LM head (add_head), then the MTP modules' projection of
  // [embedding; hidden] (add_mtp_projection).
  add(opname::lm_head, dense, m.vocab / tp, m.hidden, act);
  if (drafts) add(opname::eh_proj, dense, m.hidden, 2 * m.hidden, w);
  return out;
}

}  // namespace ess
