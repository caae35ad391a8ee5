// From pool results to what the GPU reads: per layer, the rows attention reads (all selected, or
// the hits and the misses apart for DA), the rows the miss fetch moves, and its contiguous runs.
//
// Latent rows are addressed by one 32-bit id over the whole cache, the same on both sides:
//   row = (layer x batch + request) x rows_per_request + position
// Host (pinned) and device caches have the same layout, so a missed position is fetched from host
// row `row` into device row `row`: a run of consecutive missed positions is one contiguous range on
// both sides, which is what one cudaMemcpyAsync per run needs. (The device cache is therefore as
// large as the host one; which device rows hold valid entries is the pool's bookkeeping. The runner
// measures time, not capacity.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/runner/access_plan.h"

namespace ess::runner {

struct LatentLayout {
  std::int64_t layers = 0;
  std::int64_t batch = 0;
  std::int64_t rows_per_request = 0;  // context + steps: every position a step can write
  [[nodiscard]] std::int64_t rows() const { return layers * batch * rows_per_request; }
  // Throws std::out_of_range for arguments outside the cache.
  [[nodiscard]] std::int32_t row(std::int64_t layer, std::int64_t request, std::int64_t position) const;
};

// One cudaMemcpyAsync of the copy path: `rows` consecutive rows starting at `first`.
struct CopyRun {
  std::int32_t first = 0;
  std::int32_t rows = 0;
  bool operator==(const CopyRun&) const = default;
};

// Offsets (in int32 elements) into StepLists::data for one layer. Per-request lists are padded to
// top_k entries: request r's list starts at offset + r x top_k.
struct LayerLists {
  std::size_t selected = 0;        // batch x top_k rows: every selected entry (serial)
  std::size_t selected_count = 0;  // batch counts
  std::size_t hits = 0;            // batch x top_k rows: selected and resident before the fetch (da)
  std::size_t hit_count = 0;
  std::size_t misses = 0;          // batch x top_k rows: selected and fetched this step (da)
  std::size_t miss_count = 0;
  std::size_t fetch = 0;           // fetch_rows rows, all requests' misses in request order (gather)
  std::int64_t fetch_rows = 0;
  std::int64_t max_selected = 0;   // the largest count over the requests (grid sizes)
  std::int64_t max_hits = 0;
  std::int64_t max_misses = 0;
  std::vector<CopyRun> runs;       // the misses as maximal runs of consecutive rows, request order
};

struct StepLists {
  std::vector<std::int32_t> data;  // uploaded to the GPU whole, once per step
  std::vector<LayerLists> layers;
};

// Throws std::invalid_argument if `access` does not fit `layout` and `top_k`, or if its misses
// are not a subset of its selections.
[[nodiscard]] StepLists build_step_lists(const StepAccess& access, const LatentLayout& layout, std::int64_t top_k);

}  // namespace ess::runner
