// heat: every selection adds 1 to an entry's heat and every step multiplies all heats by its
// parameter heat_decay (declared below); the lowest heat leaves, ties by least recently selected
// (then lowest position). heat_decay 1 makes it an LFU with LRU tie-break.
//
// A binary min-heap of slots with lazily decayed keys: a key is the heat scaled by
// heat_decay^-(step - base_step_), so a step's uniform decay costs nothing and never reorders the
// heap; keys are rebased before the scale grows out of double range. An eviction is O(log pool).
#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"
#include "sim/offload/eviction.h"
#include "sim/offload/gpu_pool.h"

namespace ess {

namespace {

// Keys are rebased when the heat scale passes this (the scale for heat_decay 0.5 reaches it after
// about 500 steps); far below the double limit of ~1.8e308, so adding scaled heats cannot overflow.
constexpr double kHeatRebaseScale = 1e150;

constexpr std::int32_t kNone = -1;

const auto kHeatParams = std::to_array<PolicyParam>({
    {"heat_decay", "factor applied to every heat once per step (1: an LFU with LRU tie-break)", 0.9,
     0.0, true, 1.0, false},
});

class HeatEviction final : public EvictionPolicy {
 public:
  explicit HeatEviction(double decay) : decay_(decay) {}

  void grow(std::size_t positions) override { slot_of_.resize(positions, kNone); }
  void selected(int step, std::span<const std::int64_t> selected, const PoolResidency& pool) override;
  std::int64_t evict(std::int64_t count, PoolResidency& pool) override;
  void inserted(std::span<const std::int64_t> selected, std::span<const std::int64_t> inserted,
                const PoolResidency& pool) override;
  void check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out) const override;

 private:
  struct Slot {
    double key = 0.0;
    std::uint64_t clock = 0;  // clock_ at the last selection (LRU tie-break)
    std::int32_t position = kNone;
    std::int32_t heap_index = kNone;
  };
  // Heap order: (key, last selection, position).
  [[nodiscard]] bool less(std::int32_t a, std::int32_t b) const;
  void push(std::int32_t slot);
  void erase(std::int32_t slot);
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void advance_to(int step);

  double decay_;
  std::vector<std::int32_t> slot_of_;  // by position: slot or kNone
  std::vector<Slot> slots_;
  std::vector<std::int32_t> free_slots_;
  std::vector<std::int32_t> heap_;
  std::vector<std::int32_t> kept_;  // evict(): entries selected now, set aside
  double scale_ = 1.0;              // decay^-(current step - base_step_)
  int base_step_ = 0;
  bool started_ = false;
  std::uint64_t clock_ = 0;  // one per access
};

bool HeatEviction::less(std::int32_t a, std::int32_t b) const {
  const Slot& x = slots_[static_cast<std::size_t>(a)];
  const Slot& y = slots_[static_cast<std::size_t>(b)];
  if (x.key != y.key) return x.key < y.key;
  if (x.clock != y.clock) return x.clock < y.clock;
  return x.position < y.position;
}

void HeatEviction::sift_up(std::size_t i) {
  const std::int32_t s = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!less(s, heap_[parent])) break;
    heap_[i] = heap_[parent];
    slots_[static_cast<std::size_t>(heap_[i])].heap_index = static_cast<std::int32_t>(i);
    i = parent;
  }
  heap_[i] = s;
  slots_[static_cast<std::size_t>(s)].heap_index = static_cast<std::int32_t>(i);
}

void HeatEviction::sift_down(std::size_t i) {
  const std::int32_t s = heap_[i];
  const std::size_t n = heap_.size();
  while (true) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
    if (!less(heap_[child], s)) break;
    heap_[i] = heap_[child];
    slots_[static_cast<std::size_t>(heap_[i])].heap_index = static_cast<std::int32_t>(i);
    i = child;
  }
  heap_[i] = s;
  slots_[static_cast<std::size_t>(s)].heap_index = static_cast<std::int32_t>(i);
}

void HeatEviction::push(std::int32_t s) {
  heap_.push_back(s);
  sift_up(heap_.size() - 1);
}

void HeatEviction::erase(std::int32_t s) {
  Slot& slot = slots_[static_cast<std::size_t>(s)];
  const auto i = static_cast<std::size_t>(slot.heap_index);
  slot.heap_index = kNone;
  const std::int32_t last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last element
  heap_[i] = last;
  slots_[static_cast<std::size_t>(last)].heap_index = static_cast<std::int32_t>(i);
  sift_down(i);
  sift_up(static_cast<std::size_t>(slots_[static_cast<std::size_t>(last)].heap_index));
}

