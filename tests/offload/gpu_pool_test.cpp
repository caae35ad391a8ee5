#include "tests/offload/pool_contents.h"
#include "sim/offload/gpu_pool.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/base/rng.h"
#include "sim/base/error.h"

namespace ess {

// Test-only access to GpuPool's fault injection and tick counter (a friend of GpuPool).
struct GpuPoolTestPeer {
  static void skip_evictions(GpuPool& pool) { pool.fault_ = GpuPool::TestFault::skip_evictions; }
  static void forget_one_insert(GpuPool& pool) {
    pool.fault_ = GpuPool::TestFault::forget_one_insert;
  }
  static void count_extra_hit(GpuPool& pool) { pool.fault_ = GpuPool::TestFault::count_extra_hit; }
  static void set_tick_limit(GpuPool& pool, std::uint32_t limit) { pool.tick_limit_ = limit; }
  static void corrupt_size(GpuPool& pool) { --pool.residency_.size; }
};

}  // namespace ess

using ess::AccessResult;
using ess::GpuPool;
using ess::GpuPoolTestPeer;
using ess::PoolConfig;
using Positions = std::vector<std::int64_t>;

namespace {

PoolConfig config(std::int64_t capacity, const std::string& policy, std::int64_t pinned = 0,
                  double decay = 1.0) {
  PoolConfig c{capacity, pinned, policy, {}};
  c.params.set("heat_decay", decay);
  return c;
}

using ess::test::contents;

struct Expect {
  std::int64_t hits;
  std::int64_t misses;
  std::int64_t runs;
  std::int64_t evictions;
};

void check(const AccessResult& r, Expect e) {
  CHECK(r.hits == e.hits);
  CHECK(r.misses == e.misses);
  CHECK(r.runs == e.runs);
  CHECK(r.evictions == e.evictions);
}

}  // namespace

TEST_CASE("a pool configuration out of range is refused") {
  CHECK_NOTHROW(GpuPool(config(1, "lru")));
  CHECK_THROWS_WITH(GpuPool(config(0, "lru")), Catch::Contains("capacity"));
  CHECK_THROWS_AS(GpuPool(config(-5, "lru")), ess::InternalError);
  CHECK_THROWS_WITH(GpuPool(config(3, "lru", -1)), Catch::Contains("pinned_recent"));
  CHECK_THROWS_WITH(GpuPool(config(3, "heat", 0, 0.0)), Catch::Contains("heat_decay"));
  CHECK_THROWS_AS(GpuPool(config(3, "heat", 0, 1.5)), ess::InternalError);
  CHECK_THROWS_AS(GpuPool(config(3, "heat", 0, std::nan(""))), ess::InternalError);
  // A value for a parameter no eviction policy declares (a misspelt name) is a bug upstream.
  PoolConfig misspelt{3, 0, "heat", {}};
  misspelt.params.set("heat_decy", 0.5);
  CHECK_THROWS_WITH(GpuPool(misspelt), Catch::Contains("no parameter heat_decy; declared: heat_decay"));
  CHECK_THROWS_AS(GpuPool(config(3, "lru7")), ess::InternalError);
  GpuPool pool(config(3, "lru"));
  CHECK_THROWS_AS(pool.set_capacity(0), ess::InternalError);
}

