// fifo: the earliest fetched entry leaves, whatever happened since. An entry selected now is not a
// victim and keeps its place at the front.
#include <memory>

#include "sim/offload/eviction.h"
#include "sim/offload/eviction_queue.h"

namespace ess {

namespace {

class FifoEviction final : public EvictionPolicy {
 public:
  void grow(std::size_t positions) override { queue_.grow(positions); }
  std::int64_t evict(std::int64_t count, PoolResidency& pool) override { return queue_.evict(count, pool); }
  void inserted(std::span<const std::int64_t> /*selected*/, std::span<const std::int64_t> inserted,
                const PoolResidency& pool) override {
    queue_.push_all(inserted, pool.tick);
    queue_.reserve(pool.capacity);
    queue_.compact_if_stale(pool);
  }
  std::uint32_t renumber(PoolResidency& pool) override { return queue_.renumber(pool); }
  void check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out) const override {
    queue_.check(pool, kept_out, "fifo");
  }

 private:
  TickQueue<true> queue_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_fifo_eviction(const PoolConfig& /*config*/) {
  return std::make_unique<FifoEviction>();
}

}  // namespace ess
