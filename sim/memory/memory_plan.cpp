#include "sim/memory/memory_plan.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "sim/base/fp8.h"
#include "sim/config/quantity.h"
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

// fp8 weights carry one fp32 scale per kFp8ScaleGroup x kFp8ScaleGroup block (sim/base/fp8.h).
constexpr std::int64_t kScaleBlock = kFp8ScaleGroup;
constexpr double kScaleBytes = kFp8ScaleBytes;
// Live hidden-size activation buffers during a layer (residual stream, normed input, attention
// output, MLP output, MoE input and output): an estimate.
constexpr double kLiveHiddenBuffers = 6.0;

double d(std::int64_t v) { return static_cast<double>(v); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One weight matrix of k x n in `dtype`, with block scales when fp8.
double matrix(std::int64_t k, std::int64_t n, DType dtype) {
  double b = d(k) * d(n) * bytes_per_element(dtype);
  if (dtype == DType::fp8) b += kScaleBytes * d(ceil_div(k, kScaleBlock)) * d(ceil_div(n, kScaleBlock));
  return b;
}

double norm_weights(std::int64_t width, DType act) { return d(width) * bytes_per_element(act); }

double attention_weights(const ModelConfig& m, int tp) {
  const DType w = m.weight_dtype;
  const DType act = m.activation_dtype;
  const std::int64_t heads = m.attention.heads / tp;
  double b = norm_weights(m.hidden, act);
  if (m.attention.kind == AttentionKind::mla) {
    const auto& a = m.attention.mla;
    b += matrix(m.hidden, a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, w);    // q_a, kv_a (replicated)
    b += norm_weights(a.q_lora_rank + a.kv_lora_rank, act);                            // q_norm, kv_norm
    b += matrix(a.q_lora_rank, heads * (a.qk_nope_head_dim + a.qk_rope_head_dim), w);  // q_b
    b += matrix(a.kv_lora_rank, heads * (a.qk_nope_head_dim + a.v_head_dim), w);       // kv_b (absorbed)
    b += matrix(heads * a.v_head_dim, m.hidden, w);                                    // wo
    if (m.indexer) {
      const auto& ix = *m.indexer;
      b += matrix(a.q_lora_rank, ix.heads * ix.head_dim, w);  // indexer wq_b
      b += matrix(m.hidden, ix.head_dim, w);                  // indexer wk
      b += matrix(m.hidden, ix.heads, DType::bf16);           // indexer weights_proj
      b += 2 * norm_weights(ix.head_dim, act);                // indexer k_norm (LayerNorm)
    }
  } else {
    const auto& g = m.attention.gqa;
    const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp);
    b += matrix(m.hidden, (heads + 2 * kv_local) * g.head_dim, w);  // qkv
    b += matrix(heads * g.head_dim, m.hidden, w);                   // o
  }
  return b;
}

double dense_mlp_weights(const ModelConfig& m, int tp) {
  const std::int64_t width = m.dense_intermediate / tp;
  return norm_weights(m.hidden, m.activation_dtype) + 2 * matrix(m.hidden, width, m.weight_dtype) +
         matrix(width, m.hidden, m.weight_dtype);
}

double moe_weights(const ModelConfig& m, const Parallelism& p) {
  const auto& e = *m.moe;
  const std::int64_t physical = e.routed_experts + p.redundant_experts;
  // Routed experts: 1/expert_parallel of them per GPU, each split over moe_tensor_parallel GPUs.
  // Shared experts are sharded over the MoE group when its GPUs compute the same tokens (TP
  // attention, or DP attention gathering them), else each GPU holds them whole.
  const double expert = 2 * matrix(m.hidden, e.expert_intermediate, m.weight_dtype) +
                        matrix(e.expert_intermediate, m.hidden, m.weight_dtype);
  return norm_weights(m.hidden, m.activation_dtype) + matrix(m.hidden, e.routed_experts, DType::bf16) +  // router
         d(e.shared_experts) * expert / d(p.shared_expert_shards()) +
         d(physical / p.expert_parallel) * expert / d(p.moe_tensor_parallel);
}

std::string gb(Bytes b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f GB", b.value() / 1e9);
  return buf;
}

}  // namespace

Bytes MemoryBudget::used() const {
  Bytes total;
  for (const auto& l : lines) total += l.bytes;
  return total;
}

Bytes MemoryBudget::line(const std::string& name) const {
  for (const auto& l : lines) {
    if (l.name == name) return l.bytes;
  }
  return Bytes(0.0);
}

