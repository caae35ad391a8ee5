// ReplayAccess::check_serves: whether a recorded trace holds every call a run will make (its
// layers, top_k, sampled requests, and each warm-up window and step at the context the run will
// have then), so that a trace recorded for another run fails before the engine starts.
#include <algorithm>
#include <optional>
#include <string>

#include "sim/offload/access_trace.h"

namespace ess {

void ReplayAccess::check_serves(const AccessDemand& demand) const {
  const auto fail = [&](const std::string& message) { throw AccessTraceError(path_, std::nullopt, message); };
  if (layers_ != demand.layers) {
    fail("the trace has " + std::to_string(layers_) + " layers; this scenario's model has " +
         std::to_string(demand.layers) + " (with its MTP modules in use)");
  }
  if (top_k_ != demand.top_k) {
    fail("the trace was recorded with top_k " + std::to_string(top_k_) + "; this scenario's model selects " +
         std::to_string(demand.top_k) + " (model.indexer.top_k)");
  }
  if (requests_ < demand.sampled_requests) {
    fail("the trace holds " + std::to_string(requests_) + " requests; this scenario samples " +
         std::to_string(demand.sampled_requests) + " (cache.sampled_requests)");
  }
  const auto need = [&](const AccessCall& call, const std::string& why) {
    const auto it = std::lower_bound(steps_.begin(), steps_.end(), call.step,
                                     [](const TraceStep& t, int v) { return t.step < v; });
    const std::string held = steps_.empty() ? "no steps"
                                            : "steps " + std::to_string(steps_.front().step) + " to " +
                                                  std::to_string(steps_.back().step);
    if (it == steps_.end() || it->step != call.step) {
      fail("step " + std::to_string(call.step) + " is not recorded (the trace holds " + held + "); this run needs " + why);
    }
    if (it->context != call.context) {
      fail("step " + std::to_string(call.step) + " was recorded at context " + std::to_string(it->context) +
           "; this run has context " + std::to_string(call.context) + " then (" + demand.context_setting + ")");
    }
  };
  for (const auto& call : demand.warmup) need(call, demand.warmup_setting);
  for (const auto& call : demand.steps) need(call, demand.steps_setting);
}

}  // namespace ess
