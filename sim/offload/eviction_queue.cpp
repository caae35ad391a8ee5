#include "sim/offload/eviction_queue.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"

namespace ess {

namespace {

// The queue is compacted when it holds more than size + max(this, size / 2) entries, so that at
// least a third of what a compaction reads is stale. Measured at 32K context, 496 pools: a slack of
// 4096 touches five times fewer fresh pages than 2 x size + 8192 and runs the decode steps 1.4
// times faster, although it compacts more often.
constexpr std::size_t kCompactSlack = 4096;

}  // namespace

template <bool ByArrival>
void TickQueue<ByArrival>::grow(std::size_t positions) {
  if constexpr (ByArrival) arrival_.resize(positions, 0);
}

template <bool ByArrival>
bool TickQueue<ByArrival>::live(const Entry& e, const std::vector<std::uint32_t>& stamp) const {
  const auto p = static_cast<std::size_t>(e.position);
  std::uint32_t since = 0;
  if constexpr (ByArrival) {
    since = arrival_[p];
  } else {
    since = stamp[p];
  }
  return (stamp[p] != 0) & (since == e.tick);
}

template <bool ByArrival>
void TickQueue<ByArrival>::push_all(std::span<const std::int64_t> positions, std::uint32_t tick) {
  const std::size_t base = queue_.size();
  queue_.resize(base + positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if constexpr (ByArrival) arrival_[static_cast<std::size_t>(positions[i])] = tick;
    queue_[base + i] = {static_cast<std::int32_t>(positions[i]), tick};
  }
}

template <bool ByArrival>
std::size_t TickQueue<ByArrival>::compact_threshold(std::int64_t size) const {
  const auto s = static_cast<std::size_t>(size);
  return s + std::max(kCompactSlack, s / 2);
}

template <bool ByArrival>
void TickQueue<ByArrival>::compact(const std::vector<std::uint32_t>& stamp) {
  std::size_t out = 0;
  for (std::size_t i = head_; i < queue_.size(); ++i) {
    queue_[out] = queue_[i];  // branch-free: kept only if live
    out += static_cast<std::size_t>(live(queue_[i], stamp));
  }
  queue_.resize(out);
  head_ = 0;
}

template <bool ByArrival>
void TickQueue<ByArrival>::compact_if_stale(const PoolResidency& pool) {
  if (queue_.size() - head_ > compact_threshold(pool.size)) compact(pool.stamp);
}

template <bool ByArrival>
void TickQueue<ByArrival>::reserve(std::int64_t capacity) {
  // The queue never exceeds the compaction threshold plus one selection (<= capacity): reserving
  // that once avoids reallocating (and copying) it as it grows.
  const auto c = static_cast<std::size_t>(capacity);
  const std::size_t most = c + std::max(kCompactSlack, c / 2) + c;
  if (queue_.capacity() < most) queue_.reserve(most + most / 4);  // room for a growing capacity
}

template <bool ByArrival>
std::int64_t TickQueue<ByArrival>::evict(std::int64_t count, PoolResidency& pool) {
  std::vector<std::uint32_t>& stamp = pool.stamp;
  const std::uint32_t tick = pool.tick;
  std::int64_t evicted = 0;
  scratch_kept_.clear();
  while (evicted < count && head_ < queue_.size()) {
    const Entry e = queue_[head_++];
    const auto p = static_cast<std::size_t>(e.position);
    // Stale entries (re-selected later, or evicted already) are skipped; branch-free, since live
    // and stale entries interleave unpredictably.
    const bool is_live = live(e, stamp);
    const bool now = stamp[p] == tick;
    if (is_live && now) {
      scratch_kept_.push_back(e);  // fifo only: selected now, keeps its place
      continue;
    }
    const bool victim = is_live && !now;
    stamp[p] = victim ? 0U : stamp[p];
    evicted += static_cast<std::int64_t>(victim);
  }
  pool.size -= evicted;
  // The entries set aside go back in front, in order, into slots the loop has just consumed.
  for (std::size_t i = scratch_kept_.size(); i-- > 0;) queue_[--head_] = scratch_kept_[i];
  return evicted;
}

template <bool ByArrival>
std::uint32_t TickQueue<ByArrival>::renumber(PoolResidency& pool) {
  compact(pool.stamp);
  std::uint32_t t = 0;
  for (Entry& e : queue_) {
    e.tick = ++t;
    const auto p = static_cast<std::size_t>(e.position);
    pool.stamp[p] = t;
    if constexpr (ByArrival) arrival_[p] = t;
  }
  return t;
}

template <bool ByArrival>
void TickQueue<ByArrival>::check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out,
                                 std::string_view policy) const {
  const auto fail = [policy](const std::string& what) {
    throw InternalError("GpuPool invariant (" + std::string(policy) + " queue): " + what);
  };
  std::vector<bool> seen(pool.stamp.size(), false);
  std::int64_t live_entries = 0;
  std::uint32_t previous_tick = 0;
  for (std::size_t i = head_; i < queue_.size(); ++i) {
    if (!live(queue_[i], pool.stamp)) continue;
    const auto p = static_cast<std::size_t>(queue_[i].position);
    if (seen[p]) fail("position " + std::to_string(p) + " queued twice");
    seen[p] = true;
    if (queue_[i].tick < previous_tick) fail("eviction queue out of order");
    previous_tick = queue_[i].tick;
    ++live_entries;
  }
  std::int64_t kept = 0;
  for (std::size_t w = 0; w < kept_out.size(); ++w) {
    for (std::uint64_t bits = kept_out[w]; bits != 0; bits &= bits - 1) {
      const std::size_t p = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      if (p < seen.size() && seen[p]) fail("selected position " + std::to_string(p) + " also queued");
      ++kept;
    }
  }
  if (live_entries + kept != pool.size) {
    fail(std::to_string(live_entries) + " live queue entries and " + std::to_string(kept) + " selected ones, size " +
         std::to_string(pool.size));
  }
}

template class TickQueue<false>;
template class TickQueue<true>;

}  // namespace ess
