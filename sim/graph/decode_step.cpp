#include "sim/graph/decode_step.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>

#include "models/attention.h"
#include "models/copy.h"
#include "models/elementwise.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "sim/base/error.h"
#include "sim/base/op_names.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"

namespace ess {

DecodeStepBuilder::DecodeStepBuilder(const DecodeRun& run, std::int64_t batch_per_gpu, std::int64_t offloaded,
                                     double cold_fraction)
    : s_(*run.system),
      m_(run.system->model),
      hw_(run.hardware),
      workload_(run.workload),
      offload_(run.offload()),
      blocks_(run),
      chunk_core_(run, blocks_),
      batch_(batch_per_gpu),
      replica_(run.replica_requests.value_or(batch_per_gpu * run.parallelism.tensor_parallel)),
      gpus_(blocks_.gpus()),
      tp_(run.parallelism.tensor_parallel),
      layers_total_(blocks_.layer_count()),
      offloaded_(offloaded),
      cold_fraction_(cold_fraction) {
  if (offload_) {
    overlap_ = overlap_index(s_.cache.overlap);
    if (registered(prefetch_policies(), "prefetch", s_.cache.prefetch.policy).make()->prefetches()) {
      prefetch_lookahead_ = s_.cache.prefetch.lookahead;
    }
  }
  const auto overlaps = overlap_policies();
  for (std::size_t i = 0; i < overlaps.size(); ++i) {
    if (overlaps[i].make == &make_serial_overlap) overlap_serial_ = i;
  }
  if (const auto& c = workload_.prefill_chunk) {
    if (c->tokens < 1 || c->cached < 0) throw InternalError("DecodeStepBuilder: a prefill chunk needs tokens >= 1 and cached >= 0");
    chunk_.push_back(PrefillPiece{run.replica_requests ? c->tokens : c->tokens * tp_, c->cached});
  }
  if (batch_per_gpu < 1) throw InternalError("DecodeStepBuilder: batch_per_gpu must be >= 1");
  if (run.replica_requests && (replica_ < 1 || (replica_ + tp_ - 1) / tp_ != batch_per_gpu)) {
    throw InternalError("DecodeStepBuilder: replica_requests must be >= 1 and batch_per_gpu its ceil over tensor_parallel");
  }
  if (offloaded < 0 || offloaded > batch_per_gpu) {
    throw InternalError("DecodeStepBuilder: offloaded requests must be in [0, batch_per_gpu]");
  }
  if (s_.execution.micro_batches == 2 && batch_per_gpu < 2) {
    throw InternalError("DecodeStepBuilder: two micro-batches need at least 2 requests per GPU");
  }
}

MlaShape DecodeStepBuilder::mla_shape(Tokens t) const {
  const auto& a = m_.attention.mla;
  const MlaKernel& k = *s_.engine.mla_kernel;
  return MlaShape{t.requests, t.queries_per_request, m_.attention.heads / tp_, a.kv_lora_rank + a.qk_rope_head_dim,
                  a.kv_lora_rank, m_.attention.cache_bytes_per_token, k.row_tile, k.mma};
}

std::int64_t DecodeStepBuilder::context_at(int step) const {
  // Every request gains the accepted tokens of each step (on average; acceptance may be fractional).
  return workload_.context_length +
         static_cast<std::int64_t>(std::floor(static_cast<double>(step) * workload_.mtp.acceptance));
}

void DecodeStepBuilder::add_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                                      int replica, std::span<const LayerAccess> access, LayerOffload* record) const {
  const bool offload = !access.empty();
  const DType act = m_.activation_dtype;
  const std::int64_t T = t.total();
  const std::int64_t TL = t.linear();
  const std::int64_t heads = m_.attention.heads / tp_;
  constexpr std::string_view label = segname::attention;
  const std::string_view post = offload ? segname::attention_post : label;
  blocks_.add_attention_input(out, layer, label, TL);

  if (m_.attention.kind == AttentionKind::mla) {
    const auto& a = m_.attention.mla;
    if (offload) {
      add_offload_attention(out, layer, t, context, access, *record);
    } else {
      std::int64_t selected = context;
      if (m_.indexer) {
        const auto& ix = *m_.indexer;
        StepBlocks::append(out, layer, label,
                           blocks_.kernel(opname::indexer_score, OpCategory::indexer,
                                          indexer_scoring({t.requests, t.queries_per_request, ix.heads, ix.head_dim, context,
                                                           ix.cache_bytes_per_token},
                                                          hw_)));
        StepBlocks::append(out, layer, label,
                           blocks_.kernel(opname::indexer_topk, OpCategory::indexer, topk({T, context, ix.top_k}, hw_)));
        selected = std::min(ix.top_k, context);
      }
      // Absorbed MLA (FlashMLA decode): queries projected into the latent space per head, attention
      // over latent entries, then the per-head value up-projection.
      StepBlocks::append(out, layer, label,
                         blocks_.kernel(opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_)));
      const MlaShape shape = mla_shape(t);
      const KernelCost attn =
          m_.indexer ? sparse_mla_attention(shape, selected, hw_) : dense_mla_attention(shape, context, hw_);
      StepBlocks::append(out, layer, label,
                         blocks_.kernel(m_.indexer ? opname::sparse_mla : opname::dense_mla, OpCategory::attention, attn));
    }
    StepBlocks::append(out, layer, post,
                       blocks_.kernel(opname::v_up, OpCategory::gemm, gemm({T, heads * a.v_head_dim, a.kv_lora_rank, act}, hw_)));
  } else {
    const auto& g = m_.attention.gqa;
    const std::int64_t kv_local = std::max<std::int64_t>(1, g.kv_heads / tp_);
    StepBlocks::append(out, layer, label,
                       blocks_.kernel(opname::attention, OpCategory::attention,
                                      gqa_attention({t.requests, t.queries_per_request, heads, kv_local, g.head_dim, context,
                                                     m_.attention.cache_dtype, act},
                                                    hw_)));
  }
  // A prompt chunk in the step (workload.prefill_chunk): its attention after the decode requests'.
  if (t.chunk.queries > 0) chunk_core_.add_core(out, layer, post, t.chunk);
  blocks_.add_attention_output(out, layer, post, TL);
  blocks_.close_with_allreduce(out, layer, segname::attn_allreduce, TL, replica);
  StepBlocks::append(out, layer, post,
                     blocks_.kernel(opname::attn_residual, OpCategory::elementwise, elementwise({TL * m_.hidden, 2, 1, act}, hw_)));
  if (offload && (t.offloaded > 0 || t.chunk.queries > 0)) {
    // The new tokens' latent entries go to the host copy of the cache: one contiguous run per
    // request (and one for a prompt chunk's), started now and waited for only at the end of the step.
    Segment wb;
    wb.kind = SegmentKind::writeback;
    wb.layer = layer;
    wb.label = opname::writeback;
    wb.transfer.h2d = false;
    wb.transfer.gather = s_.cache.transfer == TransferPath::gather;
    const double entries = static_cast<double>(t.offloaded * t.queries_per_request + t.chunk.queries);
    wb.transfer.bytes = entries * m_.attention.cache_bytes_per_token.value();
    wb.transfer.runs = static_cast<double>(t.offloaded + t.chunk.pieces);
    record->d2h_bytes = wb.transfer.bytes;
    out.push_back(std::move(wb));
  }
}

