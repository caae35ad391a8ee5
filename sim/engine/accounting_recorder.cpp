// RunResult's times and bytes, added up in the order the engine reports them (the sums are the
// same, to the bit, as when the engine added them itself).
#include <algorithm>

#include "sim/engine/indexing.h"
#include "sim/engine/recorders.h"

namespace ess {

namespace {

std::size_t cat(OpCategory c) { return static_cast<std::size_t>(c); }
std::size_t set(ParamSet p) { return static_cast<std::size_t>(p); }
ParamSet path(const Transfer& t) { return t.gather ? ParamSet::pcie_gather : ParamSet::pcie_copy; }
ParamSet of(const Segment& collective) {
  return collective.kind == SegmentKind::alltoall ? ParamSet::alltoall : ParamSet::allreduce;
}

}  // namespace

GpuStepTimes& AccountingRecorder::times(int step, int gpu) { return r_.gpu_steps[idx(step)][idx(gpu)]; }

LayerTimes& AccountingRecorder::layer(int layer) {
  // Embedding and head (layer -1) go to the last slot.
  return layer < 0 ? r_.layers.back() : r_.layers[idx(layer)];
}

void AccountingRecorder::step_begins(int step, int gpu, double time) { times(step, gpu).start = time; }

void AccountingRecorder::compute(int step, int gpu, const Segment& seg, double /*start*/, double elapsed,
                                 SmSharers sharers) {
  auto& t = times(step, gpu);
  auto& l = layer(seg.layer);
  for (const Op& op : seg.ops) {
    t.busy[cat(op.category)] += op.time.value();
    t.by_params[set(op.params)] += op.time.value();
    l.busy[cat(op.category)] += op.time.value();
    l.flops += op.flops;
    l.bytes += op.bytes;
  }
  // Kernels run slower while other kernels hold part of the SMs: gathers (a fetch, a write-back)
  // or collectives (the prefill all-to-all). The slow-down is theirs; with both in flight it is
  // split evenly (no bundled layout has both: prefill runs no offload transfers).
  const double lost = std::max(0.0, elapsed - seg.duration.value());
  if (lost <= 0.0) return;
  const double to_collectives = sharers.collectives ? (sharers.transfers ? 0.5 * lost : lost) : 0.0;
  const double to_gathers = lost - to_collectives;
  const auto charge = [&](OpCategory c, ParamSet p, double seconds) {
    t.busy[cat(c)] += seconds;
    t.by_params[set(p)] += seconds;
    l.busy[cat(c)] += seconds;
  };
  charge(OpCategory::transfer, ParamSet::pcie_gather, to_gathers);
  t.lost_to_gather += to_gathers;
  l.lost_to_gather += to_gathers;
  charge(OpCategory::collective, ParamSet::alltoall, to_collectives);
  t.lost_to_collectives += to_collectives;
}

void AccountingRecorder::stage(int step, int gpu, const Segment& seg, const StageRun& run) {
  auto& t = times(step, gpu);
  auto& l = layer(seg.layer);
  const TransferRun& fetch = run.fetch;
  const double lost = std::max(0.0, run.compute_end - run.start - seg.duration.value());
  const double exposed = run.end - run.compute_end;
  t.busy[cat(OpCategory::transfer)] += lost + exposed;
  t.by_params[set(ParamSet::pcie_gather)] += lost;
  t.by_params[set(path(seg.transfer))] += exposed;
  t.transfer += fetch.end - fetch.start;
  t.exposed += exposed;
  t.lost_to_gather += lost;
  t.fetch_queue_wait += fetch.start - fetch.submitted;
  l.busy[cat(OpCategory::transfer)] += lost + exposed;
  l.transfer += fetch.end - fetch.start;
  l.exposed += exposed;
  l.lost_to_gather += lost;
  l.fetch_queue_wait += fetch.start - fetch.submitted;
  for (const Op& op : seg.ops) {
    t.busy[cat(op.category)] += op.time.value();
    t.by_params[set(op.params)] += op.time.value();
    l.busy[cat(op.category)] += op.time.value();
    l.flops += op.flops;
    l.bytes += op.bytes;
  }
}

void AccountingRecorder::prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch,
                                         double /*from*/, double waited) {
  auto& t = times(step, gpu);
  auto& l = layer(seg.layer);
  t.prefetch_transfer += prefetch.end - prefetch.start;
  t.prefetch_wait += waited;
  t.busy[cat(OpCategory::transfer)] += waited;
  t.by_params[set(prefetch.transfer != nullptr ? path(*prefetch.transfer) : ParamSet::pcie_gather)] += waited;
  ++t.prefetches;
  l.prefetch_transfer += prefetch.end - prefetch.start;
  l.prefetch_wait += waited;
  l.busy[cat(OpCategory::transfer)] += waited;
  ++l.prefetches;
  if (waited > 0) {
    ++t.prefetch_late;
    ++l.prefetch_late;
  }
}

