// What the engine reports while it runs, and the interface of those who listen: the engine
// (engine_actors.cpp) calls a RunRecorder at fixed points of each GPU's step with simulated times
// (seconds since the start of the run); recorders turn them into results. Implementations:
// recorders.h (the RunResult accounting, the Chrome trace, one GPU's per-op times). No SimGrid.
//
// Calls come in simulated-time order per GPU; GPUs interleave (SimGrid runs one actor at a time,
// so recorders need no locking). Every call carries the step and the GPU it belongs to.
#pragma once

#include <vector>

#include "sim/graph/op.h"

namespace ess {

// One host<->device transfer as a transfer engine ran it.
struct TransferRun {
  const Transfer* transfer = nullptr;
  double submitted = 0.0;  // handed to the engine
  double start = 0.0;      // the engine began moving it (it may have queued behind others)
  double end = 0.0;
};

// A fetch stage: the segment's kernels and its fetch, started together.
struct StageRun {
  double start = 0.0;        // both were started
  double compute_end = 0.0;  // the kernels ended (later than start + duration while gathers took SMs)
  double end = 0.0;          // both had ended: end - compute_end is the fetch's exposed time
  TransferRun fetch;
};

// One collective of one GPU: arrival, start (every member arrived), end, and for an all-to-all
// what its port flows moved and when they ended.
struct CollectiveRun {
  double arrive = 0.0;
  double start = 0.0;
  double end = 0.0;
  double bytes_out = 0.0;
  double out_done = 0.0;
  double in_done = 0.0;
};

// What held part of a GPU's SMs while a compute segment ran (in flight at its start): gather
// kernels of its transfers (offload fetches, write-backs), or collectives whose kernels hold SMs
// (the prefill all-to-all, DeepEP's normal kernels). Neither: the segment took its own duration.
struct SmSharers {
  bool transfers = false;
  bool collectives = false;
};

// Overrides what it records; the rest are no-ops.
class RunRecorder {
 public:
  RunRecorder() = default;
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;
  virtual ~RunRecorder() = default;

  virtual void step_begins(int /*step*/, int /*gpu*/, double /*time*/) {}
  // A compute segment on the compute stream: from `start` for `elapsed` seconds (more than
  // seg.duration when other kernels held part of the SMs meanwhile: `sharers` says whose).
  virtual void compute(int /*step*/, int /*gpu*/, const Segment& /*seg*/, double /*start*/, double /*elapsed*/,
                       SmSharers /*sharers*/) {}
  virtual void stage(int /*step*/, int /*gpu*/, const Segment& /*seg*/, const StageRun& /*run*/) {}
  // The compute stream waited from `from` for `waited` seconds (0: it had arrived) for the prefetch
  // of seg.layer, which the transfer engine ran as `prefetch`.
  virtual void prefetch_waited(int /*step*/, int /*gpu*/, const Segment& /*seg*/, const TransferRun& /*prefetch*/,
                               double /*from*/, double /*waited*/) {}
  // A write-back of `layer` reached host memory (reported as the step's end waits for each).
  virtual void writeback_done(int /*step*/, int /*gpu*/, int /*layer*/, const TransferRun& /*writeback*/) {}
  // `on_stream`: the compute stream ran it and waited for all of it (one micro-batch); otherwise
  // its micro-batch's communication engine ran it beside the compute stream.
  virtual void collective(int /*step*/, int /*gpu*/, const Segment& /*seg*/, const CollectiveRun& /*run*/,
                          bool /*on_stream*/) {}
  // Two micro-batches: the compute stream stalled from `from` for `stalled` > 0 seconds waiting
  // for micro-batch `lane`'s collectives, the last of them `last`.
  virtual void lane_waited(int /*step*/, int /*gpu*/, int /*lane*/, const Segment& /*last*/, double /*from*/,
                           double /*stalled*/) {}
  // The GPU finished `plan`'s step at `end`; from `drain` it waited for its write-backs.
  virtual void step_ends(int /*step*/, int /*gpu*/, const StepPlan& /*plan*/, double /*drain*/, double /*end*/) {}
};

// Forwards every call to each of its recorders, in the order they were added.
class RecorderSet final : public RunRecorder {
 public:
  void add(RunRecorder& r) { recorders_.push_back(&r); }

  void step_begins(int step, int gpu, double time) override {
    for (auto* r : recorders_) r->step_begins(step, gpu, time);
  }
  void compute(int step, int gpu, const Segment& seg, double start, double elapsed, SmSharers sharers) override {
    for (auto* r : recorders_) r->compute(step, gpu, seg, start, elapsed, sharers);
  }
  void stage(int step, int gpu, const Segment& seg, const StageRun& run) override {
    for (auto* r : recorders_) r->stage(step, gpu, seg, run);
  }
  void prefetch_waited(int step, int gpu, const Segment& seg, const TransferRun& prefetch, double from,
                       double waited) override {
    for (auto* r : recorders_) r->prefetch_waited(step, gpu, seg, prefetch, from, waited);
  }
  void writeback_done(int step, int gpu, int layer, const TransferRun& writeback) override {
    for (auto* r : recorders_) r->writeback_done(step, gpu, layer, writeback);
  }
  void collective(int step, int gpu, const Segment& seg, const CollectiveRun& run, bool on_stream) override {
    for (auto* r : recorders_) r->collective(step, gpu, seg, run, on_stream);
  }
  void lane_waited(int step, int gpu, int lane, const Segment& last, double from, double stalled) override {
    for (auto* r : recorders_) r->lane_waited(step, gpu, lane, last, from, stalled);
  }
  void step_ends(int step, int gpu, const StepPlan& plan, double drain, double end) override {
    for (auto* r : recorders_) r->step_ends(step, gpu, plan, drain, end);
  }

 private:
  std::vector<RunRecorder*> recorders_;
};

}  // namespace ess