Transfer DecodeStepBuilder::prefetch_transfer(const LayerAccess& target, Tokens t) const {
  Transfer p;
  p.h2d = true;
  p.gather = s_.cache.transfer == TransferPath::gather;
  p.bytes = target.prefetched * static_cast<double>(t.offloaded) * m_.attention.cache_bytes_per_token.value();
  p.runs = target.prefetch_runs * static_cast<double>(t.offloaded);
  p.nvme_bytes = p.bytes * cold_fraction_;
  return p;
}

void DecodeStepBuilder::add_prefetch(std::vector<Segment>& out, int target, Tokens t, std::span<const LayerAccess> access) const {
  if (target >= layers_total_) return;
  Segment seg;
  seg.kind = SegmentKind::prefetch;
  seg.layer = target;
  seg.label = opname::prefetch;
  seg.transfer = prefetch_transfer(access[static_cast<std::size_t>(target)], t);
  if (seg.transfer.bytes > 0) out.push_back(std::move(seg));
}

struct DecodeStepBuilder::OffloadParts {
  std::array<Op, kAttentionPartCount> ops{};  // indexed by AttentionPart
  AttentionCosts costs;
  double share_a = 1.0;  // the first half's share of the requests (and of the fetch)
};

DecodeStepBuilder::DemandFetch DecodeStepBuilder::demand_fetch(const LayerAccess& access, Tokens t,
                                                             std::int64_t selected) const {
  // Misses of this GPU: the offloaded requests' mean, scaled (GPU-only requests never miss). Those a
  // prefetch brought early are on the GPU by now: the rest are fetched on demand.
  const double all_misses = std::min(access.misses, static_cast<double>(selected));
  const double early = std::min(access.prefetch_used, all_misses) * static_cast<double>(t.offloaded);
  const double misses = all_misses * static_cast<double>(t.offloaded) - early;
  Transfer fetch;
  fetch.h2d = true;
  fetch.gather = s_.cache.transfer == TransferPath::gather;
  fetch.bytes = misses * m_.attention.cache_bytes_per_token.value();
  fetch.runs = access.runs * static_cast<double>(t.offloaded);
  // The runs among the on-demand misses, taken in proportion (where they fall is not tracked).
  if (early > 0) fetch.runs *= misses / (misses + early);
  fetch.nvme_bytes = fetch.bytes * cold_fraction_;
  return {fetch, misses};
}

