// The event bookkeeping of one step: which pair of CUDA events brackets which op on which stream,
// and, once the events have been resolved to times, the trace events of the step.
#pragma once

#include <string>
#include <vector>

#include "kernels/runner/options.h"
#include "kernels/runner/trace_file.h"

namespace ess::runner {

// One op of a step: `start_event` and `end_event` index the step's event pool.
struct OpRecord {
  std::string name;
  std::string category;
  int tid = kComputeTid;
  int layer = -1;
  int start_event = 0;
  int end_event = 0;
};

// The recorded ops of a step, in the order they were issued. Hands out event indices in order.
class StepTimeline {
 public:
  explicit StepTimeline(int step) : step_(step) {}

  // The next free event index (the caller records event pool[index] on its stream).
  int take_event() { return events_++; }
  void add(OpRecord op) { ops_.push_back(std::move(op)); }

  [[nodiscard]] int step() const { return step_; }
  [[nodiscard]] int events_used() const { return events_; }
  [[nodiscard]] const std::vector<OpRecord>& ops() const { return ops_; }

  // The trace events of the step, given each event's time in milliseconds since the base event
  // (event_ms[i] for event index i, as cudaEventElapsedTime gives it): first a "step" event from
  // the earliest start to the latest end of any op on any stream, then every op in issue order,
  // times in microseconds. Throws std::invalid_argument for an index outside event_ms, a
  // non-finite time, or an op that ends before it starts.
  [[nodiscard]] std::vector<TraceEvent> resolve(const std::vector<double>& event_ms) const;

 private:
  int step_;
  int events_ = 0;
  std::vector<OpRecord> ops_;
};

// The ops of one step in the order the runner issues them, named and categorised as the
// simulator's DecodeStepBuilder names dense offload layers (sim/graph/decode_step.cpp), with
// their stream and layer (event indices left 0). `fetches[l]`: layer l has misses to fetch; a
// layer without runs sparse_mla with no fetch and no wait, in either overlap mode.
[[nodiscard]] std::vector<OpRecord> expected_step_ops(OverlapMode overlap, const std::vector<bool>& fetches);

// Throws std::logic_error naming the first op whose name, category, stream or layer differs from
// `expected`, or a different number of ops. The runner checks every step it queues with it.
void check_step_ops(const StepTimeline& timeline, const std::vector<OpRecord>& expected);

}  // namespace ess::runner
