// The eviction order shared by lru (eviction_lru.cpp) and fifo (eviction_fifo.cpp): a queue of
// (position, tick) entries, front = next victim, with lazy deletion. An entry is live while its
// position is pooled and the position's key tick still equals the entry's; the key is the pool's
// stamp (lru: the last selection) or, ByArrival, the tick of insertion kept here (fifo). A
// re-selected lru entry is pushed again and its old entry goes stale; stale entries are dropped
// when the front reaches them or on compaction. So a hit costs one stamp write and one append, no
// pointer chasing. Internal to sim/offload.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/offload/eviction.h"

namespace ess {

template <bool ByArrival>
class TickQueue {
 public:
  void grow(std::size_t positions);
  // Appends every position (ascending) with one tick, in one branch-free copy; ByArrival also
  // records it as their arrival.
  void push_all(std::span<const std::int64_t> positions, std::uint32_t tick);
  // The oldest live entries not selected now leave (pool.stamp cleared, pool.size reduced); entries
  // selected now keep their place (fifo). Returns how many left.
  std::int64_t evict(std::int64_t count, PoolResidency& pool);
  // Reserves room for the most entries the queue can hold at this capacity (no reallocation).
  void reserve(std::int64_t capacity);
  // Compacts once at least a third of the entries are stale: amortised O(1) per push.
  void compact_if_stale(const PoolResidency& pool);
  // Restamps the queued entries 1, 2, .. in queue order; returns the last tick used.
  std::uint32_t renumber(PoolResidency& pool);
  // Each live entry's position once, in tick order, none in `kept_out`; live + kept out = size.
  void check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out, std::string_view policy) const;

 private:
  struct Entry {
    std::int32_t position;
    std::uint32_t tick;
  };
  [[nodiscard]] bool live(const Entry& e, const std::vector<std::uint32_t>& stamp) const;
  [[nodiscard]] std::size_t compact_threshold(std::int64_t size) const;
  void compact(const std::vector<std::uint32_t>& stamp);

  std::vector<Entry> queue_;
  std::size_t head_ = 0;
  std::vector<Entry> scratch_kept_;
  std::vector<std::uint32_t> arrival_;  // ByArrival, by position: tick of insertion
};

extern template class TickQueue<false>;
extern template class TickQueue<true>;

}  // namespace ess
