// lru: the least recently selected entry leaves (the ESS paper's policy, arXiv 2512.10576 section
// 3). Entries selected together count as selected in position order, whether they hit or missed,
// which keeps LRU a stack algorithm: a bigger pool holds a superset of a smaller one (tested).
#include <memory>

#include "sim/offload/eviction.h"
#include "sim/offload/eviction_queue.h"

namespace ess {

namespace {

class LruEviction final : public EvictionPolicy {
 public:
  void grow(std::size_t positions) override { queue_.grow(positions); }
  std::int64_t evict(std::int64_t count, PoolResidency& pool) override { return queue_.evict(count, pool); }
  void inserted(std::span<const std::int64_t> selected, std::span<const std::int64_t> /*inserted*/,
                const PoolResidency& pool) override {
    // Every entry selected now goes to the back, in position order; its older entry goes stale.
    queue_.reserve(pool.capacity);
    queue_.push_all(selected, pool.tick);
    queue_.compact_if_stale(pool);
  }
  std::uint32_t renumber(PoolResidency& pool) override { return queue_.renumber(pool); }

  // Entries selected at consecutive accesses stay out of the queue; one joins it, stamped with the
  // access that last selected it, when a selection drops it: newer than every queued entry, in
  // position order, as access() would have queued it then.
  [[nodiscard]] bool supports_delta() const override { return true; }
  void released(std::span<const std::int64_t> dropped, std::uint32_t tick, const PoolResidency& /*pool*/) override {
    queue_.push_all(dropped, tick);
  }

  void check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out) const override {
    queue_.check(pool, kept_out, "lru");
  }

 private:
  TickQueue<false> queue_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_eviction(const PoolConfig& /*config*/) {
  return std::make_unique<LruEviction>();
}

}  // namespace ess
