#include "sim/graph/prefill_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/elementwise.h"
#include "sim/base/error.h"
#include "sim/base/op_names.h"

namespace ess {

std::vector<PrefillPiece> whole_prompts(std::int64_t tokens, std::int64_t prompt_length, std::int64_t cached) {
  if (tokens < 1 || prompt_length < 1) throw InternalError("whole_prompts: tokens and prompt_length must be >= 1");
  if (cached < 0 || cached >= prompt_length) throw InternalError("whole_prompts: cached must be in [0, prompt_length)");
  const std::int64_t fresh = prompt_length - cached;
  std::vector<PrefillPiece> pieces(static_cast<std::size_t>(tokens / fresh), PrefillPiece{fresh, cached});
  if (tokens % fresh > 0) pieces.push_back({tokens % fresh, cached});
  return pieces;
}

std::vector<PrefillPiece> run_pieces(const PrefillRun& run) {
  const PrefillConfig& p = run.work;
  return whole_prompts(p.tokens_per_gpu * run.parallelism.tensor_parallel, p.prompt_length, p.cached_tokens);
}

PrefillStepBuilder::PrefillStepBuilder(const PrefillRun& run)
    : s_(*run.system),
      m_(run.system->model),
      hw_(run.hardware),
      mtp_depth_(run.workload.mtp.depth),
      blocks_(run),
      core_(run, blocks_),
      tp_(run.parallelism.tensor_parallel) {}

void PrefillStepBuilder::add_attention(std::vector<Segment>& out, int layer, const PrefillWork& work, int replica) const {
  const std::int64_t T = work.queries;
  constexpr std::string_view label = segname::attention;
  blocks_.add_attention_input(out, layer, label, T);
  core_.add_core(out, layer, label, work);
  blocks_.add_attention_output(out, layer, label, T);
  blocks_.close_with_allreduce(out, layer, segname::attn_allreduce, T, replica);
  StepBlocks::append(out, layer, segname::attention,
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
    if (blocks_.layer_kind(layer) == layerkind::dense || !m_.moe) {
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
  for (int d = 1; d < mtp_depth_; ++d) {
    const int layer = static_cast<int>(m_.layers) + d - 1;
    common([&](std::vector<Segment>& out, int) { blocks_.add_mtp_projection(out, layer, T); });
    common([&](std::vector<Segment>& out, int replica) { add_attention(out, layer, work, replica); });
    mlp(layer);
    common([&](std::vector<Segment>& out, int) { blocks_.add_head(out, layer, work.pieces); });
  }
}

StepPlan PrefillStepBuilder::build(int step, std::span<const PrefillPiece> pieces, Rng& rng) const {
  if (pieces.empty()) throw InternalError("PrefillStepBuilder::build: a prefill step needs at least one piece");
  const std::int64_t top_k = m_.indexer ? m_.indexer->top_k : 0;
  const PrefillWork all = prefill_work(pieces, top_k);
  StepPlan plan;
  plan.step = step;
  plan.context = all.longest;
  plan.gpus.resize(static_cast<std::size_t>(blocks_.gpus()));
  if (s_.execution.step_overhead.value() > 0) {
    for (auto& g : plan.gpus) {
      StepBlocks::append(g.segments, -1, segname::host,
                         Op{opname::step_overhead, OpCategory::host, s_.execution.step_overhead, Flops(0.0), Bytes(0.0)});
    }
  }
  if (s_.execution.micro_batches == 1) {
    add_pass(plan.gpus, all, rng);
    return plan;
  }
  if (all.queries < 2) throw InputError("PrefillStepBuilder::build: two micro-batches need at least 2 tokens");
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
