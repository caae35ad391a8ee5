// A store on disk of cache-simulation results, shared by the points of a sweep: the index-level
// cache simulation (warm-up and every step, sim/offload) depends only on its own inputs (the access
// model and its seed, the pools' configuration, the context of each step), not on the batch, the
// hardware or the layout, so sweep points that share them compute it once. `ess-sim sweep` gives
// its points DIR/.access-store (the hidden `run --access-store DIR` option); a plain run uses none.
//
// An entry is one file named by the SHA-256 of its key (the canonical JSON of every input), holding
// the key and, per step and layer, the five doubles of LayerAccess bit for bit, so a run fed from
// the store gives byte-identical results. Written atomically; a file that does not parse, or whose
// key differs, is ignored (and recomputed).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph/op.h"

namespace ess {

using AccessSteps = std::vector<std::vector<LayerAccess>>;  // [step][layer]

// The stored result for `key` if present and whole, with `steps` steps of `layers` layers.
[[nodiscard]] std::optional<AccessSteps> load_access_steps(const std::filesystem::path& dir, const std::string& key,
                                                           std::size_t steps, std::size_t layers);
// Stores `data` for `key` (creates `dir`). Throws OutputError.
void store_access_steps(const std::filesystem::path& dir, const std::string& key, const AccessSteps& data);

}  // namespace ess