DecodeStepBuilder::OffloadParts DecodeStepBuilder::price_offload_parts(Tokens t, std::int64_t context,
                                                                       const Transfer& fetch, std::int64_t miss_k) const {
  const DType act = m_.activation_dtype;
  const auto& a = m_.attention.mla;
  const auto& ix = *m_.indexer;
  const std::int64_t T = t.total();
  const std::int64_t heads = m_.attention.heads / tp_;
  const std::int64_t selected = std::min(ix.top_k, context);
  const std::int64_t hit_k = selected - miss_k;
  const MlaShape shape = mla_shape(t);
  const auto scoring = [&](std::int64_t requests) {
    return blocks_.kernel(opname::indexer_score, OpCategory::indexer,
                     indexer_scoring({requests, t.queries_per_request, ix.heads, ix.head_dim, context, ix.cache_bytes_per_token}, hw_));
  };
  const auto selecting = [&](std::int64_t requests) {
    return blocks_.kernel(opname::indexer_topk, OpCategory::indexer, topk({requests * t.queries_per_request, context, ix.top_k}, hw_));
  };
  const auto attention_over = [&](std::string_view name, std::int64_t requests, std::int64_t entries) {
    MlaShape part = shape;
    part.requests = requests;
    return blocks_.kernel(name, OpCategory::attention, sparse_mla_attention(part, std::max<std::int64_t>(1, entries), hw_));
  };
  const auto fetch_time = [&](double bytes, double runs) {
    const Seconds nvme = bytes > 0 && s_.cache.nvme && fetch.nvme_bytes > 0
                             ? s_.cache.nvme->latency + Bytes(bytes * cold_fraction_) / s_.cache.nvme->bandwidth
                             : Seconds(0.0);
    if (bytes <= 0) return Seconds(0.0);
    return nvme + (fetch.gather ? gather_time(CopyDirection::h2d, Bytes(bytes), hw_.pcie)
                                : copy_time(CopyDirection::h2d, Bytes(bytes), std::max<std::int64_t>(1, std::llround(runs)), hw_.pcie));
  };
  using P = AttentionPart;
  OffloadParts out;
  const auto set = [&out](AttentionPart part, Op op) { out.ops[static_cast<std::size_t>(part)] = op; };
  set(P::score, scoring(t.requests));
  set(P::topk, selecting(t.requests));
  set(P::absorb, blocks_.kernel(opname::q_absorb, OpCategory::gemm, gemm({T, heads * a.kv_lora_rank, a.qk_nope_head_dim, act}, hw_)));
  set(P::attention, attention_over(opname::sparse_mla, t.requests, selected));
  set(P::attention_hits, attention_over(opname::sparse_mla_hits, t.requests, hit_k));
  set(P::attention_misses, attention_over(opname::sparse_mla_misses, t.requests, miss_k));
  set(P::merge, blocks_.kernel(opname::attention_merge, OpCategory::elementwise,
                               elementwise({T * heads * a.kv_lora_rank, 2, 1, act}, hw_)));
  const std::int64_t half_a = (t.requests + 1) / 2;
  const std::int64_t half_b = t.requests - half_a;
  out.share_a = static_cast<double>(half_a) / static_cast<double>(t.requests);
  AttentionCosts& costs = out.costs;
  costs.splittable = half_b > 0;
  costs.fetch_all = fetch_time(fetch.bytes, fetch.runs);
  if (costs.splittable) {
    set(P::score_a, scoring(half_a));
    set(P::topk_a, selecting(half_a));
    set(P::score_b, scoring(half_b));
    set(P::topk_b, selecting(half_b));
    set(P::misses_a, attention_over(opname::sparse_mla_misses_a, half_a, miss_k));
    set(P::misses_b, attention_over(opname::sparse_mla_misses_b, half_b, miss_k));
    costs.fetch_a = fetch_time(fetch.bytes * out.share_a, fetch.runs * out.share_a);
    costs.fetch_b = fetch_time(fetch.bytes * (1 - out.share_a), fetch.runs * (1 - out.share_a));
  }
  for (std::size_t i = 0; i < kAttentionPartCount; ++i) costs.part[i] = out.ops[i].time;
  return out;
}