TEST_CASE("LRU, capacity 3: hand-worked sequence") {
  GpuPool pool(config(3, "lru"));
  Positions missed;
  // Empty pool: all three miss, one run 1-3.
  check(pool.access({1, 2, 3}, 10, 0, &missed), {0, 3, 1, 0});
  CHECK(missed == Positions{1, 2, 3});
  // 2 hits; 4 misses and evicts the least recently selected, 1. Recency now 3 < 2 < 4.
  check(pool.access({2, 4}, 10, 1, &missed), {1, 1, 1, 1});
  CHECK(missed == Positions{4});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{2, 3, 4});
  // Three misses in runs {1} and {5, 6} evict everything.
  check(pool.access({1, 5, 6}, 10, 2, &missed), {0, 3, 2, 3});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 5, 6});
  // 5 hits; 7 evicts 1 (selected together with 5 and 6, but lowest position: order 1 < 5 < 6).
  check(pool.access({5, 7}, 10, 3), {1, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{5, 6, 7});
  // Recency 6 < 5 < 7; selecting 6 makes it newest: 5 < 7 < 6. Then 8 evicts 5.
  check(pool.access({6}, 10, 4), {1, 0, 0, 0});
  check(pool.access({8}, 10, 5), {0, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{6, 7, 8});
  CHECK(pool.size() == 3);
  pool.check_invariants();
}

TEST_CASE("LRU and FIFO differ when an old entry is selected again") {
  // {1,2,3}, then {1}: LRU recency 2 < 3 < 1, FIFO arrival 1 < 2 < 3. A miss then evicts 2 (LRU)
  // or 1 (FIFO).
  GpuPool lru(config(3, "lru"));
  GpuPool fifo(config(3, "fifo"));
  for (GpuPool* pool : {&lru, &fifo}) {
    pool->access({1, 2, 3}, 10, 0);
    check(pool->access({1}, 10, 1), {1, 0, 0, 0});
    check(pool->access({4}, 10, 2), {0, 1, 1, 1});
  }
  CHECK(contents(lru, 10) == std::set<std::int64_t>{1, 3, 4});
  CHECK(contents(fifo, 10) == std::set<std::int64_t>{2, 3, 4});
  lru.check_invariants();
  fifo.check_invariants();
}

TEST_CASE("FIFO never evicts an entry selected in the same access, and it keeps its place") {
  GpuPool pool(config(3, "fifo"));
  pool.access({1, 2, 3}, 10, 0);
  // The oldest, 1, is selected now: 4 evicts the next oldest, 2. Arrival order 1 < 3 < 4.
  check(pool.access({1, 4}, 10, 1), {1, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 3, 4});
  // 1 kept its place at the front: 5 evicts it (LRU would evict 3).
  check(pool.access({5}, 10, 2), {0, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{3, 4, 5});
  pool.check_invariants();
}

TEST_CASE("heat with decay 1 evicts the least selected entry, ties by least recently selected") {
  GpuPool pool(config(3, "heat", 0, 1.0));
  pool.access({1, 2, 3}, 10, 0);  // heats 1, 1, 1
  pool.access({2}, 10, 1);        // 2 -> 2
  pool.access({3}, 10, 2);        // 3 -> 2
  pool.access({1}, 10, 3);        // 1 -> 2: all tie, 2 least recently selected
  check(pool.access({4}, 10, 4), {0, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 3, 4});
  // Heats 1: 2, 3: 2, 4: 1 -> 5 evicts 4.
  check(pool.access({5}, 10, 5), {0, 1, 1, 1});
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 3, 5});
  pool.check_invariants();
}

TEST_CASE("heat decay makes old popularity fade") {
  // Steps: 0 {1,2,3}, 1 {1}, 2 {1}, 3 {3}, 4 {4}, 5 {5}.
  // Decay 1 (counts): at step 4 heats 1:3 2:1 3:2 -> evict 2; at step 5 1:3 3:2 4:1 -> evict 4.
  // Decay 0.5: at step 4, 1: 0.5^4 + 0.5^3 + 0.5^2 = 0.4375, 2: 0.0625, 3: 0.0625 + 0.5 = 0.5625
  // -> evict 2; at step 5 1: 0.21875, 3: 0.28125, 4: 0.5 -> evict 1.
  auto run = [](double decay) {
    GpuPool pool(config(3, "heat", 0, decay));
    pool.access({1, 2, 3}, 10, 0);
    pool.access({1}, 10, 1);
    pool.access({1}, 10, 2);
    pool.access({3}, 10, 3);
    pool.access({4}, 10, 4);
    CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 3, 4});
    pool.access({5}, 10, 5);
    pool.check_invariants();
    return contents(pool, 10);
  };
  CHECK(run(1.0) == std::set<std::int64_t>{1, 3, 5});
  CHECK(run(0.5) == std::set<std::int64_t>{3, 4, 5});
}

TEST_CASE("heat decays once per step, not per access") {
  // Two accesses in step 0 give 1 a heat of 2; 2 gets 1 at step 1. With decay 0.5, at step 2:
  // 1: 2 * 0.25 = 0.5, 2: 0.5, 3 (step 1): 0.5 -> all tie; least recently selected is 1.
  GpuPool pool(config(3, "heat", 0, 0.5));
  pool.access({1}, 10, 0);
  pool.access({1}, 10, 0);
  pool.access({2, 3}, 10, 1);
  pool.access({4}, 10, 2);
  CHECK(contents(pool, 10) == std::set<std::int64_t>{2, 3, 4});
}