std::string MemoryBudget::report() const {
  std::string out;
  char buf[256];
  for (const auto& l : lines) {
    std::snprintf(buf, sizeof buf, "  %-16s %14s  %s\n", l.name.c_str(), gb(l.bytes).c_str(), l.detail.c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  %-16s %14s\n  %-16s %14s  (%s)\n", "total", gb(used()).c_str(), "HBM capacity",
                gb(capacity).c_str(), fits() ? "fits" : "does not fit");
  out += buf;
  return out;
}

std::int64_t cache_tokens(const RunBase& r) {
  return r.workload.context_length + r.workload.decode_steps * r.workload.mtp.depth;
}

Bytes weight_bytes_per_gpu(const RunBase& r) {
  const Scenario& s = *r.system;
  const ModelConfig& m = s.model;
  const int tp = r.parallelism.tensor_parallel;
  const int mtp_used = r.workload.mtp.depth - 1;
  double b = 0.0;
  for (std::int64_t layer = 0; layer < m.layers + mtp_used; ++layer) {
    b += attention_weights(m, tp);
    const bool moe = m.moe && (layer >= m.layers || layer >= m.moe->first_dense_layers);
    b += moe ? moe_weights(m, r.parallelism) : dense_mlp_weights(m, tp);
  }
  // Each MTP module adds two RMSNorms and the 2 x hidden -> hidden projection.
  b += d(mtp_used) * (2 * norm_weights(m.hidden, m.activation_dtype) + matrix(2 * m.hidden, m.hidden, m.weight_dtype));
  // Embedding and LM head (vocabulary-parallel under TP), final norm.
  b += 2 * matrix(m.vocab / tp, m.hidden, m.activation_dtype) + norm_weights(m.hidden, m.activation_dtype);
  return Bytes(b);
}

Bytes kv_cache_bytes_per_request(const RunBase& r, std::int64_t tokens) {
  const Scenario& s = *r.system;
  const ModelConfig& m = s.model;
  const auto layers = d(m.layers + r.workload.mtp.depth - 1);
  double per_token = m.attention.cache_bytes_per_token.value();
  if (m.attention.kind == AttentionKind::gqa) {
    // KV heads are split over TP ranks (replicated when there are fewer heads than ranks).
    const std::int64_t kv_local = std::max<std::int64_t>(1, m.attention.gqa.kv_heads / r.parallelism.tensor_parallel);
    per_token = 2.0 * d(kv_local * m.attention.gqa.head_dim) * bytes_per_element(m.attention.cache_dtype);
  }
  // MLA's latent is shared by all heads, so every TP rank holds all of it.
  return Bytes(layers * d(tokens) * per_token);
}

Bytes indexer_cache_bytes_per_request(const RunBase& r, std::int64_t tokens) {
  const Scenario& s = *r.system;
  if (!s.model.indexer) return Bytes(0.0);
  const auto layers = d(s.model.layers + r.workload.mtp.depth - 1);
  return Bytes(layers * d(tokens) * s.model.indexer->cache_bytes_per_token.value());
}

OffloadPlacement place_requests(const DecodeRun& r, std::int64_t batch) {
  const Scenario& s = *r.system;
  OffloadPlacement p;
  const std::int64_t tokens = cache_tokens(r);
  // Every selected entry must be on the GPU when attention reads it: a pool holds at least one
  // step's selection outside the pinned window (the cache simulation raises it the same way).
  const std::int64_t top_k = s.model.indexer ? s.model.indexer->top_k : tokens;
  p.pool_entries = std::max(s.cache.pool_capacity(tokens), std::min(top_k, std::max<std::int64_t>(0, tokens - s.cache.pinned_recent)));
  p.host_capacity_per_socket = r.host_capacity_per_socket();
  const double per_request = kv_cache_bytes_per_request(r, tokens).value();
  const double usable = r.host_capacity_per_socket().value() * r.host_memory_threshold();
  // GPUs sharing a socket's memory (the last socket may hold fewer; the busiest one bounds).
  const auto sharing = static_cast<double>(std::min(r.hardware.cpu.gpus_per_socket, r.hardware.gpu.count));
  const double wanted = per_request * static_cast<double>(batch) * sharing;
  if (s.cache.nvme) {
    p.offloaded = batch;
    p.host_latent_per_socket = Bytes(std::min(wanted, usable));
    const double spill = std::max(0.0, wanted - usable);
    p.nvme_latent_per_node = Bytes(spill * static_cast<double>(r.hardware.cpu.sockets));
    p.cold_fraction = wanted > 0 ? spill / wanted : 0.0;
    return p;
  }
  const auto fit_per_socket = static_cast<std::int64_t>(std::floor(usable / per_request));
  p.offloaded = std::min(batch, static_cast<std::int64_t>(std::floor(static_cast<double>(fit_per_socket) / sharing)));
  p.fallback = batch - p.offloaded;
  p.host_latent_per_socket = Bytes(per_request * static_cast<double>(p.offloaded) * sharing);
  return p;
}

MemoryBudget plan_memory(const DecodeRun& r, std::int64_t batch) {
  const Scenario& s = *r.system;
  const ModelConfig& m = s.model;
  const int tp = r.parallelism.tensor_parallel;
  const std::int64_t requests = batch * tp;  // requests of the replica, all cached on each of its GPUs
  const std::int64_t tokens = cache_tokens(r);
  const std::int64_t T = requests * r.workload.mtp.depth;  // query tokens per forward pass
  const DType act = m.activation_dtype;

  MemoryBudget b;
  b.capacity = r.hbm_capacity();
  b.lines.push_back({"weights", weight_bytes_per_gpu(r),
                     "tp " + std::to_string(tp) + ", ep " + std::to_string(r.parallelism.expert_parallel) +
                         (r.parallelism.moe_tensor_parallel > 1 && r.parallelism.moe_tensor_parallel != tp
                              ? ", moe tp " + std::to_string(r.parallelism.moe_tensor_parallel)
                              : std::string()) +
                         (m.weight_dtype == DType::fp8 ? ", fp8 with 128x128 block scales" : "")});
  const std::string layers_text = std::to_string(m.layers + r.workload.mtp.depth - 1) + " layers";
  const std::string per_request = std::to_string(requests) + " requests x " + std::to_string(tokens) + " tokens x " + layers_text;
  if (r.offload()) {
    b.placement = place_requests(r, batch);
    const auto& p = b.placement;
    // Offloaded requests keep a pool of entries (plus the pinned recent window) per layer on the GPU.
    const std::int64_t resident = std::min(tokens, p.pool_entries + s.cache.pinned_recent);
    b.lines.push_back({"latent_pool", kv_cache_bytes_per_request(r, resident) * d(p.offloaded),
                       std::to_string(p.offloaded) + " offloaded requests x " + std::to_string(resident) +
                           " resident entries x " + layers_text});
    b.lines.push_back({"latent_cache", kv_cache_bytes_per_request(r, tokens) * d(p.fallback),
                       std::to_string(p.fallback) + " GPU-only requests (host memory above " +
                           shortest_number(r.host_memory_threshold()) + " of capacity) x " + std::to_string(tokens) +
                           " tokens x " + layers_text});
    // Double-buffered landing space for one layer's misses: at most top_k entries per request.
    const std::int64_t top_k = m.indexer ? m.indexer->top_k : tokens;
    b.lines.push_back({"transfer_buffers",
                       Bytes(2.0 * d(p.offloaded) * d(std::min(top_k, tokens)) * m.attention.cache_bytes_per_token.value()),
                       "2 x " + std::to_string(p.offloaded) + " requests x " + std::to_string(std::min(top_k, tokens)) +
                           " entries (double buffer)"});
    // Prefetch staging: a layer's prefetch is issued `lookahead` layers early and held until that
    // layer's attention, so lookahead + 1 layers' buffers can be in use at once.
    const auto& pf = s.cache.prefetch;
    if (registered(prefetch_policies(), "prefetch", pf.policy).make()->prefetches()) {
      const std::int64_t buffers = pf.lookahead + 1;
      b.lines.push_back({"prefetch_buffers",
                         Bytes(d(buffers) * d(p.offloaded) * d(pf.buffer_entries) * m.attention.cache_bytes_per_token.value()),
                         std::to_string(buffers) + " layers in flight x " + std::to_string(p.offloaded) + " requests x " +
                             std::to_string(pf.buffer_entries) + " entries (cache.prefetch.buffer_entries)"});
    }
  } else {
    b.lines.push_back({m.attention.kind == AttentionKind::mla ? "latent_cache" : "kv_cache",
                       kv_cache_bytes_per_request(r, tokens) * d(requests), per_request});
  }
  if (m.indexer) {
    b.lines.push_back({"indexer_cache", indexer_cache_bytes_per_request(r, tokens) * d(requests), per_request});
  }

  // Activations (an estimate): a few live hidden-size buffers, the widest intermediate, the
  // indexer logits and top-k, the MoE dispatch/combine buffers and the LM head logits, for the
  // decode query tokens and a prefill chunk's tokens (workload.prefill_chunk: its indexer scores
  // every key up to itself; only its last token reaches the LM head).
  const std::int64_t chunk = r.workload.prefill_chunk ? r.workload.prefill_chunk->tokens : 0;
  const std::int64_t chunk_keys = r.workload.prefill_chunk ? r.workload.prefill_chunk->cached + chunk : 0;
  const double pass = d(T + chunk);
  double widest = d(m.dense_intermediate / tp) * 2;
  if (m.attention.kind == AttentionKind::mla) {
    const auto& a = m.attention.mla;
    const std::int64_t heads = m.attention.heads / tp;
    widest = std::max({widest, d(heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)), d(heads * a.kv_lora_rank)});
  }
  double act_bytes = pass * (kLiveHiddenBuffers * d(m.hidden) + 2 * widest) * bytes_per_element(act);
  if (m.indexer) {
    act_bytes += d(T) * (d(tokens) + d(m.indexer->top_k)) * 4.0;  // fp32 logits, int32 indices
    act_bytes += d(chunk) * (d(chunk_keys) + d(m.indexer->top_k)) * 4.0;
  }
  if (m.moe) {
    // DP attention with a tensor-parallel MoE computes the MoE group's gathered tokens.
    const double moe_tokens = pass * d(r.parallelism.gathers_tokens() ? r.parallelism.moe_group() : 1);
    const double pairs = moe_tokens * d(m.moe->experts_per_token);
    act_bytes += pairs * d(m.hidden) * (1.0 + bytes_per_element(act)) +             // dispatch (fp8), combine
                 pairs * 2.0 * d(m.moe->expert_intermediate / r.parallelism.moe_tensor_parallel) *
                     bytes_per_element(act);  // expert intermediates
  }
  act_bytes += d(T + (chunk > 0 ? 1 : 0)) * d(m.vocab / tp) * 4.0;  // fp32 logits
  b.lines.push_back({"activations", Bytes(act_bytes),
                     std::to_string(T) + " query tokens per pass" +
                         (chunk > 0 ? " and a prefill chunk of " + std::to_string(chunk) + " tokens" : "") + " (estimate)"});
  b.lines.push_back({"runtime", s.memory.runtime_overhead, "memory.runtime_overhead"});
  b.lines.push_back({"reserve", b.capacity * s.memory.reserve_fraction,
                     "memory.reserve = " + shortest_number(s.memory.reserve_fraction) + " of HBM"});
  return b;
}