void DecodeStepBuilder::add_offload_pieces(std::vector<Segment>& out, int layer, Tokens t, std::span<const LayerAccess> all,
                                           const OffloadParts& parts, const Transfer& fetch, const Transfer& prefetched,
                                           std::size_t used) const {
  const auto& ops = parts.ops;
  Transfer part_a = fetch;
  part_a.bytes *= parts.share_a;
  part_a.runs *= parts.share_a;
  part_a.nvme_bytes *= parts.share_a;
  Transfer part_b = fetch;
  part_b.bytes -= part_a.bytes;
  part_b.runs -= part_a.runs;
  part_b.nvme_bytes -= part_a.nvme_bytes;
  const auto stage = [&](std::string_view label, Transfer part, std::vector<Op> stage_ops) {
    Segment seg;
    seg.kind = SegmentKind::stage;
    seg.layer = layer;
    seg.label = label;
    seg.transfer = part;
    for (const Op& op : stage_ops) seg.duration += op.time;
    seg.ops = std::move(stage_ops);
    out.push_back(std::move(seg));
  };
  bool first = true;
  bool prefetch_done = prefetch_lookahead_ == 0;
  for (const OverlapPiece& piece : overlap_instances()[used]->pieces(parts.costs)) {
    if (!first && !prefetch_done) {
      // Once the indexer has selected (the first piece), this layer needs what was prefetched for
      // it, and the prefetch of layer + lookahead can go out.
      if (prefetched.bytes > 0) {
        Segment wait;
        wait.kind = SegmentKind::prefetch_wait;
        wait.layer = layer;
        wait.label = segname::wait_prefetch;
        out.push_back(std::move(wait));
      }
      add_prefetch(out, layer + prefetch_lookahead_, t, all);
      prefetch_done = true;
    }
    first = false;
    if (piece.fetch == FetchShare::none) {
      for (const AttentionPart part : piece.parts) {
        StepBlocks::append(out, layer, piece.after_fetch ? segname::attention_post : segname::attention, ops[static_cast<std::size_t>(part)]);
      }
      continue;
    }
    const Transfer& moved = piece.fetch == FetchShare::all ? fetch : piece.fetch == FetchShare::half_a ? part_a : part_b;
    // A stage without parts is only the wait for its transfer: none when nothing moves.
    if (piece.parts.empty() && moved.bytes <= 0) continue;
    std::vector<Op> stage_ops;
    for (const AttentionPart part : piece.parts) stage_ops.push_back(ops[static_cast<std::size_t>(part)]);
    stage(piece.label, moved, std::move(stage_ops));
  }
  if (!prefetch_done) throw InternalError("overlap policy \"" + std::string(overlap_policies()[used].name) +
                                          "\" gave a single piece: no point after the indexer to wait for prefetches");
}

void DecodeStepBuilder::add_offload_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                                              std::span<const LayerAccess> all, LayerOffload& record) const {
  const LayerAccess& access = all[static_cast<std::size_t>(layer)];
  const std::int64_t selected = std::min(m_.indexer->top_k, context);
  const auto [fetch, misses] = demand_fetch(access, t, selected);
  const Transfer prefetched = prefetch_transfer(access, t);
  record.access = access;
  record.h2d_bytes = fetch.bytes + prefetched.bytes;
  record.prefetch_bytes = prefetched.bytes;
  // Prefetches for the first layers go out before layer 0's indexer runs.
  if (prefetch_lookahead_ > 0 && layer == 0) {
    for (int target = 0; target < prefetch_lookahead_; ++target) add_prefetch(out, target, t, all);
  }
  // Per query token, the selected entries split into those on the GPU and those fetched.
  const auto miss_k = static_cast<std::int64_t>(std::llround(misses / static_cast<double>(t.requests)));
  const OffloadParts parts = price_offload_parts(t, context, fetch, miss_k);
  // Nothing to fetch: nothing to hide, the serial timeline (no stage).
  std::size_t used = overlap_serial_;
  if (fetch.bytes > 0) used = overlap_instances()[overlap_]->resolve(overlap_, parts.costs);
  record.overlap = used;
  add_offload_pieces(out, layer, t, all, parts, fetch, prefetched, used);
}

