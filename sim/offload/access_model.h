// Which latent-cache entries the lightning indexer of DeepSeek-V3.2-Exp selects (its top-k) for each
// decode step, layer and request: the input of the pool simulation. Implementations:
// SyntheticAccess (synthetic_access.h), a seeded generator with temporal locality, and
// ReplayAccess (access_trace.h), which replays recorded selections from a file.
#pragma once

#include <cstdint>
#include <vector>

namespace ess {

class AccessModel {
 public:
  AccessModel() = default;
  AccessModel(const AccessModel&) = delete;
  AccessModel& operator=(const AccessModel&) = delete;
  virtual ~AccessModel() = default;

  // Entries selected by `request` in `layer` at `step` when the context holds `context` tokens
  // (positions 0..context-1): written to `out` (replacing its content) sorted ascending, unique,
  // exactly min(top_k, context) of them. Steps must be visited in increasing order per
  // (layer, request); warm-up steps are negative. Implementations throw std::invalid_argument for
  // calls that break this contract or name a layer they do not have.
  virtual void select(int step, int layer, int request, std::int64_t context,
                      std::vector<std::int64_t>& out) = 0;
};

}  // namespace ess
