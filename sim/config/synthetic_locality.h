// cache.access's locality parameters of the synthetic access model (sim/offload/synthetic_access.h):
// how much of a layer's top-k selection one decode step keeps from the last, how far back new picks
// reach, and how the prefill windows that warm the pool differ. Each has a documented default (the
// values tuned to the ESS paper's per-layer misses) and the data behind it in sim/offload/README.md.
#pragma once

#include "sim/config/reader.h"
#include "sim/offload/synthetic_access.h"

namespace ess {

// Reads the locality fields of `a` (an access object whose model is "synthetic") into the synthetic
// model's parameters; `layers` is the number of layers with an indexer (main layers plus the MTP
// modules in use), the length a per-layer `retention` list must have. layers, top_k and seed are
// the run's, set by the caller.
[[nodiscard]] SyntheticAccessParams read_synthetic_locality(ObjectReader& a, int layers);

// The locality keys, refused for an access model that does not generate selections.
inline constexpr const char* kSyntheticLocalityKeys[] = {"recent_window", "distance_exponent", "prefill_retention",
                                                          "best_retention", "best_depth", "edge_retention",
                                                          "retention"};

}  // namespace ess
