// Statistics of repeated timings, the repetition count and the L2-defeating buffer rotation
// (kernels/bench/stats.h). Every expectation is worked out by hand in the comment beside it.
#include "kernels/bench/stats.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

using ess::bench::compute_stats;
using ess::bench::RepetitionPolicy;
using ess::bench::rotation_plan;
using ess::bench::Stats;

TEST_CASE("stats: an even count takes the mean of the middle two as median", "[kernels][stats]") {
  const std::vector<double> samples = {4.0, 1.0, 3.0, 2.0};
  const Stats s = compute_stats(samples);
  CHECK(s.repetitions == 4);
  CHECK(s.min_s == 1.0);
  CHECK(s.max_s == 4.0);
  // sorted 1 2 3 4; median at h = 3 x 0.5 = 1.5: 2 + 0.5 x (3 - 2) = 2.5
  CHECK(s.median_s == Approx(2.5).epsilon(1e-15));
  // p10 at h = 0.3: 1 + 0.3 x 1 = 1.3; p90 at h = 2.7: 3 + 0.7 x 1 = 3.7
  CHECK(s.p10_s == Approx(1.3).epsilon(1e-15));
  CHECK(s.p90_s == Approx(3.7).epsilon(1e-15));
  CHECK(s.mean_s == 2.5);
  // deviations -1.5 -0.5 0.5 1.5: squares 2.25 + 0.25 + 0.25 + 2.25 = 5; / (n-1 = 3); sqrt(5/3)
  CHECK(s.std_s == Approx(1.2909944487358056).epsilon(1e-15));
}

TEST_CASE("stats: an odd count takes the middle sample as median", "[kernels][stats]") {
  const std::vector<double> samples = {5.0, 1.0, 3.0};
  const Stats s = compute_stats(samples);
  CHECK(s.repetitions == 3);
  // sorted 1 3 5; median at h = 1: exactly 3
  CHECK(s.median_s == 3.0);
  // p10 at h = 0.2: 1 + 0.2 x (3 - 1) = 1.4; p90 at h = 1.8: 3 + 0.8 x (5 - 3) = 4.6
  CHECK(s.p10_s == Approx(1.4).epsilon(1e-15));
  CHECK(s.p90_s == Approx(4.6).epsilon(1e-15));
  CHECK(s.mean_s == 3.0);
  // squares 4 + 0 + 4 = 8; / 2 = 4; sqrt = 2 (the population formula would give sqrt(8/3))
  CHECK(s.std_s == 2.0);
}

TEST_CASE("stats: one sample is every statistic and has no spread", "[kernels][stats]") {
  const std::vector<double> samples = {7e-6};
  const Stats s = compute_stats(samples);
  CHECK(s.repetitions == 1);
  CHECK(s.median_s == 7e-6);
  CHECK(s.p10_s == 7e-6);
  CHECK(s.p90_s == 7e-6);
  CHECK(s.min_s == 7e-6);
  CHECK(s.max_s == 7e-6);
  CHECK(s.std_s == 0.0);
}