StepPlan DecodeStepBuilder::build(int step, Rng& rng, const std::vector<LayerAccess>* access) const {
  StepPlan plan;
  plan.step = step;
  plan.context = context_at(step);
  plan.gpus.resize(static_cast<std::size_t>(gpus_));
  const bool offload = offload_;
  if (offload) {
    if (access == nullptr || access->size() != static_cast<std::size_t>(layers_total_)) {
      throw InternalError("DecodeStepBuilder::build: offload mode needs the access of every layer");
    }
    plan.offload.resize(static_cast<std::size_t>(layers_total_));
  }
  // The serving engine's host time comes first: the GPUs wait for it (execution.step_overhead, and
  // the engine's per step and per request of the replica unless the engine overlaps it with the
  // previous step: then the step lasts at least that long, engine_actors.cpp).
  const Seconds engine_host = s_.engine.host_step_time + s_.engine.host_request_time * static_cast<double>(replica_);
  Seconds host = s_.execution.step_overhead;
  if (s_.engine.host_overlap) {
    plan.host_floor = engine_host;
  } else {
    host += engine_host;
  }
  if (host.value() > 0) {
    for (auto& g : plan.gpus) {
      StepBlocks::append(g.segments, -1, segname::host, Op{opname::step_overhead, OpCategory::host, host, Flops(0.0), Bytes(0.0)});
    }
  }
  const std::int64_t top_k = m_.indexer ? m_.indexer->top_k : 0;
  if (s_.execution.micro_batches == 1) {
    add_pass(plan.gpus, replica_, offloaded_, plan.context, prefill_work(chunk_, top_k), rng, access,
             offload ? &plan.offload : nullptr);
    return plan;
  }
  // The chunk in two halves (a one-token chunk stays whole in the first).
  const auto chunk_lanes = split_in_two(chunk_);
  // Two micro-batches: ceil and floor of half the replica's requests (and of the offloaded ones).
  const std::int64_t batch_a = (replica_ + 1) / 2;
  const std::int64_t offloaded_a = (offloaded_ + 1) / 2;
  for (int lane = 0; lane < 2; ++lane) {
    const std::int64_t batch = lane == 0 ? batch_a : replica_ - batch_a;
    const std::int64_t offloaded = lane == 0 ? offloaded_a : offloaded_ - offloaded_a;
    std::vector<GpuStepPlan> part(static_cast<std::size_t>(gpus_));
    std::vector<LayerOffload> records(plan.offload.size());
    add_pass(part, batch, offloaded, plan.context, prefill_work(chunk_lanes[static_cast<std::size_t>(lane)], top_k), rng,
             access, offload ? &records : nullptr);
    for (std::size_t g = 0; g < part.size(); ++g) {
      auto& segments = plan.gpus[g].segments;
      for (Segment& seg : part[g].segments) {
        seg.lane = lane;
        segments.push_back(std::move(seg));
      }
    }
    // Per layer: the access and overlap of lane 0 (both lanes see the same cache state), bytes summed.
    for (std::size_t l = 0; l < records.size(); ++l) {
      auto& o = plan.offload[l];
      if (lane == 0) {
        o = records[l];
      } else {
        o.h2d_bytes += records[l].h2d_bytes;
        o.prefetch_bytes += records[l].prefetch_bytes;
        o.d2h_bytes += records[l].d2h_bytes;
      }
    }
  }
  return plan;
}