TEST_CASE("pinned recent window: hits without pool space, and its tokens leave as it moves") {
  GpuPool pool(config(3, "lru", 2));
  // Context 10: 8 and 9 are pinned. Only 1 goes into the pool.
  AccessResult r = pool.access({1, 8, 9}, 10, 0);
  check(r, {2, 1, 1, 0});
  CHECK(r.pinned_hits == 2);
  CHECK(pool.size() == 1);
  // Three unpinned entries fit the capacity of 3 even with the pinned ones selected too.
  r = pool.access({2, 3, 4, 9}, 10, 1);
  check(r, {1, 3, 1, 1});  // evicts 1
  CHECK(contents(pool, 10) == std::set<std::int64_t>{2, 3, 4});
  CHECK(pool.resident(9));
  CHECK_FALSE(pool.in_pool(9));
  // Context 12: the window is 10, 11. Token 8 aged out and was never pooled: a miss now.
  r = pool.access({8, 11}, 12, 2);
  check(r, {1, 1, 1, 1});  // evicts 2 (oldest, lowest position among 2, 3, 4)
  CHECK(r.pinned_hits == 1);
  CHECK(contents(pool, 12) == std::set<std::int64_t>{3, 4, 8});
  CHECK_FALSE(pool.resident(9));
  CHECK(pool.resident(10));
  CHECK(pool.resident(8));
  // Four unpinned selected entries cannot all be on the GPU with capacity 3.
  CHECK_THROWS_WITH(pool.access({0, 1, 2, 3, 11}, 12, 3), Catch::Contains("exceed the pool capacity"));
  pool.check_invariants();
}

TEST_CASE("runs count maximal stretches of consecutive missed positions") {
  GpuPool pool(config(100, "lru"));
  Positions missed;
  check(pool.access({1, 2, 3, 5, 7, 8, 20}, 100, 0, &missed), {0, 7, 4, 0});
  // 4, 6 and 9 are new; 4 and 6 are separated by the hit 5: three runs.
  check(pool.access({1, 2, 3, 4, 5, 6, 7, 8, 9}, 100, 1, &missed), {6, 3, 3, 0});
  CHECK(missed == Positions{4, 6, 9});
  check(pool.access({10, 11, 12, 13}, 100, 2, &missed), {0, 4, 1, 0});
  check(pool.access({}, 100, 3, &missed), {0, 0, 0, 0});
  CHECK(missed.empty());
}

TEST_CASE("shrinking the capacity evicts by the policy, growing keeps everything") {
  GpuPool pool(config(4, "lru"));
  pool.access({1, 2}, 10, 0);
  pool.access({3, 4}, 10, 1);
  CHECK(pool.set_capacity(6) == 0);
  CHECK(pool.set_capacity(2) == 2);  // 1 and 2 are the least recently selected
  CHECK(contents(pool, 10) == std::set<std::int64_t>{3, 4});
  pool.check_invariants();
}

TEST_CASE("access rejects selections that break its contract") {
  GpuPool pool(config(8, "lru"));
  CHECK_THROWS_WITH(pool.access({3, 2}, 10, 0), Catch::Contains("ascending"));
  CHECK_THROWS_WITH(pool.access({2, 2}, 10, 0), Catch::Contains("ascending"));
  CHECK_THROWS_WITH(pool.access({10}, 10, 0), Catch::Contains("outside"));
  CHECK_THROWS_AS(pool.access({-1}, 10, 0), ess::InternalError);
  pool.access({1}, 10, 5);
  CHECK_THROWS_WITH(pool.access({1}, 9, 6), Catch::Contains("context decreased"));
  CHECK_THROWS_WITH(pool.access({1}, 10, 4), Catch::Contains("step decreased"));
  CHECK_NOTHROW(pool.access({1}, 10, 5));  // several accesses in one step are fine
}

TEST_CASE("the invariant checks can fail: injected faults throw InternalError") {
  SECTION("capacity exceeded") {
    GpuPool pool(config(3, "lru"));
    pool.access({1, 2, 3}, 10, 0);
    GpuPoolTestPeer::skip_evictions(pool);
    CHECK_THROWS_WITH(pool.access({4}, 10, 1), Catch::Contains("capacity 3"));
  }
  for (const char* policy : {"lru", "fifo", "heat"}) {
    SECTION(std::string("a selected entry not resident: ") + policy) {
      GpuPool pool(config(3, policy));
      GpuPoolTestPeer::forget_one_insert(pool);
      CHECK_THROWS_WITH(pool.access({1, 2}, 10, 0), Catch::Contains("not resident"));
    }
  }
  SECTION("misses != selected - hits") {
    GpuPool pool(config(3, "lru"));
    GpuPoolTestPeer::count_extra_hit(pool);
    CHECK_THROWS_WITH(pool.access({1, 2}, 10, 0), Catch::Contains("!= selected"));
  }
  SECTION("the full check sees a corrupted size") {
    GpuPool pool(config(3, "heat"));
    pool.access({1, 2}, 10, 0);
    CHECK_NOTHROW(pool.check_invariants());
    GpuPoolTestPeer::corrupt_size(pool);
    CHECK_THROWS_AS(pool.check_invariants(), ess::InternalError);
  }
}

