// Transfers sharing links as a fluid (sim/serving/link_sharing.h): max-min fair rates worked out by
// hand, work conservation, and the caller's mistakes.
#include "sim/serving/link_sharing.h"

#include <catch2/catch.hpp>

#include "sim/base/error.h"

using namespace ess;

TEST_CASE("a flow alone moves at the slowest link of its path", "[serving][links]") {
  const std::vector<double> finish = share_links({10.0, 4.0}, {LinkFlow{2.0, 40.0, {0, 1}}});
  CHECK(finish.at(0) == Approx(12.0));
}

TEST_CASE("flows on one link share it equally, and one arriving later slows the first", "[serving][links]") {
  // Together from 0: 5 bytes/s each, both done at 20.
  const std::vector<double> together = share_links({10.0}, {LinkFlow{0.0, 100.0, {0}}, LinkFlow{0.0, 100.0, {0}}});
  CHECK(together.at(0) == Approx(20.0));
  CHECK(together.at(1) == Approx(20.0));
  // A alone for 5 s (50 bytes), then 5 bytes/s each: A's last 50 bytes by 15; B then alone, 50 left by 20.
  const std::vector<double> staggered = share_links({10.0}, {LinkFlow{0.0, 100.0, {0}}, LinkFlow{5.0, 100.0, {0}}});
  CHECK(staggered.at(0) == Approx(15.0));
  CHECK(staggered.at(1) == Approx(20.0));
}

TEST_CASE("rates are max-min fair: what a flow bottlenecked elsewhere leaves goes to the others", "[serving][links]") {
  // A crosses both links and is held to 4 by link 1; B takes the 6 that A leaves on link 0. At 10 A
  // is done (40 bytes) and B has moved 60 of 120; alone at 10 it is done at 16.
  const std::vector<double> finish = share_links({10.0, 4.0}, {LinkFlow{0.0, 40.0, {0, 1}}, LinkFlow{0.0, 120.0, {0}}});
  CHECK(finish.at(0) == Approx(10.0));
  CHECK(finish.at(1) == Approx(16.0));
}

TEST_CASE("a shared link is never idle while a flow on it is in flight", "[serving][links]") {
  // Flows of different sizes and starts, all on one link and never a gap between them: the last
  // finishes when the link has moved every byte, whatever order they finish in.
  std::vector<LinkFlow> flows;
  double bytes = 0.0;
  for (int i = 0; i < 12; ++i) {
    flows.push_back(LinkFlow{0.1 * i, 10.0 + 7.0 * (i % 5), {0}});
    bytes += flows.back().bytes;
  }
  const std::vector<double> finish = share_links({25.0}, flows);
  double last = 0.0;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    CHECK(finish[i] >= flows[i].start + flows[i].bytes / 25.0 - 1e-9);
    last = std::max(last, finish[i]);
  }
  CHECK(last == Approx(bytes / 25.0));
}

TEST_CASE("an empty flow is done at its start, and a malformed one is an internal error", "[serving][links]") {
  CHECK(share_links({1.0}, {LinkFlow{3.0, 0.0, {}}}).at(0) == 3.0);
  CHECK(share_links({1.0}, {}).empty());
  CHECK_THROWS_AS(share_links({1.0}, {LinkFlow{0.0, 1.0, {}}}), InternalError);
  CHECK_THROWS_AS(share_links({1.0}, {LinkFlow{0.0, 1.0, {1}}}), InternalError);
  CHECK_THROWS_AS(share_links({1.0}, {LinkFlow{0.0, 1.0, {0, 0}}}), InternalError);
  CHECK_THROWS_AS(share_links({0.0}, {LinkFlow{0.0, 1.0, {0}}}), InternalError);
}
