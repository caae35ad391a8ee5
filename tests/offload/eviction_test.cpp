// Eviction policies as plug-ins (sim/offload/eviction.h): a policy given through the interface is
// the one the pool uses, the registry names the policies, unknown names are refused.
#include "tests/offload/pool_contents.h"
#include "sim/offload/eviction.h"

#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/offload/cache_sim.h"
#include "sim/offload/gpu_pool.h"
#include "sim/base/error.h"

using ess::GpuPool;
using ess::PoolConfig;
using ess::PoolResidency;
using Positions = std::vector<std::int64_t>;

namespace {

// A test-only policy: the highest pooled position not selected now leaves. It keeps no structure
// of its own, so it relies on the interface's defaults for everything but evict().
class HighestFirst final : public ess::EvictionPolicy {
 public:
  std::int64_t evict(std::int64_t count, PoolResidency& pool) override {
    std::int64_t evicted = 0;
    for (std::size_t p = pool.stamp.size(); p-- > 0 && evicted < count;) {
      if (pool.pooled(p) && !pool.selected_now(p)) {
        pool.remove(p);
        ++evicted;
      }
    }
    ++calls;
    return evicted;
  }
  int calls = 0;
};

using ess::test::contents;

std::string joined_names() {
  std::string names;
  for (const auto& r : ess::eviction_policies()) names += (names.empty() ? "" : ", ") + std::string(r.name);
  return names;
}

}  // namespace

TEST_CASE("a policy plugged in through the interface decides the victims") {
  auto policy = std::make_unique<HighestFirst>();
  const HighestFirst* seen = policy.get();
  GpuPool pool(PoolConfig{3, 0, "highest-first", {}}, std::move(policy));
  // Capacity 3. By hand: {1, 2, 3} fills the pool; 4 evicts the highest unselected, 3; then 5
  // (selected with 2) evicts 4, the highest of 1 and 4; then 0 evicts 5. LRU would have evicted
  // 1, then 3, then 4.
  pool.access({1, 2, 3}, 10, 0);
  CHECK(seen->calls == 0);  // nothing to evict yet
  CHECK(pool.access({4}, 10, 1).evictions == 1);
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 2, 4});
  CHECK(pool.access({2, 5}, 10, 2).evictions == 1);
  CHECK(contents(pool, 10) == std::set<std::int64_t>{1, 2, 5});
  CHECK(pool.access({0}, 10, 3).evictions == 1);
  CHECK(contents(pool, 10) == std::set<std::int64_t>{0, 1, 2});
  CHECK(seen->calls == 3);
  CHECK(pool.set_capacity(1) == 2);  // shrinking asks the policy too: 2 and 1 leave
  CHECK(contents(pool, 10) == std::set<std::int64_t>{0});
  pool.check_invariants();
  // It declares no deltas: the pool refuses them.
  CHECK_FALSE(pool.takes_delta());
  GpuPool other(PoolConfig{3, 0, "highest-first", {}}, std::make_unique<HighestFirst>());
  CHECK_THROWS_WITH(other.access_delta({{}, {1}, 1}, 10, 0), Catch::Contains("supports deltas"));
}

TEST_CASE("a policy that evicts too few entries is reported as a bug") {
  class Lazy final : public ess::EvictionPolicy {
   public:
    std::int64_t evict(std::int64_t /*count*/, PoolResidency& /*pool*/) override { return 0; }
  };
  GpuPool pool(PoolConfig{2, 0, "lazy", {}}, std::make_unique<Lazy>());
  pool.access({1, 2}, 10, 0);
  CHECK_THROWS_AS(pool.access({3}, 10, 1), ess::InternalError);
  CHECK_THROWS_AS(GpuPool(PoolConfig{2, 0, "none", {}}, nullptr), ess::InternalError);
}

TEST_CASE("the default renumbering keeps the order of the stamps, from 1") {
  HighestFirst policy;
  PoolResidency pool;
  pool.stamp = {0, 70, 30, 70, 90, 0};
  CHECK(policy.renumber(pool) == 3);
  CHECK(pool.stamp == std::vector<std::uint32_t>{0, 2, 1, 2, 3, 0});
}

TEST_CASE("every registered eviction policy makes a pool that keeps its name") {
  std::set<std::string> names;
  for (const auto& r : ess::eviction_policies()) {
    INFO(r.name);
    CHECK_FALSE(r.summary.empty());
    CHECK(names.insert(std::string(r.name)).second);  // each name once
    PoolConfig config{4, 0, std::string(r.name), {}};
    for (const ess::PolicyParam& p : r.params) config.params.set(p.name, p.default_value);
    CHECK_NOTHROW(ess::validate(config));
    GpuPool pool(config);
    CHECK(pool.config().policy == r.name);
    pool.access({1, 2, 3, 4}, 10, 0);
    CHECK(pool.access({5}, 10, 1).evictions == 1);
    pool.check_invariants();
  }
  CHECK(names == std::set<std::string>{"lru", "fifo", "heat"});
  CHECK(names.count(PoolConfig{}.policy) == 1);  // the default is registered
}

TEST_CASE("deltas are a capability the policy declares: lru has it, fifo and heat do not") {
  for (const auto& r : ess::eviction_policies()) {
    INFO(r.name);
    const auto policy = r.make(PoolConfig{});
    CHECK(policy->supports_delta() == (r.name == "lru"));
    CHECK(GpuPool(PoolConfig{4, 0, std::string(r.name), {}}).takes_delta() == (r.name == "lru"));
    CHECK_FALSE(GpuPool(PoolConfig{4, 2, std::string(r.name), {}}).takes_delta());  // pinned window
  }
}

TEST_CASE("an unknown eviction policy is refused with the registered names") {
  const PoolConfig config{4, 0, "lur", {}};
  CHECK_THROWS_AS(ess::validate(config), ess::InternalError);
  CHECK_THROWS_WITH(ess::validate(config), Catch::Contains("\"lur\"") && Catch::Contains(joined_names()));
  CHECK_THROWS_WITH(GpuPool(config), Catch::Contains(joined_names()));
  CHECK(joined_names() == "lru, fifo, heat");
  ess::CacheSimConfig sim;
  sim.capacity_entries = 8;
  sim.policy = "LRU";  // names are case-sensitive
  CHECK_THROWS_WITH(ess::validate(sim), Catch::Contains(joined_names()));
}