void AccountingRecorder::collective(int step, int gpu, const Segment& seg, const CollectiveRun& c, bool on_stream) {
  auto& t = times(step, gpu);
  if (!on_stream) {
    // Beside the compute stream: what of it was exposed is counted where the stream waits (lane_waited).
    t.comm += c.end - c.arrive;
    last_off_stream_[static_cast<std::size_t>(gpu)] = of(seg);
    return;
  }
  t.wait += c.start - c.arrive;
  t.busy[cat(OpCategory::collective)] += c.end - c.start;
  t.comm += c.end - c.arrive;
  t.comm_exposed += c.end - c.arrive;
  t.by_params[set(of(seg))] += c.end - c.start;
  auto& l = layer(seg.layer);
  l.wait += c.start - c.arrive;
  l.busy[cat(OpCategory::collective)] += c.end - c.start;
}

void AccountingRecorder::lane_waited(int step, int gpu, int /*lane*/, const Segment& last, double /*from*/,
                                     double stalled) {
  auto& t = times(step, gpu);
  t.busy[cat(OpCategory::collective)] += stalled;
  t.comm_exposed += stalled;
  // Waiting for the lane's collectives in flight: the last one it started is priced by its set.
  t.by_params[set(last_off_stream_[static_cast<std::size_t>(gpu)])] += stalled;
  layer(last.layer).busy[cat(OpCategory::collective)] += stalled;
}

void AccountingRecorder::step_ends(int step, int gpu, const StepPlan& plan, double drain, double end) {
  auto& t = times(step, gpu);
  t.writeback_wait = end - drain;
  t.busy[cat(OpCategory::transfer)] += t.writeback_wait;
  t.by_params[set(ParamSet::pcie_gather)] += t.writeback_wait;  // write-backs run as gathers or copies alike
  t.end = end;
  if (gpu == 0 && !plan.offload.empty()) {
    // The cache simulation's per-request counts, once per step; the bytes are per GPU.
    for (std::size_t l = 0; l < plan.offload.size(); ++l) {
      const auto& o = plan.offload[l];
      auto& layer = r_.layers[l];
      layer.misses += o.access.misses;
      layer.misses_var += o.access.misses_stderr * o.access.misses_stderr;
      layer.hits += o.access.hits;
      layer.prefetched += o.access.prefetched;
      layer.prefetch_used += o.access.prefetch_used;
      if (layer.overlap_steps.size() <= o.overlap) layer.overlap_steps.resize(o.overlap + 1, 0);
      layer.overlap_steps[o.overlap] += 1;
      r_.step_h2d_bytes[idx(step)] += o.h2d_bytes * r_.gpus;
      r_.step_d2h_bytes[idx(step)] += o.d2h_bytes * r_.gpus;
    }
  }
  if (!plan.offload.empty()) {
    for (std::size_t l = 0; l < plan.offload.size(); ++l) {
      r_.layers[l].h2d_bytes += plan.offload[l].h2d_bytes;
      r_.layers[l].d2h_bytes += plan.offload[l].d2h_bytes;
      r_.layers[l].prefetch_bytes += plan.offload[l].prefetch_bytes;
    }
  }
  if (gpu == 0) r_.step_context[idx(step)] = plan.context;
}

}  // namespace ess
