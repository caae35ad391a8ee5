// The expert-load model (sim/graph/expert_routing.h): balanced, skewed, drifting, placed by EPLB.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "sim/graph/expert_routing.h"
#include "sim/base/error.h"

using ess::expert_load_stats;
using ess::ExpertLoadLayout;
using ess::ExpertRouting;
using ess::RoutingParams;

namespace {

ExpertLoadLayout ep32(std::int64_t slots) {
  ExpertLoadLayout l;
  l.routed = 256;
  l.top_k = 8;
  l.ranks = 32;
  l.slots = slots;
  l.tokens = 4096;
  return l;
}

}  // namespace

TEST_CASE("A token's experts are distinct slots of the group") {
  const ExpertRouting routing(16, 20, 4, 2, RoutingParams{1.0, 0.3, true}, ess::Rng(3));
  ess::Rng rng(5);
  const auto pass = routing.pass(1, rng);
  std::vector<std::int64_t> picked(6);
  for (int t = 0; t < 200; ++t) {
    pass.route(rng, picked);
    std::set<std::int64_t> seen(picked.begin(), picked.end());
    CHECK(seen.size() == picked.size());
    for (const auto s : picked) CHECK((s >= 0 && s < 20));
  }
}

TEST_CASE("A balanced router leaves only multinomial noise") {
  // 4096 tokens x 8 over 32 ranks: 1024 copies a rank, Poisson-like std ~ sqrt(1024 x 31/32).
  const auto s = expert_load_stats(ep32(256), RoutingParams{0, 0, false}, 8, 4, 1);
  CHECK(s.rank_mean == Approx(1024.0));
  CHECK(s.rank_std == Approx(31.5).epsilon(0.15));
  CHECK(s.rank_imbalance < 0.12);
}

TEST_CASE("Skew unbalances ranks, and EPLB with redundant experts takes most of it back") {
  const RoutingParams skewed{1.1, 0.0, false};
  const auto off = expert_load_stats(ep32(256), skewed, 8, 2, 1);
  const auto more = expert_load_stats(ep32(256), RoutingParams{1.4, 0.0, false}, 8, 2, 1);
  const auto on = expert_load_stats(ep32(288), RoutingParams{1.1, 0.0, true}, 8, 2, 1);
  const auto placed = expert_load_stats(ep32(256), RoutingParams{1.1, 0.0, true}, 8, 2, 1);
  CHECK(off.rank_imbalance > 1.0);
  CHECK(more.rank_imbalance > off.rank_imbalance);
  CHECK(on.rank_imbalance < 0.15);
  // Placement alone (no redundant slot) cannot split the hottest expert: between the two.
  CHECK(placed.rank_imbalance < off.rank_imbalance);
  CHECK(placed.rank_imbalance > on.rank_imbalance);
  // Drift is what a placement from past load cannot foresee.
  const auto drifting = expert_load_stats(ep32(288), RoutingParams{1.1, 0.3, true}, 8, 2, 1);
  CHECK(drifting.rank_imbalance > on.rank_imbalance + 0.1);
}

TEST_CASE("The expert-load model is deterministic for a seed") {
  const RoutingParams p{1.0, 0.1, true};
  const auto a = expert_load_stats(ep32(288), p, 4, 2, 9);
  const auto b = expert_load_stats(ep32(288), p, 4, 2, 9);
  const auto c = expert_load_stats(ep32(288), p, 4, 2, 10);
  CHECK(a.rank_std == b.rank_std);
  CHECK(a.slot_imbalance == b.slot_imbalance);
  CHECK(a.rank_std != c.rank_std);
}

TEST_CASE("The expert-load model refuses layouts it cannot place") {
  CHECK_THROWS_AS(ExpertRouting(256, 288, 32, 1, RoutingParams{1, 0, false}, ess::Rng(1)), ess::InternalError);
  CHECK_THROWS_AS(ExpertRouting(256, 250, 32, 1, RoutingParams{1, 0, true}, ess::Rng(1)), ess::InternalError);
  CHECK_THROWS_AS(ExpertRouting(256, 256, 30, 1, RoutingParams{1, 0, true}, ess::Rng(1)), ess::InternalError);
  CHECK_THROWS_AS(ExpertRouting(256, 256, 32, 1, RoutingParams{-1, 0, true}, ess::Rng(1)), ess::InternalError);
}
