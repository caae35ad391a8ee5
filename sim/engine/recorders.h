// The recorders a Simulation runs with (recorder.h): the accounting that fills RunResult's
// per-step, per-GPU and per-layer times and bytes, the Chrome trace of the first steps, and one
// GPU's per-op times for `ess-sim validate`. No SimGrid.
#pragma once

#include <vector>

#include "sim/engine/recorder.h"
#include "sim/engine/simulation.h"
#include "sim/io/chrome_trace.h"

namespace ess {

// RunResult::gpu_steps, layers, step_context and the offload byte counts. `result` must hold
// gpu_steps [steps][gpus], the layers (model layers, MTP modules, then "head", which takes
// layer -1), step_context and step_h2d/d2h_bytes [steps].
class AccountingRecorder final : public RunRecorder {
 public:
  explicit AccountingRecorder(RunResult& result)
      : r_(result), last_off_stream_(static_cast<std::size_t>(result.gpus), ParamSet::alltoall) {}

  void step_begins(int step, int gpu, double time) override;
  void compute(int step, int gpu, const Segment& seg, double start, double elapsed, SmSharers sharers) override;
  void stage(int step, int gpu, const Segment& seg, const StageRun& run) override;
  void prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch, double from,
                       double waited) override;
  void collective(int step, int gpu, const Segment& seg, const CollectiveRun& run, bool on_stream) override;
  void lane_waited(int step, int gpu, int lane, const Segment& last, double from, double stalled) override;
  void step_ends(int step, int gpu, const StepPlan& plan, double drain, double end) override;

 private:
  GpuStepTimes& times(int step, int gpu);
  LayerTimes& layer(int layer);
  RunResult& r_;
  std::vector<ParamSet> last_off_stream_;  // per GPU: the set of its last collective beside the stream
};

// The Chrome trace (sim/io/chrome_trace.h) of steps [0, trace_steps): per GPU its compute stream
// (segments and their kernels, exposed waits) and collectives (one row per micro-batch), in
// offload mode each GPU's PCIe links, and each GPU's NVSwitch ports. Its rows are made when it is
// constructed, so a trace of no steps still names them.
class TraceRecorder final : public RunRecorder {
 public:
  TraceRecorder(ChromeTrace& trace, int gpus, bool offload, int micro_batches, int trace_steps);

  void compute(int step, int gpu, const Segment& seg, double start, double elapsed, SmSharers sharers) override;
  void stage(int step, int gpu, const Segment& seg, const StageRun& run) override;
  void prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch, double from,
                       double waited) override;
  void writeback_done(int step, int gpu, int layer, const TransferRun& writeback) override;
  void collective(int step, int gpu, const Segment& seg, const CollectiveRun& run, bool on_stream) override;
  void lane_waited(int step, int gpu, int lane, const Segment& last, double from, double stalled) override;

 private:
  [[nodiscard]] bool traced(int step) const { return step < trace_steps_; }
  ChromeTrace& trace_;
  int trace_steps_;
  std::vector<TraceTrack> compute_track_;
  std::vector<TraceTrack> collective_track_;      // micro-batch 0's (or the only) collectives
  std::vector<TraceTrack> collective_track_mb1_;  // micro-batch 1's
  std::vector<TraceTrack> port_out_track_;
  std::vector<TraceTrack> port_in_track_;
  std::vector<TraceTrack> pcie_h2d_track_;
  std::vector<TraceTrack> pcie_d2h_track_;
};

// One GPU's time per op name and its kernels per category, each step (StepOpTimes): what the
// GPU runner records (kernels/runner), for `ess-sim validate`. `out` must hold a StepOpTimes per step.
class OpTimesRecorder final : public RunRecorder {
 public:
  OpTimesRecorder(std::vector<StepOpTimes>& out, int gpu) : out_(out), gpu_(gpu) {}

  void compute(int step, int gpu, const Segment& seg, double start, double elapsed, SmSharers sharers) override;
  void stage(int step, int gpu, const Segment& seg, const StageRun& run) override;
  void prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch, double from,
                       double waited) override;
  void writeback_done(int step, int gpu, int layer, const TransferRun& writeback) override;

 private:
  // The kernels of `seg`, each taking `stretch` times its own time.
  void kernels(StepOpTimes& s, const Segment& seg, double stretch);
  std::vector<StepOpTimes>& out_;
  int gpu_;
};

}  // namespace ess