namespace {

// A brute-force model of the pool written from the policy definitions, with no shared code:
// entries carry their last selection, arrival and heat; eviction sorts all candidates.
class ReferencePool {
 public:
  explicit ReferencePool(PoolConfig c) : c_(c) {}

  AccessResult access(const Positions& selected, std::int64_t context, int step, Positions& missed) {
    ++access_;
    AccessResult r;
    missed.clear();
    const std::int64_t pin_start = context - c_.pinned_recent;
    std::set<std::int64_t> now;
    for (const std::int64_t p : selected) {
      if (p >= pin_start) {
        ++r.hits;
        continue;
      }
      now.insert(p);
      auto it = entries_.find(p);
      if (it != entries_.end()) {
        ++r.hits;
        it->second.heat = heat_at(it->second, step) + 1.0;
        it->second.heat_step = step;
        it->second.last = access_;
      } else {
        missed.push_back(p);
      }
    }
    r.misses = static_cast<std::int64_t>(missed.size());
    for (std::size_t i = 0; i < missed.size(); ++i) {
      if (i == 0 || missed[i] != missed[i - 1] + 1) ++r.runs;
    }
    std::int64_t need = static_cast<std::int64_t>(entries_.size()) + r.misses - c_.capacity;
    while (need-- > 0) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (now.count(it->first) != 0) continue;
        if (victim == entries_.end() || before(*it, *victim, step)) victim = it;
      }
      entries_.erase(victim);
      ++r.evictions;
    }
    for (const std::int64_t p : missed) entries_[p] = Entry{access_, access_, 1.0, step};
    return r;
  }

  [[nodiscard]] std::set<std::int64_t> contents() const {
    std::set<std::int64_t> in;
    for (const auto& [p, e] : entries_) in.insert(p);
    return in;
  }

 private:
  struct Entry {
    int last;     // access number of the last selection
    int arrival;  // access number of the insertion
    double heat;  // heat at heat_step
    int heat_step;
  };
  [[nodiscard]] double heat_at(const Entry& e, int step) const {
    return e.heat * std::pow(c_.params.of(ess::heat_eviction_params()[0]), step - e.heat_step);
  }
  // Whether a leaves before b. Within one access, lower positions were selected first.
  [[nodiscard]] bool before(const std::pair<const std::int64_t, Entry>& a,
                            const std::pair<const std::int64_t, Entry>& b, int step) const {
    if (c_.policy == "lru") {
      if (a.second.last != b.second.last) return a.second.last < b.second.last;
      return a.first < b.first;
    }
    if (c_.policy == "fifo") {
      if (a.second.arrival != b.second.arrival) return a.second.arrival < b.second.arrival;
      return a.first < b.first;
    }
    if (c_.policy == "heat") {
      const double ha = heat_at(a.second, step);
      const double hb = heat_at(b.second, step);
      if (ha != hb) return ha < hb;
      if (a.second.last != b.second.last) return a.second.last < b.second.last;
      return a.first < b.first;
    }
    return false;
  }

  PoolConfig c_;
  int access_ = 0;
  std::map<std::int64_t, Entry> entries_;
};

}  // namespace

