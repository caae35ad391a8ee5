// The scattered rows of the gather measurements: which rows of the host pool a sample fetches,
// and how sorted rows merge into contiguous runs (one cudaMemcpyAsync per run for "per_run").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ess::bench {

// `count` distinct row indices in [0, pool), sorted ascending, each subset of that size equally
// likely (Knuth's selection sampling, TAOCP vol. 2, 3.4.2 Algorithm S), drawn from
// HashStream(seed): the same (count, pool, seed) gives the same rows on every machine. Throws
// std::invalid_argument unless 0 <= count <= pool.
[[nodiscard]] std::vector<std::int64_t> select_rows(std::int64_t count, std::int64_t pool,
                                                    std::uint64_t seed);

// A run of consecutive rows: first, first + 1, ..., first + count - 1.
struct RowRun {
  std::int64_t first = 0;
  std::int64_t count = 0;

  friend bool operator==(const RowRun&, const RowRun&) = default;
};

// Merges strictly increasing row indices into maximal runs of consecutive rows:
// {1,2,3,7,9,10} -> {1..3}, {7}, {9..10}. Throws std::invalid_argument if the indices are not
// strictly increasing (a duplicate would be copied twice, an unsorted list would split runs).
[[nodiscard]] std::vector<RowRun> merge_runs(std::span<const std::int64_t> sorted_rows);

}  // namespace ess::bench
