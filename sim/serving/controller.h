// The adaptive batch-size controller: keeps the P99 step latency over a sliding window of recent
// steps under a target by moving the admission cap (requests per GPU), AIMD-style.
//
//  - Every step it sees the step time, the largest batch on a GPU and whether the cap held
//    requests back (a queue while some GPU sat at the cap).
//  - Once `window` steps have passed since its last move, it takes the window's P99 (nearest
//    rank). Above headroom x target: multiplicative decrease, to decrease x the batch observed
//    (not the cap: a cap far above the batch would take many moves to bite). While the observed
//    batch is still above the cap (admitted before the cut; requests are never preempted) it
//    waits, and judges the cap only on a whole window of steps run under it. Below the headroom,
//    when the cap held requests back in at least half of the window's steps: + increase.
//  - Acting at headroom x target (0.9) rather than at the target itself keeps the target held
//    while the cap probes upward: one more request per GPU moves a step by ~1/batch.
// Pure (no SimGrid); tests drive it with synthetic step times.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/config/serving_config.h"

namespace ess {

struct CapChange {
  double time = 0.0;     // seconds since the start of the period
  std::int64_t cap = 0;  // requests per GPU from then on
  double p99 = 0.0;      // the window's P99 step time that moved it (0 for the start)
};

class BatchController {
 public:
  // `initial_cap` and `max_cap` in requests per GPU (>= 1). Disabled: the cap stays at max_cap.
  BatchController(const ControllerConfig& config, std::int64_t initial_cap, std::int64_t max_cap);

  [[nodiscard]] std::int64_t cap() const { return cap_; }
  // After a step that ended at `time`, took `step_time`, had `batch` requests on its fullest GPU.
  void observe(double time, double step_time, std::int64_t batch, bool cap_binding);
  // P99 (nearest rank) of the last `window` step times seen (0 before any).
  [[nodiscard]] double window_p99() const;
  [[nodiscard]] const std::vector<CapChange>& changes() const { return changes_; }

 private:
  ControllerConfig config_;
  std::int64_t cap_;
  std::int64_t max_cap_;
  std::deque<double> window_;
  std::int64_t since_change_ = 0;
  std::int64_t binding_steps_ = 0;  // steps since the last move in which the cap held requests back
  std::vector<CapChange> changes_;
};

// Nearest-rank percentile (p in (0, 1]) of unsorted values; 0 when empty.
[[nodiscard]] double nearest_rank(std::vector<double> values, double p);

}  // namespace ess
