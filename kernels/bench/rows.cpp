#include "kernels/bench/rows.h"

#include <stdexcept>
#include <string>

#include "kernels/bench/hash_rng.h"

namespace ess::bench {

std::vector<std::int64_t> select_rows(std::int64_t count, std::int64_t pool, std::uint64_t seed) {
  if (count < 0 || pool < 0 || count > pool) {
    throw std::invalid_argument("select_rows: need 0 <= count <= pool (got count " +
                                std::to_string(count) + ", pool " + std::to_string(pool) + ")");
  }
  std::vector<std::int64_t> rows;
  rows.reserve(static_cast<std::size_t>(count));
  HashStream stream(seed);
  // Algorithm S: take row t with probability (still needed) / (still available).
  for (std::int64_t t = 0; t < pool && static_cast<std::int64_t>(rows.size()) < count; ++t) {
    const auto needed = static_cast<double>(count - static_cast<std::int64_t>(rows.size()));
    const auto available = static_cast<double>(pool - t);
    if (available * stream.next_unit() < needed) rows.push_back(t);
  }
  return rows;
}

std::vector<RowRun> merge_runs(std::span<const std::int64_t> sorted_rows) {
  std::vector<RowRun> runs;
  for (std::size_t i = 0; i < sorted_rows.size(); ++i) {
    const std::int64_t row = sorted_rows[i];
    if (i > 0 && row <= sorted_rows[i - 1]) {
      throw std::invalid_argument("merge_runs: rows must be strictly increasing (row " +
                                  std::to_string(row) + " at position " + std::to_string(i) +
                                  " follows " + std::to_string(sorted_rows[i - 1]) + ")");
    }
    if (!runs.empty() && runs.back().first + runs.back().count == row) {
      ++runs.back().count;
    } else {
      runs.push_back(RowRun{row, 1});
    }
  }
  return runs;
}

}  // namespace ess::bench
