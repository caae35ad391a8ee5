// The prefill-step operator graph: the segments each GPU executes to run a batch of prompt tokens
// (whole prompts, or chunks of prompts whose beginning is already cached) through the model,
// priced by the cost models, for the engine (sim/engine) to schedule like a decode step.
//
// Per attention replica the step holds `pieces`: each the new tokens of one request and the tokens
// of that request already in the cache. Under tensor parallelism a replica's GPUs share its pieces
// (heads and columns are split), with data-parallel attention each GPU has its own; every replica
// runs the same pieces. What differs from decode (decode_step.h):
//   - attention is causal over the new tokens: MLA in its non-absorbed form (the latent entries
//     up-projected to per-head K and V by kv_b, FlashAttention over qk 192 / v 128), or for a model
//     with DeepSeek-V3.2's indexer, the indexer scoring every query against every earlier key and
//     sparse MLA over each query's own top-k (up to top_k entries, fewer near the start of a prompt);
//     GQA as FlashAttention;
//   - the LM head runs on the last token of each piece only;
//   - the MoE all-to-all sends a token once per remote node (DeepEP's normal kernels) rather than
//     once per expert copy (step_blocks.h AlltoallDedup);
//   - no CUDA-graph padding (engines run prefill eagerly);
//   - with two micro-batches the tokens are split in half (a piece may be cut: its second part has
//     the first part cached), as SGLang's two-batch overlap splits an extend batch.
// MTP modules in use (workload.mtp.depth > 1) run over every new token too: the draft layers need
// their own cache of the prompt.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/config/run_request.h"
#include "sim/graph/op.h"
#include "sim/graph/prefill_attention.h"
#include "sim/base/rng.h"
#include "sim/graph/step_blocks.h"

namespace ess {

// The pieces of a standalone prefill step of `tokens` new tokens (per replica) from prompts of
// `prompt_length` tokens of which `cached` are already in the cache: whole prompts (each
// prompt_length - cached new tokens after `cached`), then what is left as the start of one more.
[[nodiscard]] std::vector<PrefillPiece> whole_prompts(std::int64_t tokens, std::int64_t prompt_length, std::int64_t cached = 0);

// The pieces every replica of a prefill run runs each step: tokens_per_gpu per GPU (x
// tensor_parallel per replica) of prompts of prompt_length with cached_tokens cached.
[[nodiscard]] std::vector<PrefillPiece> run_pieces(const PrefillRun& run);

class PrefillStepBuilder {
 public:
  // `run` must outlive this.
  explicit PrefillStepBuilder(const PrefillRun& run);
  explicit PrefillStepBuilder(PrefillRun&&) = delete;

  [[nodiscard]] int gpus() const { return blocks_.gpus(); }
  [[nodiscard]] int layer_count() const { return blocks_.layer_count(); }
  [[nodiscard]] std::string_view layer_kind(int layer) const { return blocks_.layer_kind(layer); }

  // The plan of a step in which every attention replica runs `pieces`; `rng` drives the routing.
  // Throws InternalError on no pieces or a piece without tokens (the callers build them), InputError
  // for two micro-batches with fewer than 2 tokens (a scenario can ask for that).
  [[nodiscard]] StepPlan build(int step, std::span<const PrefillPiece> pieces, Rng& rng) const;

 private:
  void add_pass(std::vector<GpuStepPlan>& gpus, const PrefillWork& work, Rng& rng) const;
  void add_attention(std::vector<Segment>& out, int layer, const PrefillWork& work, int replica) const;

  const Scenario& s_;
  const ModelConfig& m_;
  const Hardware& hw_;
  int mtp_depth_;
  StepBlocks blocks_;
  PrefillAttention core_;
  int tp_;
};

}  // namespace ess
