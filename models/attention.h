// Decode attention on one GPU: the DeepSeek-V3.2-Exp lightning indexer and its top-k, MLA
// attention over the latent cache (sparse, as in V3.2-Exp, or dense, as in V3), and dense GQA
// attention (Llama-style FlashDecoding).
//
// A "query token" is one token of one request in this decode step; with MTP depth n a request has
// n query tokens (queries_per_request = n). Every model is a roofline (models/roofline.h); the
// formulas are given with each function and in models/README.md. All sizes are element or token
// counts, all >= 1 unless said otherwise; byte sizes must be > 0.
#pragma once

#include <cstdint>

#include "models/cost.h"
#include "models/dtype.h"
#include "models/hardware.h"
#include "models/units.h"

namespace ess {

// Bytes of one indexer query element: the indexer quantizes its queries to fp8 before scoring
// (DeepSeek-V3.2-Exp inference/model.py, Indexer.forward: act_quant(q) then fp8_index).
inline constexpr double kIndexerQueryBytes = 1.0;
// Bytes of one index score (logit), written by the indexer and read by top-k: fp32. This is an
// assumption about the score buffer (it holds head-weighted sums); bf16 scores would halve it.
inline constexpr double kIndexerLogitBytes = 4.0;
// Bytes of one selected index written by top-k: int32, the index type FlashMLA's sparse kernels
// take (deepseek-ai/FlashMLA flash_mla/flash_mla_interface.py). torch.topk returns int64, which
// would double this small term.
inline constexpr double kTopkIndexBytes = 4.0;

// Lightning-indexer scoring (DeepSeek-V3.2-Exp): every query token scores every cached token of
// its request with `heads` fp8 dot products of `head_dim`.
struct IndexerShape {
  std::int64_t requests = 0;
  std::int64_t queries_per_request = 1;
  std::int64_t heads = 0;     // indexer heads (64 in V3.2-Exp)
  std::int64_t head_dim = 0;  // 128 in V3.2-Exp
  std::int64_t context = 0;   // cached tokens per request, scored by each query token
  Bytes key_bytes_per_token;  // indexer key cache per token (132 B: 128 fp8 + one fp32 scale)
};

//   q     = requests queries_per_request
//   flops = 2 q heads head_dim context
//   bytes = requests context key_bytes_per_token      keys read once per request (shared by its q)
//         + q heads head_dim 1                        fp8 queries
//         + q context 4                               fp32 logits written
//   time  = roofline(flops, peak[fp8], bytes, hbm_bandwidth, hardware.kernels.indexer)
// Throws InputError on a bad shape, UnsupportedError if the GPU has no fp8 peak.
[[nodiscard]] KernelCost indexer_scoring(const IndexerShape& shape, const Hardware& hw);

// Top-k selection over `candidates` fp32 scores in each of `rows` rows (one row per query token).
// k may exceed candidates: a short context selects every candidate.
struct TopkShape {
  std::int64_t rows = 0;
  std::int64_t candidates = 0;
  std::int64_t k = 0;
};

//   bytes = topk_passes rows candidates 4 + rows min(k, candidates) 4
//   time  = memory_bound_kernel(bytes, hbm_bandwidth, hardware.kernels.memory_bound)
// topk_passes = hardware.kernels.topk_passes (>= 1): how many times the selection reads the scores.
[[nodiscard]] KernelCost topk(const TopkShape& shape, const Hardware& hw);

// MLA decode attention over the latent cache (FlashMLA). DeepSeek-V3/V3.2: heads = 128 per GPU
// under data-parallel attention, qk_dim = kv_lora_rank + qk_rope_head_dim = 576,
// v_dim = kv_lora_rank = 512, entry_bytes = 656 (fp8 latent with scales + bf16 rope, FlashMLA).
//
// The kernel (`row_tile`, `compute_dtype`): FlashMLA's decode kernels multiply a tile of 64 query
// rows at a time, a request's rows being its heads x query tokens (dense) or one query token's heads
// (sparse, where each query token has its own selection); a GPU with 16 heads per request (TP8)
// still computes 64 rows. The H20 runs of FlashMLA's dense test show it: h_q 16 takes the same time
// for s_q 1 to 4 and twice that at s_q 5 (calibration/data/public/deepseek/flashmla_h100_h20_dense.csv).
// `compute_dtype` is the MMA's input type: bf16 (FlashMLA dequantizes an FP8 cache to BF16 before
// its MMAs) or fp8 (a kernel whose MMAs take FP8 operands, at the GPU's FP8 peak).
struct MlaShape {
  std::int64_t requests = 0;
  std::int64_t queries_per_request = 1;
  std::int64_t heads = 0;
  std::int64_t qk_dim = 0;
  std::int64_t v_dim = 0;
  Bytes entry_bytes;  // one cached latent entry (one token)
  std::int64_t row_tile = 1;           // query rows are computed in multiples of this (1: no padding)
  DType compute_dtype = DType::bf16;   // the MMA's input type (bf16 or fp8)
};

// Query rows the kernel computes for `rows` useful ones: rows rounded up to a multiple of row_tile.
[[nodiscard]] std::int64_t padded_rows(std::int64_t rows, std::int64_t row_tile);

// Sparse MLA (V3.2-Exp): each query token attends to its own `selected_entries` entries, so the
// query tokens of one request do not share cache reads.
//   q     = requests queries_per_request
//   flops = 2 q padded_rows(heads) selected (qk_dim + v_dim)          (executed, padding included)
//   bytes = q selected entry_bytes + q heads qk_dim 2 + q heads v_dim 2    (bf16 q in, bf16 out)
//   time  = roofline(flops, peak[compute_dtype], bytes, hbm_bandwidth, hardware.kernels.sparse_attention)
// Its own kernel class: FlashMLA's sparse FP8-KV decode reaches 410-460 TFLOP/s on H800 where the
// dense BF16 kernel reaches 660 (calibration/data/public/deepseek/flashmla_h800.csv).
[[nodiscard]] KernelCost sparse_mla_attention(const MlaShape& shape, std::int64_t selected_entries,
                                              const Hardware& hw);

// Dense MLA (V3): all query tokens of a request attend to the same `context` entries, read once.
//   flops = 2 requests padded_rows(queries_per_request heads) context (qk_dim + v_dim)
//   bytes = requests context entry_bytes + q heads qk_dim 2 + q heads v_dim 2
//   time  = roofline(flops, peak[compute_dtype], bytes, hbm_bandwidth, hardware.kernels.attention)
[[nodiscard]] KernelCost dense_mla_attention(const MlaShape& shape, std::int64_t context,
                                             const Hardware& hw);

// Dense grouped-query attention (Llama decode, FlashDecoding); heads % kv_heads == 0.
struct GqaShape {
  std::int64_t requests = 0;
  std::int64_t queries_per_request = 1;
  std::int64_t heads = 0;     // query heads
  std::int64_t kv_heads = 0;  // key/value heads, each shared by heads / kv_heads query heads
  std::int64_t head_dim = 0;
  std::int64_t context = 0;           // cached tokens per request
  DType kv_dtype = DType::bf16;       // format of the K and V cache
  DType compute_dtype = DType::bf16;  // format of q, the output and the tensor-core math
};

//   q     = requests queries_per_request
//   flops = 4 q heads head_dim context                                      (QK^T and PV)
//   bytes = requests 2 kv_heads head_dim context B(kv_dtype)               K and V read once
//         + 2 q heads head_dim B(compute_dtype)                            q in, output out
//   time  = roofline(flops, peak[compute_dtype], bytes, hbm_bandwidth, hardware.kernels.attention)
[[nodiscard]] KernelCost gqa_attention(const GqaShape& shape, const Hardware& hw);

// Prefill attention (FlashAttention-style, causal) of one GPU: `queries` new tokens, each
// attending over its request's cached prefix and the new tokens up to itself. MLA prefill runs in
// its non-absorbed form (SGLang's and vLLM's MHA path): per head, qk_dim = qk_nope_head_dim +
// qk_rope_head_dim = 192 and v_dim = v_head_dim = 128, kv_heads = heads. GQA: qk_dim = v_dim =
// head_dim. `key_pairs` = sum over the queries of the keys each attends to (c n + n (n + 1) / 2 for
// a request with c cached and n new tokens); `keys` = K/V rows read (c + n summed over requests).
struct PrefillAttentionShape {
  std::int64_t queries = 0;
  double key_pairs = 0.0;   // >= queries
  std::int64_t keys = 0;    // >= 1
  std::int64_t heads = 0;     // query heads on this GPU
  std::int64_t kv_heads = 0;  // key/value heads on this GPU, heads % kv_heads == 0
  std::int64_t qk_dim = 0;
  std::int64_t v_dim = 0;
  DType compute_dtype = DType::bf16;  // q, K, V and the output; the tensor-core math
};

//   flops = 2 heads (key_pairs + queries row_keys) (qk_dim + v_dim)   (QK^T and PV as executed)
//   bytes = queries heads (qk_dim + v_dim) B                          q in, output out
//         + keys kv_heads (qk_dim + v_dim) B                          K and V read once
//   time  = roofline(flops, peak[compute_dtype], bytes, hbm_bandwidth, hardware.kernels.prefill_attention)
// row_keys = hardware.kernels.prefill_attention.row_keys: the keys of work each query row pays beyond
// its causal ones (the diagonal tile computed in full, each query tile's pipeline fill and epilogue),
// fitted with the efficiency to FlashAttention-3's published forward rates.
[[nodiscard]] KernelCost prefill_attention(const PrefillAttentionShape& shape, const Hardware& hw);

}  // namespace ess