void HeatEviction::advance_to(int step) {
  if (decay_ == 1.0) return;  // heats never decay: keys are plain selection counts
  const double elapsed = static_cast<double>(step) - static_cast<double>(base_step_);
  scale_ = std::pow(decay_, -elapsed);
  if (scale_ < kHeatRebaseScale) return;
  // Rebase: multiply every key by decay^elapsed so the scale restarts at 1. Very old heats may
  // underflow to equal keys, where the tie-break differs from the old order: rebuild the heap.
  const double factor = 1.0 / scale_;
  for (const std::int32_t s : heap_) slots_[static_cast<std::size_t>(s)].key *= factor;
  base_step_ = step;
  scale_ = 1.0;
  for (std::size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
}

void HeatEviction::selected(int step, std::span<const std::int64_t> selected, const PoolResidency& pool) {
  if (!started_) base_step_ = step;
  started_ = true;
  advance_to(step);
  ++clock_;
  for (const std::int64_t position : selected) {
    if (!pool.pooled(static_cast<std::size_t>(position))) continue;  // a miss, inserted later
    Slot& slot = slots_[static_cast<std::size_t>(slot_of_[static_cast<std::size_t>(position)])];
    slot.key += scale_;
    slot.clock = clock_;
    sift_down(static_cast<std::size_t>(slot.heap_index));  // its key only grew
  }
}

std::int64_t HeatEviction::evict(std::int64_t count, PoolResidency& pool) {
  // Entries selected now may be the coolest; set them aside and restore them afterwards.
  std::int64_t evicted = 0;
  kept_.clear();
  while (evicted < count && !heap_.empty()) {
    const std::int32_t s = heap_.front();
    Slot& slot = slots_[static_cast<std::size_t>(s)];
    const auto p = static_cast<std::size_t>(slot.position);
    erase(s);
    if (pool.selected_now(p)) {
      kept_.push_back(s);
      continue;
    }
    slot_of_[p] = kNone;
    pool.remove(p);
    slot.position = kNone;
    free_slots_.push_back(s);
    ++evicted;
  }
  for (const std::int32_t s : kept_) push(s);
  return evicted;
}

void HeatEviction::inserted(std::span<const std::int64_t> /*selected*/, std::span<const std::int64_t> inserted,
                            const PoolResidency& /*pool*/) {
  for (const std::int64_t position : inserted) {
    std::int32_t s = kNone;
    if (!free_slots_.empty()) {
      s = free_slots_.back();
      free_slots_.pop_back();
    } else {
      s = static_cast<std::int32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[static_cast<std::size_t>(s)];
    slot.key = scale_;  // one selection: heat 1 now
    slot.clock = clock_;
    slot.position = static_cast<std::int32_t>(position);
    slot_of_[static_cast<std::size_t>(position)] = s;
    push(s);
  }
}

void HeatEviction::check(const PoolResidency& pool, std::span<const std::uint64_t> kept_out) const {
  const auto fail = [](const std::string& what) { throw InternalError("GpuPool invariant (heat heap): " + what); };
  for (const std::uint64_t w : kept_out) {
    if (w != 0) fail("entries kept out of the heap (heat takes no deltas)");
  }
  for (std::size_t p = 0; p < pool.stamp.size(); ++p) {
    if (!pool.pooled(p)) continue;
    const std::int32_t s = slot_of_[p];
    if (s < 0 || static_cast<std::size_t>(s) >= slots_.size() ||
        slots_[static_cast<std::size_t>(s)].position != static_cast<std::int32_t>(p)) {
      fail("position " + std::to_string(p) + " maps to a slot that does not hold it");
    }
  }
  if (static_cast<std::int64_t>(heap_.size()) != pool.size) fail("heap size differs from pool size");
  for (std::size_t i = 0; i < heap_.size(); ++i) {
    const std::int32_t s = heap_[i];
    if (slots_[static_cast<std::size_t>(s)].heap_index != static_cast<std::int32_t>(i)) fail("heap index out of date");
    if (i > 0 && less(s, heap_[(i - 1) / 2])) fail("heap order violated");
  }
}

}  // namespace

std::span<const PolicyParam> heat_eviction_params() { return kHeatParams; }

std::unique_ptr<EvictionPolicy> make_heat_eviction(const PoolConfig& config) {
  return std::make_unique<HeatEviction>(config.params.of(kHeatParams[0]));
}

}  // namespace ess
