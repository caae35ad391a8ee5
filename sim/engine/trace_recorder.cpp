// The Chrome trace of a run's first steps. Slices are added as the engine reports them, so the
// trace's event order is the order things ended in simulated time, GPU by GPU as SimGrid ran them.
#include <algorithm>
#include <string>

#include "sim/base/op_names.h"
#include "sim/engine/indexing.h"
#include "sim/engine/recorders.h"

namespace ess {

namespace {

// "L12 attention": the name of a layer's segment, collective or transfer.
std::string layer_name(int layer, std::string_view label) { return "L" + std::to_string(layer) + " " + std::string(label); }

}  // namespace

TraceRecorder::TraceRecorder(ChromeTrace& trace, int gpus, bool offload, int micro_batches, int trace_steps)
    : trace_(trace), trace_steps_(trace_steps) {
  // Rows in this order: per GPU its compute stream and collectives, then the PCIe links, then the
  // NVSwitch ports (the viewer shows them in order of creation).
  for (int g = 0; g < gpus; ++g) {
    const std::string gpu = "GPU " + std::to_string(g);
    compute_track_.push_back(trace_.track(gpu, "compute stream"));
    collective_track_.push_back(trace_.track(gpu, micro_batches == 2 ? "collectives (micro-batch 0)" : "collectives"));
    if (micro_batches == 2) collective_track_mb1_.push_back(trace_.track(gpu, "collectives (micro-batch 1)"));
  }
  if (offload) {
    for (int g = 0; g < gpus; ++g) {
      pcie_h2d_track_.push_back(trace_.track("PCIe links", "GPU " + std::to_string(g) + " h2d"));
      pcie_d2h_track_.push_back(trace_.track("PCIe links", "GPU " + std::to_string(g) + " d2h"));
    }
  }
  for (int g = 0; g < gpus; ++g) {
    port_out_track_.push_back(trace_.track("NVSwitch ports", "GPU " + std::to_string(g) + " out"));
    port_in_track_.push_back(trace_.track("NVSwitch ports", "GPU " + std::to_string(g) + " in"));
  }
}

void TraceRecorder::compute(int step, int gpu, const Segment& seg, double start, double elapsed, SmSharers /*sharers*/) {
  if (!traced(step)) return;
  const std::string name = seg.layer < 0 ? std::string(seg.label) : layer_name(seg.layer, seg.label);
  const TraceTrack track = compute_track_[idx(gpu)];
  trace_.slice(track, name, "segment", start, elapsed, {{"layer", seg.layer}, {"ops", seg.ops.size()}});
  double t = start;
  for (const Op& op : seg.ops) {
    trace_.slice(track, std::string(op.name), std::string(to_string(op.category)), t, op.time.value(),
                 {{"flops", op.flops.value()}, {"bytes", op.bytes.value()}});
    t += op.time.value();
  }
}

void TraceRecorder::stage(int step, int gpu, const Segment& seg, const StageRun& run) {
  if (!traced(step)) return;
  const TransferRun& fetch = run.fetch;
  const double lost = std::max(0.0, run.compute_end - run.start - seg.duration.value());
  const double exposed = run.end - run.compute_end;
  const std::string name = layer_name(seg.layer, seg.label);
  const TraceTrack track = compute_track_[idx(gpu)];
  trace_.slice(pcie_h2d_track_[idx(gpu)], name, "transfer", fetch.start, fetch.end - fetch.start,
               {{"bytes", seg.transfer.bytes}, {"path", seg.transfer.gather ? "gather" : "copy"}});
  if (run.compute_end > run.start) {
    trace_.slice(track, name, "segment", run.start, run.compute_end - run.start,
                 {{"layer", seg.layer}, {"ops", seg.ops.size()}, {"lost_to_gather_s", lost}});
    double t = run.start;
    const double stretch = seg.duration.value() > 0 ? (run.compute_end - run.start) / seg.duration.value() : 1.0;
    for (const Op& op : seg.ops) {
      trace_.slice(track, std::string(op.name), std::string(to_string(op.category)), t, op.time.value() * stretch);
      t += op.time.value() * stretch;
    }
  }
  if (exposed > 0) trace_.slice(track, "wait fetch", "exposed", run.compute_end, exposed);
}

void TraceRecorder::prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch, double from,
                                    double waited) {
  if (!traced(step)) return;
  trace_.slice(pcie_h2d_track_[idx(gpu)], layer_name(seg.layer, opname::prefetch), "prefetch", prefetch.start,
               prefetch.end - prefetch.start,
               {{"bytes", prefetch.transfer->bytes}, {"queued_s", prefetch.start - prefetch.submitted}});
  if (waited > 0) trace_.slice(compute_track_[idx(gpu)], std::string(segname::wait_prefetch), "exposed", from, waited);
}

void TraceRecorder::writeback_done(int step, int gpu, int layer, const TransferRun& writeback) {
  if (!traced(step)) return;
  trace_.slice(pcie_d2h_track_[idx(gpu)], layer_name(layer, opname::writeback), "transfer", writeback.start,
               writeback.end - writeback.start, {{"bytes", writeback.transfer->bytes}});
}

void TraceRecorder::collective(int step, int gpu, const Segment& seg, const CollectiveRun& c, bool /*on_stream*/) {
  if (!traced(step)) return;
  const TraceTrack track = seg.lane == 0 ? collective_track_[idx(gpu)] : collective_track_mb1_[idx(gpu)];
  const std::string label(seg.label);
  const std::string name = layer_name(seg.layer, label) + (seg.lane > 0 ? " (mb1)" : "");
  if (c.start > c.arrive) trace_.slice(track, "wait " + label, "idle", c.arrive, c.start - c.arrive);
  trace_.slice(track, name, "collectives", c.start, c.end - c.start, {{"bytes_sent", c.bytes_out}});
  if (seg.kind == SegmentKind::alltoall) {
    if (c.bytes_out > 0) {
      trace_.slice(port_out_track_[idx(gpu)], name, "link", c.start, c.out_done - c.start, {{"bytes", c.bytes_out}});
    }
    if (c.in_done > c.start) trace_.slice(port_in_track_[idx(gpu)], name, "link", c.start, c.in_done - c.start);
  }
}

void TraceRecorder::lane_waited(int step, int gpu, int lane, const Segment& last, double from, double stalled) {
  if (!traced(step)) return;
  trace_.slice(compute_track_[idx(gpu)], "wait " + std::string(last.label) + (lane > 0 ? " (mb1)" : ""), "exposed",
               from, stalled, {{"layer", last.layer}});
}

}  // namespace ess
