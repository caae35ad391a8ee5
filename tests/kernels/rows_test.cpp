// Which rows a gather fetches and how they merge into runs (kernels/bench/rows.h).
#include "kernels/bench/rows.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

using ess::bench::merge_runs;
using ess::bench::RowRun;
using ess::bench::select_rows;

TEST_CASE("rows: adjacent rows merge into runs", "[kernels][rows]") {
  // {1,2,3} consecutive, 7 alone, {9,10} consecutive
  const std::vector<std::int64_t> rows = {1, 2, 3, 7, 9, 10};
  CHECK(merge_runs(rows) == std::vector<RowRun>{{1, 3}, {7, 1}, {9, 2}});
  CHECK(merge_runs(std::vector<std::int64_t>{}).empty());
  CHECK(merge_runs(std::vector<std::int64_t>{5}) == std::vector<RowRun>{{5, 1}});
  CHECK(merge_runs(std::vector<std::int64_t>{0, 1, 2, 3}) == std::vector<RowRun>{{0, 4}});
  CHECK(merge_runs(std::vector<std::int64_t>{0, 2, 4}) == std::vector<RowRun>{{0, 1}, {2, 1}, {4, 1}});
}

TEST_CASE("rows: unsorted or repeated rows are rejected", "[kernels][rows][errors]") {
  CHECK_THROWS_MATCHES(merge_runs(std::vector<std::int64_t>{1, 3, 2}), std::invalid_argument,
                       Catch::Message("merge_runs: rows must be strictly increasing (row 2 at "
                                      "position 2 follows 3)"));
  CHECK_THROWS_AS(merge_runs(std::vector<std::int64_t>{4, 4}), std::invalid_argument);
}

TEST_CASE("rows: a selection is sorted and distinct and within the pool", "[kernels][rows]") {
  for (const std::int64_t count : {0, 1, 7, 1000}) {
    const auto rows = select_rows(count, 5000, 99);
    INFO("count " << count);
    REQUIRE(static_cast<std::int64_t>(rows.size()) == count);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i] >= 0);
      CHECK(rows[i] < 5000);
      if (i > 0) CHECK(rows[i] > rows[i - 1]);
    }
  }
  // the whole pool is every row
  const auto all = select_rows(6, 6, 1);
  CHECK(all == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("rows: a selection depends only on its seed", "[kernels][rows]") {
  CHECK(select_rows(100, 100000, 5) == select_rows(100, 100000, 5));
  CHECK(select_rows(100, 100000, 5) != select_rows(100, 100000, 6));
}

TEST_CASE("rows: random rows from a large pool are rarely adjacent", "[kernels][rows]") {
  // 65536 rows of 2^20: each of the 2^20 - 1 neighbouring pairs is fully chosen with probability
  // (65536 / 2^20) x (65535 / (2^20 - 1)), so on average 65536 x 65535 / 2^20 = 4095.9 pairs
  // merge, leaving 61440 runs; the count of merged pairs is close to Poisson, sigma ~ 64, and 400
  // is over 6 sigma. A selection biased towards neighbours (or simply the first rows) fails.
  const std::int64_t pool = std::int64_t{1} << 20;
  const auto rows = select_rows(65536, pool, 2024);
  const auto runs = merge_runs(rows);
  CHECK(static_cast<double>(runs.size()) == Approx(61440.0).margin(400.0));
  // uniform over the pool: the mean index is (2^20 - 1) / 2 = 524287.5, with a standard error
  // of about 2^20 / sqrt(12) / sqrt(65536) = 1182; 6000 is 5 sigma.
  double sum = 0.0;
  for (const std::int64_t r : rows) sum += static_cast<double>(r);
  CHECK(sum / static_cast<double>(rows.size()) == Approx(524287.5).margin(6000.0));
}

TEST_CASE("rows: impossible selections are rejected", "[kernels][rows][errors]") {
  CHECK_THROWS_MATCHES(select_rows(11, 10, 1), std::invalid_argument,
                       Catch::Message("select_rows: need 0 <= count <= pool (got count 11, pool 10)"));
  CHECK_THROWS_AS(select_rows(-1, 10, 1), std::invalid_argument);
}