TEST_CASE("every policy matches a brute-force reference model on random selections") {
  // Decays 1 and 0.5 keep heats exact binary fractions, so both models compare them exactly.
  struct Case {
    const char* policy;
    std::int64_t pinned;
    double decay;
  };
  for (const Case c : {Case{"lru", 0, 1.0}, Case{"lru", 3, 1.0},
                       Case{"fifo", 0, 1.0}, Case{"fifo", 3, 1.0},
                       Case{"heat", 0, 1.0}, Case{"heat", 2, 0.5}}) {
    const PoolConfig pc = config(12, c.policy, c.pinned, c.decay);
    GpuPool pool(pc);
    ReferencePool reference(pc);
    ess::Rng rng(99);
    std::int64_t context = 20;
    Positions missed;
    Positions expected_missed;
    for (int access = 0; access < 400; ++access) {
      const int step = access / 2;  // two accesses per step
      if (rng.below(3) == 0) ++context;
      // Up to 12 unpinned picks, skewed to the recent end, plus maybe pinned ones.
      std::set<std::int64_t> pick;
      const std::uint64_t count = rng.below(13);
      for (std::uint64_t i = 0; i < count; ++i) {
        const auto span = static_cast<std::uint64_t>(context - c.pinned);
        const std::uint64_t back = rng.below(rng.below(2) == 0 ? std::min<std::uint64_t>(span, 16) : span);
        pick.insert(context - c.pinned - 1 - static_cast<std::int64_t>(back));
      }
      if (c.pinned > 0 && rng.below(2) == 0) pick.insert(context - 1);
      const Positions selected(pick.begin(), pick.end());
      const AccessResult got = pool.access(selected, context, step, &missed);
      const AccessResult want = reference.access(selected, context, step, expected_missed);
      INFO("policy " << c.policy << " pinned " << c.pinned << " access " << access);
      REQUIRE(got.hits == want.hits);
      REQUIRE(got.misses == want.misses);
      REQUIRE(got.runs == want.runs);
      REQUIRE(got.evictions == want.evictions);
      REQUIRE(missed == expected_missed);
      REQUIRE(contents(pool, context) == reference.contents());
    }
    pool.check_invariants();
  }
}

TEST_CASE("renumbering the 32-bit access ticks changes nothing") {
  // A tick limit of 5 renumbers every few accesses; results must equal an untouched pool's.
  for (const char* policy : {"lru", "fifo", "heat"}) {
    GpuPool normal(config(10, policy));
    GpuPool renumbered(config(10, policy));
    GpuPoolTestPeer::set_tick_limit(renumbered, 5);
    ess::Rng rng(7);
    for (int step = 0; step < 300; ++step) {
      std::set<std::int64_t> pick;
      const std::uint64_t count = rng.below(8);
      for (std::uint64_t i = 0; i < count; ++i) pick.insert(static_cast<std::int64_t>(rng.below(30)));
      const Positions selected(pick.begin(), pick.end());
      const AccessResult a = normal.access(selected, 30, step);
      const AccessResult b = renumbered.access(selected, 30, step);
      REQUIRE(a.misses == b.misses);
      REQUIRE(a.evictions == b.evictions);
      REQUIRE(contents(normal, 30) == contents(renumbered, 30));
      if (step % 50 == 0) renumbered.check_invariants();
    }
  }
}

TEST_CASE("a pool's arrays grow with the context") {
  GpuPool pool(config(4, "lru", 1));
  for (std::int64_t context = 1; context <= 5000; ++context) {
    // The newest token is pinned; the previous one (if any) must be fetched into the pool.
    Positions selected;
    if (context >= 2) selected.push_back(context - 2);
    selected.push_back(context - 1);
    const AccessResult r = pool.access(selected, context, static_cast<int>(context));
    REQUIRE(r.pinned_hits == 1);
    REQUIRE(r.misses == (context >= 2 ? 1 : 0));
  }
  CHECK(pool.size() == 4);
  CHECK(contents(pool, 5000) == std::set<std::int64_t>{4995, 4996, 4997, 4998});
  CHECK_FALSE(pool.in_pool(1 << 20));
  pool.check_invariants();
}

// ---- access_delta: the same pool fed the change between consecutive selections ------------------

namespace {

// The change from `before` to `after` (both ascending).
ess::SelectionDelta diff(const Positions& before, const Positions& after) {
  ess::SelectionDelta d;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(d.removed));
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(d.added));
  d.selected = static_cast<std::int64_t>(after.size());
  return d;
}

// A selection of `k` of [0, context) that keeps each of `previous` with probability `keep`.
Positions next_selection(ess::Rng& rng, const Positions& previous, std::int64_t k, std::int64_t context, double keep) {
  std::set<std::int64_t> chosen;
  for (const auto p : previous) {
    if (p < context && static_cast<std::int64_t>(chosen.size()) < k && rng.uniform() < keep) chosen.insert(p);
  }
  while (static_cast<std::int64_t>(chosen.size()) < std::min(k, context)) {
    // Skewed to recent positions, as the indexer's selections are.
    const double u = rng.uniform();
    chosen.insert(context - 1 - static_cast<std::int64_t>(u * u * static_cast<double>(context)));
  }
  return {chosen.begin(), chosen.end()};
}

}  // namespace