void DecodeStepBuilder::add_pass(std::vector<GpuStepPlan>& gpus, std::int64_t requests, std::int64_t offloaded,
                                 std::int64_t context, const PrefillWork& chunk, Rng& rng,
                                 const std::vector<LayerAccess>* access, std::vector<LayerOffload>* records) const {
  const std::span<const LayerAccess> layers_access =
      access != nullptr && records != nullptr ? std::span<const LayerAccess>(*access) : std::span<const LayerAccess>();
  const auto layer_record = [&](int layer) { return records != nullptr ? &(*records)[static_cast<std::size_t>(layer)] : nullptr; };

  const auto for_each_gpu = [&](const auto& add) {
    for (int g = 0; g < gpus_; ++g) add(gpus[static_cast<std::size_t>(g)].segments, g / tp_);
  };
  // Segments that are the same on every GPU are built once per replica index and copied.
  const auto common = [&](const auto& add) {
    std::vector<Segment> built;
    int built_for = -1;
    for_each_gpu([&](std::vector<Segment>& out, int replica) {
      // Without tensor parallelism every replica's segments are identical (no all-reduce group).
      const int key = tp_ == 1 ? 0 : replica;
      if (key != built_for) {
        built.clear();
        add(built, replica);
        built_for = key;
      }
      out.insert(out.end(), built.begin(), built.end());
    });
  };

  // A pass that runs eagerly launches every kernel from the CPU: each takes at least the launch.
  std::vector<std::size_t> first_new(gpus.size());
  for (std::size_t g = 0; g < gpus.size(); ++g) first_new[g] = gpus[g].segments.size();
  const bool eager_pass = chunk.queries > 0 || s_.engine.eager(requests);

  // Verification pass of the main model: depth query tokens per request.
  // The engine replays a CUDA graph captured for a batch at least this replica's (padded rows run
  // through every kernel but attention).
  // A step with a prompt chunk runs eagerly: no padding, DeepEP's normal all-to-all, sampled routing.
  const bool mixed = chunk.queries > 0;
  const std::int64_t padded = mixed ? 0 : s_.engine.graph_batch(requests);
  const Tokens main{requests, workload_.mtp.depth, offloaded, padded, chunk};
  const AlltoallDedup dedup = mixed ? AlltoallDedup::per_node : AlltoallDedup::per_copy;
  const std::int64_t max_routed = mixed ? kRoutedTokensPerPass : 0;
  common([&](std::vector<Segment>& out, int) { blocks_.add_embedding(out, main.linear()); });
  for (int layer = 0; layer < m_.layers; ++layer) {
    common([&](std::vector<Segment>& out, int replica) {
      add_attention(out, layer, main, context, replica, layers_access, layer_record(layer));
    });
    if (blocks_.layer_kind(layer) == layerkind::moe) {
      blocks_.add_moe(gpus, layer, main.linear(), rng, dedup, max_routed);
    } else {
      common([&](std::vector<Segment>& out, int replica) { blocks_.add_dense_mlp(out, layer, main.linear(), replica); });
    }
  }
  common([&](std::vector<Segment>& out, int) { blocks_.add_head(out, -1, main.total() + chunk.pieces); });

  // Draft passes: MTP module d drafts one more token per request from the previous one.
  const Tokens draft{requests, 1, offloaded, padded, chunk};
  for (int d = 1; d < workload_.mtp.depth; ++d) {
    const int layer = static_cast<int>(m_.layers) + d - 1;
    common([&](std::vector<Segment>& out, int) { blocks_.add_mtp_projection(out, layer, draft.linear()); });
    common([&](std::vector<Segment>& out, int replica) {
      add_attention(out, layer, draft, context, replica, layers_access, layer_record(layer));
    });
    if (m_.moe) {
      blocks_.add_moe(gpus, layer, draft.linear(), rng, dedup, max_routed);
    } else {
      common([&](std::vector<Segment>& out, int replica) { blocks_.add_dense_mlp(out, layer, draft.linear(), replica); });
    }
    common([&](std::vector<Segment>& out, int) { blocks_.add_head(out, layer, draft.total() + chunk.pieces); });
  }
  if (eager_pass) apply_eager_launches(gpus, first_new);
}

void DecodeStepBuilder::apply_eager_launches(std::vector<GpuStepPlan>& gpus, const std::vector<std::size_t>& from) const {
  const Seconds launch = s_.engine.eager_launch_time;
  if (launch.value() <= 0) return;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    for (std::size_t k = from[g]; k < gpus[g].segments.size(); ++k) {
      Segment& seg = gpus[g].segments[k];
      if (seg.kind != SegmentKind::compute) continue;
      seg.duration = Seconds(0.0);
      for (Op& op : seg.ops) {
        op.time = std::max(op.time, launch);
        seg.duration += op.time;
      }
    }
  }
}

}  // namespace ess