TEST_CASE("stats: no samples or a negative or non-finite sample are rejected", "[kernels][stats][errors]") {
  CHECK_THROWS_AS(compute_stats(std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(compute_stats(std::vector<double>{1.0, -1e-9}), std::invalid_argument);
  CHECK_THROWS_AS(compute_stats(std::vector<double>{std::nan("")}), std::invalid_argument);
  CHECK_THROWS_AS(compute_stats(std::vector<double>{std::numeric_limits<double>::infinity()}),
                  std::invalid_argument);
  const std::vector<double> sorted = {1.0, 2.0};
  CHECK_THROWS_AS(ess::bench::quantile_sorted(sorted, 1.5), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::quantile_sorted(sorted, -0.1), std::invalid_argument);
  CHECK(ess::bench::quantile_sorted(sorted, 1.0) == 2.0);
  CHECK(ess::bench::quantile_sorted(sorted, 0.0) == 1.0);
}

TEST_CASE("repetitions: enough to fill the target time within the limits", "[kernels][stats]") {
  const RepetitionPolicy p;  // 25 ms, 10..1000
  // 25 ms / 1.25 ms = 20 (exact in binary)
  CHECK(ess::bench::choose_repetitions(0.00125, p) == 20);
  // 25 ms / 0.3 ms = 83.3 -> 84
  CHECK(ess::bench::choose_repetitions(0.0003, p) == 84);
  // 25 ms / 10 ms = 2.5 -> 3, raised to the minimum 10
  CHECK(ess::bench::choose_repetitions(0.01, p) == 10);
  // 25 ms / 1 us = 25000, capped at 1000
  CHECK(ess::bench::choose_repetitions(1e-6, p) == 1000);
  // an unresolvable (zero) estimate takes the most allowed
  CHECK(ess::bench::choose_repetitions(0.0, p) == 1000);
  CHECK(ess::bench::choose_repetitions(std::numeric_limits<double>::infinity(), p) == 1000);
  const RepetitionPolicy quick{0.005, 10, 200};
  // 5 ms / 0.25 ms = 20
  CHECK(ess::bench::choose_repetitions(0.00025, quick) == 20);
}

TEST_CASE("repetitions: a negative estimate or an inconsistent policy is rejected", "[kernels][stats][errors]") {
  CHECK_THROWS_AS(ess::bench::choose_repetitions(-1e-6, RepetitionPolicy{}), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::choose_repetitions(1e-3, RepetitionPolicy{0.025, 0, 10}), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::choose_repetitions(1e-3, RepetitionPolicy{0.025, 20, 10}), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::choose_repetitions(1e-3, RepetitionPolicy{0.0, 10, 100}), std::invalid_argument);
}

TEST_CASE("rotation: the fewest copies whose total exceeds twice the L2", "[kernels][stats]") {
  const std::int64_t l2 = 50LL << 20;  // 52,428,800 B; 2 x L2 = 104,857,600 B
  // 10,000,000 B rounds up to 39,063 x 256 = 10,000,128 B; floor(104,857,600 / 10,000,128) = 10,
  // so 11 copies = 110,001,408 B > 2 x L2 (10 copies, 100,001,280 B, would not be).
  const auto p = rotation_plan(10'000'000, l2);
  CHECK(p.slot_bytes == 10'000'128);
  CHECK(p.copies == 11);
  CHECK(p.total_bytes() == 110'001'408);
  // one footprint larger than 2 x L2 needs no second copy
  CHECK(rotation_plan(200'000'000, l2).copies == 1);
  // exactly 2 x L2 is not more than 2 x L2: a second copy
  CHECK(rotation_plan(104'857'600, l2).copies == 2);
  // 1 KiB: 104,857,600 / 1024 = 102,400 copies fit in 2 x L2 exactly, so 102,401
  CHECK(rotation_plan(1024, l2).copies == 102'401);
  // no L2 reported: nothing to defeat
  CHECK(rotation_plan(1024, 0).copies == 1);
}

TEST_CASE("rotation: minimal and sufficient for every footprint", "[kernels][stats]") {
  const std::int64_t l2 = 60LL << 20;
  for (std::int64_t footprint = 1; footprint < (300LL << 20); footprint = footprint * 3 + 7) {
    const auto p = rotation_plan(footprint, l2);
    INFO("footprint " << footprint);
    CHECK(p.slot_bytes % 256 == 0);
    CHECK(p.slot_bytes >= footprint);
    CHECK(p.slot_bytes - footprint < 256);
    CHECK(p.copies * p.slot_bytes > 2 * l2);
    CHECK((p.copies == 1 || (p.copies - 1) * p.slot_bytes <= 2 * l2));
  }
}

TEST_CASE("rotation: one region fits the plans of every size in a sweep", "[kernels][stats]") {
  // L2 500 B, 2 x L2 = 1000 B. 1001 B -> one 1024 B slot (1024 > 1000); 600 B -> 768 B slots,
  // floor(1000 / 768) + 1 = 2 of them, 1536 B: more than the largest footprint's plan.
  const std::vector<std::int64_t> footprints = {600, 1001};
  CHECK(rotation_plan(1001, 500).total_bytes() == 1024);
  CHECK(rotation_plan(600, 500).total_bytes() == 1536);
  CHECK(ess::bench::rotation_region(footprints, 500) == 1536);
  CHECK(ess::bench::rotation_region(std::vector<std::int64_t>{}, 500) == 0);
}

TEST_CASE("rotation: bad footprints or L2 sizes or alignments are rejected", "[kernels][stats][errors]") {
  CHECK_THROWS_AS(rotation_plan(0, 1 << 20), std::invalid_argument);
  CHECK_THROWS_AS(rotation_plan(100, -1), std::invalid_argument);
  CHECK_THROWS_AS(rotation_plan(100, 1 << 20, 3), std::invalid_argument);
  CHECK_THROWS_AS(rotation_plan(100, 1 << 20, 0), std::invalid_argument);
  CHECK(ess::bench::round_up(257, 256) == 512);
  CHECK(ess::bench::round_up(256, 256) == 256);
  CHECK(ess::bench::round_up(0, 256) == 0);
}
