#include "kernels/runner/step_lists.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

using ess::runner::build_step_lists;
using ess::runner::CopyRun;
using ess::runner::LatentLayout;
using ess::runner::RequestAccess;
using ess::runner::StepAccess;
using Rows = std::vector<std::int32_t>;

namespace {

RequestAccess request(std::vector<std::int64_t> selected, std::vector<std::int64_t> missed) {
  RequestAccess r;
  r.selected = std::move(selected);
  r.missed = std::move(missed);
  r.result.misses = static_cast<std::int64_t>(r.missed.size());
  return r;
}

Rows slice(const std::vector<std::int32_t>& data, std::size_t at, std::size_t count) {
  return Rows(data.begin() + static_cast<std::ptrdiff_t>(at), data.begin() + static_cast<std::ptrdiff_t>(at + count));
}

}  // namespace

TEST_CASE("latent rows are numbered layer, then request, then position") {
  const LatentLayout layout{2, 3, 10};
  CHECK(layout.rows() == 60);
  CHECK(layout.row(0, 0, 0) == 0);
  CHECK(layout.row(0, 1, 0) == 10);
  CHECK(layout.row(1, 2, 7) == 57);  // (1 x 3 + 2) x 10 + 7
  CHECK_THROWS_AS(layout.row(2, 0, 0), std::out_of_range);
  CHECK_THROWS_AS(layout.row(0, 3, 0), std::out_of_range);
  CHECK_THROWS_AS(layout.row(0, 0, 10), std::out_of_range);
  CHECK_THROWS_AS(layout.row(0, 0, -1), std::out_of_range);
  const LatentLayout huge{1, 1, std::int64_t{1} << 32};
  CHECK_THROWS_AS(huge.row(0, 0, std::int64_t{1} << 31), std::out_of_range);
}

TEST_CASE("step lists hold every selection, the hits and misses apart, the fetch list and its runs") {
  // 2 layers, 2 requests, 10 rows per request, top_k 4.
  const LatentLayout layout{2, 2, 10};
  StepAccess access;
  access.step = 0;
  access.context = 10;
  access.layers = {
      // Layer 0: rows p (request 0) and 10 + p (request 1).
      {request({1, 2, 3, 7}, {2, 3, 7}), request({0, 5}, {})},
      // Layer 1: rows 20 + p and 30 + p. Request 0's last row (29) and request 1's first (30) are
      // adjacent, but runs are per request, as the simulator counts them.
      {request({9}, {9}), request({0, 1}, {0, 1})},
  };
  const auto lists = build_step_lists(access, layout, 4);
  REQUIRE(lists.layers.size() == 2);
  const auto& l0 = lists.layers[0];
  // Layer 0 layout: selected 8 (2 x top_k), counts 2, hits 8, counts 2, misses 8, counts 2, fetch 3.
  CHECK(l0.selected == 0);
  CHECK(l0.selected_count == 8);
  CHECK(l0.hits == 10);
  CHECK(l0.hit_count == 18);
  CHECK(l0.misses == 20);
  CHECK(l0.miss_count == 28);
  CHECK(l0.fetch == 30);
  CHECK(slice(lists.data, l0.selected, 8) == Rows{1, 2, 3, 7, 10, 15, 0, 0});
  CHECK(slice(lists.data, l0.selected_count, 2) == Rows{4, 2});
  CHECK(slice(lists.data, l0.hits, 8) == Rows{1, 0, 0, 0, 10, 15, 0, 0});
  CHECK(slice(lists.data, l0.hit_count, 2) == Rows{1, 2});
  CHECK(slice(lists.data, l0.misses, 8) == Rows{2, 3, 7, 0, 0, 0, 0, 0});
  CHECK(slice(lists.data, l0.miss_count, 2) == Rows{3, 0});
  CHECK(slice(lists.data, l0.fetch, 3) == Rows{2, 3, 7});
  CHECK(l0.fetch_rows == 3);
  CHECK(l0.runs == std::vector<CopyRun>{{2, 2}, {7, 1}});
  CHECK(l0.max_selected == 4);
  CHECK(l0.max_hits == 2);
  CHECK(l0.max_misses == 3);

  const auto& l1 = lists.layers[1];
  CHECK(l1.selected == 33);
  CHECK(slice(lists.data, l1.selected, 8) == Rows{29, 0, 0, 0, 30, 31, 0, 0});
  CHECK(slice(lists.data, l1.hit_count, 2) == Rows{0, 0});
  CHECK(slice(lists.data, l1.misses, 8) == Rows{29, 0, 0, 0, 30, 31, 0, 0});
  CHECK(slice(lists.data, l1.miss_count, 2) == Rows{1, 2});
  CHECK(slice(lists.data, l1.fetch, 3) == Rows{29, 30, 31});
  CHECK(l1.runs == std::vector<CopyRun>{{29, 1}, {30, 2}});
  CHECK(l1.max_hits == 0);
  CHECK(lists.data.size() == 66);
}

TEST_CASE("misses outside the selection or too many selections are refused") {
  const LatentLayout layout{1, 1, 10};
  StepAccess bad;
  bad.layers = {{request({1, 2}, {3})}};
  CHECK_THROWS_AS(build_step_lists(bad, layout, 4), std::invalid_argument);
  StepAccess unsorted;
  unsorted.layers = {{request({1, 2, 3}, {3, 2})}};
  CHECK_THROWS_AS(build_step_lists(unsorted, layout, 4), std::invalid_argument);
  StepAccess wide;
  wide.layers = {{request({1, 2, 3}, {})}};
  CHECK_THROWS_AS(build_step_lists(wide, layout, 2), std::invalid_argument);
  StepAccess layers;
  layers.layers = {{request({1}, {})}, {request({1}, {})}};
  CHECK_THROWS_AS(build_step_lists(layers, layout, 2), std::invalid_argument);
}