namespace {
// In offload mode with an NVMe tier, the spilled latent cache must fit on the node's NVMe.
bool nvme_fits(const Scenario& s, const MemoryBudget& b) {
  return !s.cache.nvme || b.placement.nvme_latent_per_node <= s.cache.nvme->capacity;
}
std::string nvme_report(const Scenario& s, const MemoryBudget& b) {
  if (!s.cache.nvme) return {};
  return "  NVMe per node: " + gb(b.placement.nvme_latent_per_node) + " of " + gb(s.cache.nvme->capacity) + "\n";
}
}  // namespace

std::int64_t resolve_batch(const DecodeRun& r) {
  const Scenario& s = *r.system;
  if (r.workload.batch_per_gpu) {
    const MemoryBudget b = plan_memory(r, *r.workload.batch_per_gpu);
    if (!nvme_fits(s, b)) {
      throw CapacityError("batch_per_gpu " + std::to_string(*r.workload.batch_per_gpu) +
                          " does not fit: the latent cache spilled to NVMe exceeds cache.nvme.capacity\n" + nvme_report(s, b));
    }
    if (!b.fits()) {
      throw CapacityError("batch_per_gpu " + std::to_string(*r.workload.batch_per_gpu) + " does not fit in " +
                          r.hardware.name + " HBM (per GPU):\n" + b.report() +
                          "Use a smaller batch or \"max\" for the largest that fits; `ess-sim search fit` lists each "
                          "change that would make it fit.");
    }
    return *r.workload.batch_per_gpu;
  }
  const MemoryBudget one = plan_memory(r, 1);
  if (!one.fits() || !nvme_fits(s, one)) {
    throw CapacityError("not even one request per GPU fits in " + r.hardware.name + " HBM (per GPU):\n" + one.report() +
                        "`ess-sim search fit` lists each change that would make it fit.");
  }
  // Memory grows with the batch, so the largest batch that fits is found by bisection.
  std::int64_t lo = 1;          // fits
  std::int64_t hi = 1 << 20;    // the loader's bound on batch_per_gpu
  const auto fits = [&](std::int64_t batch) {
    const MemoryBudget b = plan_memory(r, batch);
    return b.fits() && nvme_fits(s, b);
  };
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace ess
