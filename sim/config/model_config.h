// The architecture of the model being served, as read from a model preset or an inline "model"
// section. Only what decode-step costs and memory capacity depend on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/dtype.h"
#include "models/units.h"

namespace ess {

class ObjectReader;

enum class AttentionKind { mla, gqa };
enum class NormType { rms, layer };

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank q_a/q_b pair, keys and
// values compressed into one latent of kv_lora_rank plus a decoupled RoPE key of qk_rope_head_dim.
struct MlaConfig {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// Grouped-query attention (Llama): kv_heads key/value heads shared by heads / kv_heads queries.
struct GqaConfig {
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
};

struct AttentionConfig {
  AttentionKind kind = AttentionKind::gqa;
  std::int64_t heads = 0;
  MlaConfig mla;  // valid when kind == mla
  GqaConfig gqa;  // valid when kind == gqa
  DType cache_dtype = DType::bf16;
  Bytes cache_bytes_per_token;  // per layer: the latent entry (MLA) or K and V of all kv heads (GQA)
};

// DeepSeek-V3.2-Exp lightning indexer: scores every cached token for each query token and keeps
// the top_k for sparse attention.
struct IndexerConfig {
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t top_k = 0;
  Bytes cache_bytes_per_token;  // per layer: one key (fp8) plus its scale
};

struct MoeConfig {
  std::int64_t routed_experts = 0;
  std::int64_t shared_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t expert_intermediate = 0;
  std::int64_t first_dense_layers = 0;  // the first layers use the dense MLP instead
};

struct ModelConfig {
  std::string name;
  std::string description;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t vocab = 0;
  std::int64_t mtp_layers = 0;         // multi-token-prediction modules (DeepSeek-V3: 1)
  std::int64_t dense_intermediate = 0;  // width of the dense (gated) MLP
  NormType norm = NormType::rms;
  DType weight_dtype = DType::bf16;
  DType activation_dtype = DType::bf16;
  AttentionConfig attention;
  std::optional<IndexerConfig> indexer;
  std::optional<MoeConfig> moe;

  [[nodiscard]] std::int64_t dense_layer_count() const { return moe ? moe->first_dense_layers : layers; }
};

// Reads a complete model description (all fields required except where documented).
[[nodiscard]] ModelConfig read_model(ObjectReader& r);

}  // namespace ess
