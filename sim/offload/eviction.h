// Eviction policies of a GPU pool (gpu_pool.h): which resident entry leaves to make room for a
// fetched one. GpuPool keeps residency (which positions are pooled, when each was last selected),
// the pinned window and the invariant checks; a policy keeps only its own ordering structure and
// is told about each access in a few calls, each given the whole batch of positions, so the
// per-entry work stays inside one (non-virtual) loop of the policy.
//
// Implementations beside this header, one line each in eviction_registry.cpp:
//   eviction_lru.cpp   least recently selected leaves (the ESS paper's policy)
//   eviction_fifo.cpp  earliest fetched leaves
//   eviction_heat.cpp  lowest decayed selection count leaves
// Entries selected by the current access are never evicted by it, under any policy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/offload/registry.h"

namespace ess {

struct PoolConfig;  // gpu_pool.h

// What a pool shares with its policy. The pool writes stamps and size on hits and inserts; a policy
// writes them only to evict (remove()) or to renumber.
struct PoolResidency {
  // By position (0 .. grown size - 1): 0 = not pooled, else the tick of the last access that
  // selected the entry (of its insertion if not selected since). Ticks increase by one per access.
  std::vector<std::uint32_t> stamp;
  std::uint32_t tick = 0;     // the current access's; stamp == tick means selected now: never a victim
  std::int64_t size = 0;      // pooled entries (the pinned window excluded)
  std::int64_t capacity = 0;  // the pool's capacity

  [[nodiscard]] bool pooled(std::size_t position) const { return stamp[position] != 0; }
  [[nodiscard]] bool selected_now(std::size_t position) const { return stamp[position] == tick; }
  void remove(std::size_t position) {
    stamp[position] = 0;
    --size;
  }
};

class EvictionPolicy {
 public:
  EvictionPolicy() = default;
  EvictionPolicy(const EvictionPolicy&) = delete;
  EvictionPolicy& operator=(const EvictionPolicy&) = delete;
  virtual ~EvictionPolicy() = default;

  // The pool's per-position arrays now hold `positions` entries (it only grows): per-position
  // arrays of the policy grow with it.
  virtual void grow(std::size_t /*positions*/) {}

  // One access at `step` (steps never decrease; several accesses may share a step), after the pool
  // looked its selection up: `selected` are the positions selected outside the pinned window,
  // ascending; the hits among them are stamped pool.tick, the misses are not pooled yet. Not
  // called by access_delta.
  virtual void selected(int /*step*/, std::span<const std::int64_t> /*selected*/, const PoolResidency& /*pool*/) {}

  // Removes up to `count` pooled entries, none selected now, with pool.remove(); returns how many
  // (fewer only if the policy holds no other entry, which the pool reports as a bug).
  virtual std::int64_t evict(std::int64_t count, PoolResidency& pool) = 0;

  // After the misses were inserted (stamped pool.tick and counted in pool.size): `inserted`
  // ascending, `selected` as in selected(). Entries selected together count as selected in
  // position order, whether they hit or missed.
  virtual void inserted(std::span<const std::int64_t> /*selected*/, std::span<const std::int64_t> /*inserted*/,
                        const PoolResidency& /*pool*/) {}

  // Before the 32-bit ticks would wrap: restamp every pooled entry with ticks from 1 in the same
  // order, and any ticks the policy holds alike; returns the largest tick used. The default keeps
  // the order of the stamps (enough for a policy that holds no ticks of its own).
  virtual std::uint32_t renumber(PoolResidency& pool);

  // Whether the pool may be fed changes of the selection (GpuPool::access_delta): selected entries
  // then stay out of the policy's order until released(); inserted() gets an empty `selected`.
  [[nodiscard]] virtual bool supports_delta() const { return false; }
  // access_delta only: entries the new selection dropped, ascending, stamped `tick` (the access
  // that last selected them), join the order as that access would have placed them.
  virtual void released(std::span<const std::int64_t> dropped, std::uint32_t tick, const PoolResidency& pool);

  // Full check of the policy's structure against the pool (InternalError describing the first
  // problem): every pooled entry ordered once, except those in `kept_out` (a bitmap by position of
  // the entries access_delta keeps out of the order; empty otherwise).
  virtual void check(const PoolResidency& /*pool*/, std::span<const std::uint64_t> /*kept_out*/) const {}
};

// Makes the policy for a pool; it reads the parameters it declares (its registry line's params) from
// PoolConfig::params.
using EvictionFactory = std::unique_ptr<EvictionPolicy> (*)(const PoolConfig& config);

// The registered eviction policies, in registry order (eviction_registry.cpp).
[[nodiscard]] std::span<const Registered<EvictionFactory>> eviction_policies();
// The policy of a pool that names none (the ESS paper's), everywhere: scenarios, the runner, tests.
inline constexpr std::string_view kDefaultEviction = "lru";

std::unique_ptr<EvictionPolicy> make_lru_eviction(const PoolConfig& config);
std::unique_ptr<EvictionPolicy> make_fifo_eviction(const PoolConfig& config);
std::unique_ptr<EvictionPolicy> make_heat_eviction(const PoolConfig& config);
std::span<const PolicyParam> heat_eviction_params();

}  // namespace ess
