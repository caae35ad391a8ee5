// Which latent entries each request reads in each layer and step, and which of them miss the GPU
// pool: the simulator's own pool code (sim/offload/gpu_pool) driven exactly as
// sim/offload/cache_sim.cpp drives it, over the recorded selections of an ESS-TOPK access trace,
// with every request of the batch simulated (no sampling). So the runner fetches the misses the
// simulator counts, by construction; a CacheSimulator run beside it checks that every step.
//
// Steps: the trace's negative steps -W..-1 are the pool warm-up windows of
// CacheSimulator::warm_up (W = cache.warmup_windows in the scenario). The last --warmup-steps of
// them are also executed on the GPU (not recorded); the others only fill the pools. Then steps
// 0..steps-1 are executed and recorded. Step s runs at context + s tokens, warm-up window -w at
// context - w, as the simulator's DecodeStepBuilder::context_at and warm_up have them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kernels/runner/options.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/cache_sim.h"
#include "sim/offload/gpu_pool.h"

namespace ess::runner {

// An access trace that does not fit the command line, or a pool result that differs from the
// simulator's. The message names the file and what is wrong.
class AccessPlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Checks that `trace` has --layers layers, --batch requests and --top-k, holds steps 0..steps-1 at
// contexts context + s, and holds warm-up steps exactly -W..-1 (W >= --warmup-steps) at contexts
// context - w. Steps after steps-1 are allowed and ignored. Returns W. Throws AccessPlanError.
int check_access_trace(const ReplayAccess& trace, const RunnerOptions& options);

struct RequestAccess {
  std::vector<std::int64_t> selected;  // ascending, min(top_k, context) positions
  std::vector<std::int64_t> missed;    // ascending, the selected positions fetched this step
  AccessResult result;
};

struct StepAccess {
  int step = 0;
  std::int64_t context = 0;
  std::int64_t capacity = 0;  // pool entries per request and layer at this step
  std::vector<std::vector<RequestAccess>> layers;  // [layer][request]
  // Missed entries of `layer` over all requests.
  [[nodiscard]] std::int64_t misses(int layer) const;
};

// Throws AccessPlanError unless `mine` gives, for every layer, the same capacity and the same mean
// misses, hits, runs and evictions per request as the simulator's CacheSimulator::step (`theirs`,
// which ran with every request sampled), computed with the same sums in the same order, so equal
// pool results compare equal to the bit.
void check_against_simulator(const StepAccess& mine, const CacheStepStats& theirs);

class AccessPlanner {
 public:
  // Reads the trace and checks it (AccessTraceError, AccessPlanError).
  AccessPlanner(const RunnerOptions& options, const std::filesystem::path& trace);

  [[nodiscard]] int warmup_windows() const { return windows_; }
  // The steps the GPU executes, in order: -warmup_steps..-1, then 0..steps-1.
  [[nodiscard]] const std::vector<int>& gpu_steps() const { return gpu_steps_; }

  // The accesses of the next GPU step, after advancing the pools through every warm-up window
  // before it. Decode steps (>= 0) are compared with CacheSimulator's per-layer means of misses,
  // hits, runs and evictions; a difference throws AccessPlanError. Throws std::logic_error when
  // called after the last step.
  StepAccess next();

 private:
  void access_all(int step, std::int64_t context, StepAccess* out);

  RunnerOptions options_;
  std::unique_ptr<ReplayAccess> trace_;
  int windows_ = 0;
  std::vector<int> gpu_steps_;
  std::size_t next_gpu_step_ = 0;
  int next_window_ = 0;  // the next warm-up window -w still to apply (w = windows_ .. 1); 0 = done
  std::unique_ptr<CacheSimulator> reference_;  // the simulator's own driver, for the cross-check
  bool reference_warmed_ = false;
  std::vector<GpuPool> pools_;  // [layer * batch + request]
  std::vector<std::int64_t> scratch_;
};

}  // namespace ess::runner