TEST_CASE("access_delta gives exactly what access gives on the full selections", "[pool][delta]") {
  for (const double keep : {0.0, 0.3, 0.9, 0.99}) {
    for (const std::int64_t capacity : {64, 100, 400}) {
      ess::Rng rng(static_cast<std::uint64_t>(capacity * 1000 + static_cast<std::int64_t>(keep * 100)));
      GpuPool full(config(capacity, "lru"));
      GpuPool by_delta(config(capacity, "lru"));
      Positions previous;
      std::int64_t context = 200;
      for (int step = -5; step < 60; ++step) {
        context += static_cast<std::int64_t>(rng.below(3));
        const Positions selected = next_selection(rng, previous, 64, context, keep);
        if (step == 20) {  // a capacity change between accesses: both pools shrink alike
          CHECK(full.set_capacity(capacity - 1 > 64 ? capacity - 1 : 64) ==
                by_delta.set_capacity(capacity - 1 > 64 ? capacity - 1 : 64));
        }
        Positions missed_full;
        Positions missed_delta;
        const AccessResult a = full.access(selected, context, step, &missed_full);
        const AccessResult b = by_delta.access_delta(diff(previous, selected), context, step, &missed_delta);
        INFO("keep " << keep << ", capacity " << capacity << ", step " << step);
        REQUIRE(a.hits == b.hits);
        REQUIRE(a.misses == b.misses);
        REQUIRE(a.runs == b.runs);
        REQUIRE(a.evictions == b.evictions);
        REQUIRE(missed_full == missed_delta);
        REQUIRE(full.size() == by_delta.size());
        for (std::int64_t p = 0; p < context; ++p) REQUIRE(full.in_pool(p) == by_delta.in_pool(p));
        by_delta.check_invariants();
        previous = selected;
      }
    }
  }
}

TEST_CASE("access_delta survives a tick renumbering with the same results", "[pool][delta]") {
  ess::Rng rng(7);
  GpuPool full(config(80, "lru"));
  GpuPool by_delta(config(80, "lru"));
  GpuPoolTestPeer::set_tick_limit(by_delta, 5);  // renumbers every few accesses
  Positions previous;
  for (int step = 0; step < 40; ++step) {
    const Positions selected = next_selection(rng, previous, 32, 300, 0.7);
    const AccessResult a = full.access(selected, 300, step);
    const AccessResult b = by_delta.access_delta(diff(previous, selected), 300, step);
    REQUIRE(a.misses == b.misses);
    REQUIRE(a.evictions == b.evictions);
    by_delta.check_invariants();
    previous = selected;
  }
}

TEST_CASE("access_delta rejects a change that does not fit the previous selection", "[pool][delta]") {
  GpuPool pool(config(10, "lru"));
  ess::SelectionDelta first{{}, {1, 2, 3}, 3};
  (void)pool.access_delta(first, 100, 0);
  CHECK_THROWS_WITH(pool.access_delta({{5}, {}, 2}, 100, 1), Catch::Contains("was not selected"));
  CHECK_THROWS_WITH(pool.access_delta({{}, {2}, 4}, 100, 1), Catch::Contains("was already selected"));
  CHECK_THROWS_WITH(pool.access_delta({{}, {7, 6}, 5}, 100, 1), Catch::Contains("not strictly ascending"));
  CHECK_THROWS_WITH(pool.access_delta({{}, {7}, 5}, 100, 1), Catch::Contains("the delta says 5"));
  CHECK_THROWS_WITH(pool.access_delta({{}, {100}, 4}, 100, 1), Catch::Contains("outside [0, 100)"));
  CHECK_THROWS_WITH(pool.access_delta({{}, {4, 5, 6, 7, 8, 9, 10, 11}, 11}, 100, 1), Catch::Contains("exceed"));
  CHECK_THROWS_AS(pool.access({1, 2}, 100, 1), ess::InternalError);  // no mixing of the two kinds
  GpuPool fifo(config(10, "fifo"));
  CHECK_THROWS_WITH(fifo.access_delta(first, 100, 0), Catch::Contains("supports deltas"));
  GpuPool pinned(config(10, "lru", 4));
  CHECK_THROWS_WITH(pinned.access_delta(first, 100, 0), Catch::Contains("pinned"));
}
