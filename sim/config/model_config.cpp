#include "sim/config/model_config.h"

#include <vector>

#include "sim/config/physical_ranges.h"
#include "sim/config/reader.h"

namespace ess {

namespace {

std::vector<std::string> dtype_choices() {
  std::vector<std::string> out;
  for (auto n : dtype_names()) out.emplace_back(n);
  return out;
}

DType read_dtype(ObjectReader& r, std::string_view key) { return *parse_dtype(r.choice(key, dtype_choices())); }

// Upper bounds keep every product of dimensions far inside int64 and double's exact integers.
constexpr double kMaxDimension = 1 << 24;
constexpr double kMaxLayers = 10000;
Range count() { return Range::closed(1, kMaxDimension); }

AttentionConfig read_attention(ObjectReader& r) {
  AttentionConfig a;
  const auto kind = r.choice("kind", {"mla", "gqa"});
  a.heads = r.integer("heads", count());
  if (kind == "mla") {
    a.kind = AttentionKind::mla;
    a.mla.q_lora_rank = r.integer("q_lora_rank", count());
    a.mla.kv_lora_rank = r.integer("kv_lora_rank", count());
    a.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", count());
    a.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", count());
    a.mla.v_head_dim = r.integer("v_head_dim", count());
    a.cache_dtype = read_dtype(r, "cache_dtype");
    // The latent entry layout is format-specific (FlashMLA FP8: 512 fp8 + 4 fp32 scales + 64 bf16
    // rope = 656 B), so it is stated, not derived.
    a.cache_bytes_per_token = r.bytes("cache_bytes_per_token", token_bytes());
  } else {
    a.kind = AttentionKind::gqa;
    a.gqa.kv_heads = r.integer("kv_heads", count());
    a.gqa.head_dim = r.integer("head_dim", count());
    a.cache_dtype = read_dtype(r, "cache_dtype");
    if (a.heads % a.gqa.kv_heads != 0) {
      r.fail("kv_heads", "heads (" + std::to_string(a.heads) + ") must be a multiple of kv_heads (" +
                             std::to_string(a.gqa.kv_heads) + ")");
    }
    // K and V, each kv_heads x head_dim elements of cache_dtype, per token per layer.
    const Bytes derived(2.0 * static_cast<double>(a.gqa.kv_heads) * static_cast<double>(a.gqa.head_dim) *
                        bytes_per_element(a.cache_dtype));
    const std::string formula = "2 x kv_heads x head_dim x bytes(cache_dtype)";
    if (r.has("cache_bytes_per_token")) {
      // Accepted only when it agrees (as `check` prints it); GQA caches have no other layout.
      const Bytes stated = r.bytes("cache_bytes_per_token", token_bytes());
      if (stated != derived) {
        r.fail("cache_bytes_per_token", "for GQA the cache entry is derived, " + formula + " = " +
                                            format_quantity(derived.value(), Dimension::bytes) + ", but " +
                                            format_quantity(stated.value(), Dimension::bytes) +
                                            " is given; remove the key or fix the dimensions");
      }
    }
    a.cache_bytes_per_token = derived;
    r.record("cache_bytes_per_token", format_quantity(derived.value(), Dimension::bytes), "derived: " + formula);
  }
  r.finish();
  return a;
}

}  // namespace

ModelConfig read_model(ObjectReader& r) {
  ModelConfig m;
  m.name = r.text("name");
  m.description = r.optional_text("description").value_or("");
  r.optional_text("provenance");
  m.layers = r.integer("layers", Range::closed(1, kMaxLayers));
  m.hidden = r.integer("hidden", count());
  m.vocab = r.integer("vocab", count());
  m.mtp_layers = r.integer_or("mtp_layers", Range::closed(0, 63), 0);
  m.dense_intermediate = r.integer("dense_intermediate", count());
  m.norm = r.choice("norm", {"rms", "layer"}) == "rms" ? NormType::rms : NormType::layer;
  m.weight_dtype = read_dtype(r, "weight_dtype");
  m.activation_dtype = read_dtype(r, "activation_dtype");
  {
    auto a = r.object("attention");
    m.attention = read_attention(a);
  }
  if (r.has("indexer")) {
    auto ix = r.object("indexer");
    IndexerConfig c;
    c.heads = ix.integer("heads", count());
    c.head_dim = ix.integer("head_dim", count());
    c.top_k = ix.integer("top_k", count());
    c.cache_bytes_per_token = ix.bytes("cache_bytes_per_token", token_bytes());
    ix.finish();
    if (m.attention.kind != AttentionKind::mla) r.fail("indexer", "a lightning indexer needs MLA attention");
    m.indexer = c;
  } else {
    r.record("indexer", nullptr, "absent: dense attention");
  }
  if (r.has("moe")) {
    auto e = r.object("moe");
    MoeConfig c;
    c.routed_experts = e.integer("routed_experts", count());
    c.shared_experts = e.integer("shared_experts", Range::closed(0, kMaxDimension));
    c.experts_per_token = e.integer("experts_per_token", count());
    c.expert_intermediate = e.integer("expert_intermediate", count());
    c.first_dense_layers = e.integer("first_dense_layers", Range::closed(0, static_cast<double>(m.layers)));
    if (c.experts_per_token > c.routed_experts) {
      e.fail("experts_per_token", "experts_per_token (" + std::to_string(c.experts_per_token) +
                                      ") exceeds routed_experts (" + std::to_string(c.routed_experts) + ")");
    }
    e.finish();
    m.moe = c;
  } else {
    r.record("moe", nullptr, "absent: dense MLP in every layer");
  }
  r.finish();
  return m;
}

}  // namespace ess
