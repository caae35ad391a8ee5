// One GPU's time per op, named as the GPU runner names its trace events (kernels/runner): kernels
// by their op name, fetches by their segment's label ("fetch_overlap"), prefetches and write-backs
// as such, each summed over the step's layers. Waits (exposed time) are not ops.
#include <algorithm>
#include <string>

#include "sim/engine/recorders.h"

namespace ess {

void OpTimesRecorder::kernels(StepOpTimes& s, const Segment& seg, double stretch) {
  s.layers = std::max(s.layers, seg.layer + 1);
  for (const Op& op : seg.ops) {
    s.seconds[std::string(op.name)] += op.time.value() * stretch;
    ++s.kernels[static_cast<std::size_t>(op.category)];
  }
}

void OpTimesRecorder::compute(int step, int gpu, const Segment& seg, double /*start*/, double /*elapsed*/,
                              SmSharers /*sharers*/) {
  // Each kernel takes its own time: what kernels sharing the SMs slow down is counted as theirs
  // (transfer or collective time), not the op's.
  if (gpu == gpu_) kernels(out_[static_cast<std::size_t>(step)], seg, 1.0);
}

void OpTimesRecorder::stage(int step, int gpu, const Segment& seg, const StageRun& run) {
  if (gpu != gpu_) return;
  auto& s = out_[static_cast<std::size_t>(step)];
  s.seconds[std::string(seg.label)] += run.fetch.end - run.fetch.start;
  // The kernels beside the fetch share its slow-down (the trace draws them stretched the same way).
  if (run.compute_end > run.start) {
    kernels(s, seg, seg.duration.value() > 0 ? (run.compute_end - run.start) / seg.duration.value() : 1.0);
  }
}

void OpTimesRecorder::prefetch_waited(int step, int gpu, const Segment& /*seg*/, const TransferRun& prefetch,
                                      double /*from*/, double /*waited*/) {
  if (gpu == gpu_) out_[static_cast<std::size_t>(step)].seconds[std::string(opname::prefetch)] += prefetch.end - prefetch.start;
}

void OpTimesRecorder::writeback_done(int step, int gpu, int /*layer*/, const TransferRun& writeback) {
  if (gpu == gpu_) out_[static_cast<std::size_t>(step)].seconds[std::string(opname::writeback)] += writeback.end - writeback.start;
}

}  // namespace ess
