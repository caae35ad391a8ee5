// The attention core of prompt tokens, shared by the prefill step (prefill_step.h) and a decode
// step that also prefills a chunk (decode_step.h, workload.prefill_chunk): what runs on the new
// tokens of prompts between their projections (q_b, the indexer's projections: priced with every
// token of the step) and the output projection. The work of a set of pieces (new tokens after
// cached ones) and the split into two micro-batches live here too.
//   MLA, no indexer: the new entries stored, every key of the pieces' requests up-projected by kv_b
//     (the non-absorbed form), rope, causal FlashAttention over qk 192 / v 128;
//   MLA with DeepSeek-V3.2's indexer: the entries stored, every query scoring every earlier key,
//     top-k, sparse MLA in the absorbed form over each query's own selection (min(top_k, keys up to
//     it)) and the value up-projection;
//   GQA: K and V stored, causal FlashAttention.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/config/run_request.h"
#include "sim/graph/op.h"
#include "sim/graph/step_blocks.h"

namespace ess {

// New tokens of one request in a step, after `cached` tokens of it already in the cache.
struct PrefillPiece {
  std::int64_t tokens = 0;  // >= 1
  std::int64_t cached = 0;  // >= 0
};

// What a set of pieces asks of attention, summed over the pieces.
struct PrefillWork {
  std::int64_t queries = 0;  // new tokens
  double key_pairs = 0.0;    // keys attended, summed over the new tokens (causal)
  std::int64_t keys = 0;     // cached + new tokens of the pieces' requests
  std::int64_t pieces = 0;
  double selected = 0.0;     // indexer models: entries attended, summed over the new tokens (<= top_k each)
  std::int64_t longest = 0;  // the longest request's cached + new tokens
};

// `top_k` 0: a model without an indexer (selected stays 0).
[[nodiscard]] PrefillWork prefill_work(std::span<const PrefillPiece> pieces, std::int64_t top_k);

// Splits pieces into two micro-batches of ceil(tokens / 2) and floor(tokens / 2) new tokens, in
// order; a piece cut in two continues in the second with its first part cached.
[[nodiscard]] std::vector<std::vector<PrefillPiece>> split_in_two(std::span<const PrefillPiece> pieces);

class PrefillAttention {
 public:
  // `run` and `blocks` must outlive this.
  PrefillAttention(const RunBase& run, const StepBlocks& blocks);
  PrefillAttention(RunBase&&, const StepBlocks&) = delete;

  // Appends the core of `work` (queries >= 1) to the layer's segment labelled `label`.
  void add_core(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const;

 private:
  void add_mla(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const;
  void add_gqa(std::vector<Segment>& out, int layer, std::string_view label, const PrefillWork& work) const;
  void add(std::vector<Segment>& out, int layer, std::string_view label, std::string_view name, OpCategory category,
           const KernelCost& c) const;

  const Scenario& s_;
  const ModelConfig& m_;
  const Hardware& hw_;
  const StepBlocks& blocks_;
  int tp_;
};

}  // namespace ess
