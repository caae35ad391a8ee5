// Everything about a run that can be known without SimGrid, checked before the engine starts:
// the batch and memory plan, the cost of every operator of the first and last step (a hardware
// without the model's dtype peak fails here, not inside an actor), a replay trace's coverage of
// the steps and contexts the run will ask for, and the memory and wall time the run will need.
// `ess-sim check` runs it too, so what `run` would refuse, `check` refuses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/units.h"
#include "sim/base/error.h"
#include "sim/config/run_request.h"
#include "sim/memory/memory_plan.h"
#include "sim/offload/access_model.h"

namespace ess {

// Refusal thresholds for the estimates below (the defaults are documented in sim/README.md; the
// CLI lifts them with --allow-large). Far above the bundled scenarios (<0.3 GB, <3.5 s each).
struct ResourceLimits {
  double memory_bytes = 8.0 * 1073741824.0;  // 8 GiB: half of a common 16 GB workstation
  double wall_seconds = 120.0;               // 2 minutes: the bundled scenarios take 0.1-3.5 s
  bool enforce = true;
};

// The name of the estimate's cache-simulation part (a serving table's points share one per context).
inline constexpr const char* kCacheSimulationPart = "cache simulation";

// What a run is expected to need, by component, with the setting that drives each.
struct ResourceEstimate {
  struct Part {
    std::string what;  // "step plans", "cache simulation", ...
    std::string knob;  // what to turn to shrink it: "hardware.nodes", "--trace-steps", ...
    double value = 0.0;
  };
  std::vector<Part> memory;  // bytes
  std::vector<Part> wall;    // seconds on the machine the constants were measured on
  [[nodiscard]] double memory_bytes() const;
  [[nodiscard]] double wall_seconds() const;
};

// A run that exceeds a limit: bad input (exit 2), with the estimate and the knob to turn.
class ResourceError : public InputError {
 public:
  using InputError::InputError;
};

struct Preflight {
  std::int64_t batch_per_gpu = 0;
  MemoryBudget memory;
  std::int64_t steps = 0;
  ResourceEstimate estimate;
  // Offload: the access model (cache.access.model), made from the registry and checked against the
  // run's demand (a trace's coverage); nullptr otherwise.
  std::unique_ptr<AccessModel> access;
};

// `steps`: the steps the run simulates (0: the run's workload.decode_steps); `trace_steps`: the
// steps its trace records. Throws ConfigError, CapacityError, AccessTraceError, UnsupportedError (a
// cost model cannot price an operator) or ResourceError, all bad input.
[[nodiscard]] Preflight preflight(const DecodeRun& run, std::int64_t steps, int trace_steps, const ResourceLimits& limits);
// A prefill run has no decode batch or memory plan: only its first step is priced and its estimate
// checked (batch_per_gpu 0, memory empty). `steps` 0: the run's prefill.steps.
[[nodiscard]] Preflight preflight(const PrefillRun& run, std::int64_t steps, const ResourceLimits& limits);
// Either, as the request is.
[[nodiscard]] Preflight preflight(const RunRequest& run, std::int64_t steps, int trace_steps, const ResourceLimits& limits);

// A limit passed: ResourceError with the estimate's largest parts and the knob of each (nothing
// when limits.enforce is false).
void enforce_limits(const ResourceEstimate& estimate, const ResourceLimits& limits);

// "about 1.2 GB of memory and 3.4 s of wall time" and the parts, one an indented line: what
// `check` and `bench` print.
[[nodiscard]] std::string describe_estimate(const ResourceEstimate& estimate);

// The estimate of a prefill run of `steps` steps.
[[nodiscard]] ResourceEstimate estimate_prefill_resources(const PrefillRun& run, std::int64_t steps);

// The estimate alone (no limits, no plans built); exposed for tests, `bench` and serving's preflight.
[[nodiscard]] ResourceEstimate estimate_resources(const DecodeRun& run, std::int64_t batch_per_gpu, std::int64_t steps,
                                                  int trace_steps, double access_model_bytes);

}  // namespace ess
