// SyntheticAccess::select_delta against select, and the cache simulation fed changes against the one
// fed full selections: the fast path must give exactly the same numbers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "sim/offload/cache_sim.h"
#include "sim/offload/synthetic_access.h"
#include "sim/base/error.h"

using ess::SelectionDelta;
using ess::SyntheticAccess;
using ess::SyntheticAccessParams;
using Positions = std::vector<std::int64_t>;

namespace {

Positions applied(const Positions& before, const SelectionDelta& d) {
  Positions kept;
  std::set_difference(before.begin(), before.end(), d.removed.begin(), d.removed.end(), std::back_inserter(kept));
  Positions after;
  std::set_union(kept.begin(), kept.end(), d.added.begin(), d.added.end(), std::back_inserter(after));
  return after;
}

// Hides select_delta, so the cache simulation takes the full-selection path.
class FullOnly final : public ess::AccessModel {
 public:
  explicit FullOnly(ess::AccessModel& inner) : inner_(inner) {}
  void select(int step, int layer, int request, std::int64_t context, Positions& out) override {
    inner_.select(step, layer, request, context, out);
  }

 private:
  ess::AccessModel& inner_;
};

}  // namespace

TEST_CASE("select_delta applied to the previous selection is select's selection", "[synthetic][delta]") {
  SyntheticAccessParams params;
  params.layers = 3;
  params.top_k = 256;
  params.recent_window = 16;
  // Contexts below top_k (every position selected), crowded ones just above it (the fallback
  // scans), sparse ones, growth by 0-3 tokens, warm-up steps with little retention.
  for (const std::int64_t start : {std::int64_t{100}, std::int64_t{250}, std::int64_t{270}, std::int64_t{5000}}) {
    SyntheticAccess a(params);
    SyntheticAccess b(params);
    std::vector<Positions> previous(6);
    std::int64_t context = start;
    for (int step = -8; step < 40; ++step) {
      context += (step * 7 + 3) % 4;
      for (int layer = 0; layer < 3; ++layer) {
        for (int request = 0; request < 2; ++request) {
          Positions full;
          a.select(step, layer, request, context, full);
          SelectionDelta d;
          b.select_delta(step, layer, request, context, d);
          auto& before = previous[static_cast<std::size_t>(layer * 2 + request)];
          INFO("start " << start << ", step " << step << ", layer " << layer << ", request " << request);
          REQUIRE(std::is_sorted(d.removed.begin(), d.removed.end()));
          REQUIRE(std::is_sorted(d.added.begin(), d.added.end()));
          REQUIRE(d.selected == static_cast<std::int64_t>(full.size()));
          const Positions after = applied(before, d);
          REQUIRE(after == full);
          before = after;
        }
      }
    }
  }
}

TEST_CASE("the cache simulation fed changes gives the numbers of the one fed full selections", "[cache_sim][delta]") {
  SyntheticAccessParams params;
  params.layers = 4;
  params.top_k = 512;
  SyntheticAccess fast_model(params);
  SyntheticAccess slow_inner(params);
  FullOnly slow_model(slow_inner);
  ess::CacheSimConfig c;
  c.layers = 4;
  c.top_k = 512;
  c.sampled_requests = 3;
  c.warmup_windows = 8;
  c.capacity_ratio = 0.1;
  ess::CacheSimulator fast(c, fast_model);
  ess::CacheSimulator slow(c, slow_model);
  fast.warm_up(8000);
  slow.warm_up(8000);
  std::vector<int> steps;
  std::vector<std::int64_t> contexts;
  for (int s = 0; s < 12; ++s) {
    steps.push_back(s);
    contexts.push_back(8000 + 2 * s);
  }
  // One call of twelve steps against twelve calls of one.
  const auto together = fast.steps(steps, contexts);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ess::CacheStepStats one = slow.step(steps[i], contexts[i]);
    REQUIRE(together[i].capacity == one.capacity);
    for (std::size_t l = 0; l < one.layers.size(); ++l) {
      INFO("step " << i << ", layer " << l);
      CHECK(together[i].layers[l].misses_mean == one.layers[l].misses_mean);
      CHECK(together[i].layers[l].misses_stderr == one.layers[l].misses_stderr);
      CHECK(together[i].layers[l].hits_mean == one.layers[l].hits_mean);
      CHECK(together[i].layers[l].runs_mean == one.layers[l].runs_mean);
      CHECK(together[i].layers[l].evictions_mean == one.layers[l].evictions_mean);
    }
  }
  CHECK(together.back().layers[0].misses_mean > 0.0);  // the comparison is not vacuous
  CHECK_THROWS_AS(fast.steps({12, 13}, {8100}), ess::InternalError);
}
