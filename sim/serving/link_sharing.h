// Transfers sharing links, as a fluid: every flow in flight moves at its max-min fair rate over the
// links of its path (progressive filling: the link whose capacity left per unfrozen flow is least
// fixes those flows' rate; repeat with what the others leave), rates recomputed whenever a flow
// starts or finishes. The flow model SimGrid's network uses without its TCP corrections, in a
// few lines and without an engine, for the serving loop's cache transfers (cache_transfer.h).
// Pure and deterministic: events in time order, ties in flow order.
#pragma once

#include <cstddef>
#include <vector>

namespace ess {

struct LinkFlow {
  double start = 0.0;                // seconds: when its bytes may start to move
  double bytes = 0.0;                // >= 0; 0 finishes at its start
  std::vector<std::size_t> links;    // indices into the capacities; at least one when bytes > 0
};

// When each flow's last byte has moved (in flow order). Capacities in bytes per second, > 0.
// Throws InternalError on a flow with bytes but no link, a link index out of range, or a
// capacity that is not positive.
[[nodiscard]] std::vector<double> share_links(const std::vector<double>& capacities, const std::vector<LinkFlow>& flows);

}  // namespace ess
