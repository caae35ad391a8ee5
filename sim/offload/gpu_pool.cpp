#include "sim/offload/gpu_pool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ess {

namespace {

// Keys are rebased when the heat scale passes this (the scale for heat_decay 0.5 reaches it after
// about 500 steps); far below the double limit of ~1.8e308, so adding scaled heats cannot overflow.
constexpr double kHeatRebaseScale = 1e150;

// The lru/fifo queue is compacted when it holds more than size + max(this, size / 2) entries, so
// that at least a third of what a compaction reads is stale. Measured at 32K context, 496 pools: a
// slack of 4096 touches five times fewer fresh pages than 2 x size + 8192 and runs the decode steps
// 1.4 times faster, although it compacts more often.
constexpr std::size_t kCompactSlack = 4096;

std::string positions_message(const char* what, std::int64_t a, std::int64_t b) {
  return std::string(what) + " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

}  // namespace

std::string to_string(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::lru: return "lru";
    case EvictionPolicy::fifo: return "fifo";
    case EvictionPolicy::heat: return "heat";
  }
  throw std::invalid_argument("unknown eviction policy value " +
                              std::to_string(static_cast<int>(policy)));
}

const std::vector<std::string>& eviction_policy_names() {
  static const std::vector<std::string> names{"lru", "fifo", "heat"};
  return names;
}

EvictionPolicy parse_eviction_policy(std::string_view name) {
  if (name == "lru") return EvictionPolicy::lru;
  if (name == "fifo") return EvictionPolicy::fifo;
  if (name == "heat") return EvictionPolicy::heat;
  throw std::invalid_argument("unknown eviction policy \"" + std::string(name) +
                              "\" (expected one of: lru, fifo, heat)");
}

void validate(const PoolConfig& config) {
  if (config.capacity < 1) {
    throw std::invalid_argument("pool capacity must be >= 1 entry, got " +
                                std::to_string(config.capacity));
  }
  if (config.capacity > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("pool capacity must be < 2^31 entries, got " +
                                std::to_string(config.capacity));
  }
  if (config.pinned_recent < 0) {
    throw std::invalid_argument("pool pinned_recent must be >= 0, got " +
                                std::to_string(config.pinned_recent));
  }
  if (!(config.heat_decay > 0.0 && config.heat_decay <= 1.0)) {
    throw std::invalid_argument("pool heat_decay must be in (0, 1], got " +
                                std::to_string(config.heat_decay));
  }
  (void)to_string(config.policy);  // throws for a value outside the enum
}

GpuPool::GpuPool(const PoolConfig& config) : config_(config) { validate(config_); }

bool GpuPool::in_pool(std::int64_t position) const {
  return position >= 0 && position < static_cast<std::int64_t>(stamp_.size()) &&
         stamp_[static_cast<std::size_t>(position)] != 0;
}

bool GpuPool::resident(std::int64_t position) const {
  if (position < 0 || position >= last_context_) return false;
  return position >= last_context_ - config_.pinned_recent || in_pool(position);
}

void GpuPool::grow_positions(std::int64_t context) {
  const auto needed = static_cast<std::size_t>(context);
  if (needed <= stamp_.size()) return;
  // Headroom of 1/8: a context that grows by a token per step reallocates every ~context/8 steps.
  const std::size_t grown = std::max(needed + needed / 8, static_cast<std::size_t>(1024));
  stamp_.resize(grown, 0);
  if (config_.policy == EvictionPolicy::fifo) born_.resize(grown, 0);
  if (config_.policy == EvictionPolicy::heat) slot_of_.resize(grown, kNone);
}

// ---- queue (lru, fifo) --------------------------------------------------------------------------

bool GpuPool::live(const QueueEntry& e) const {
  const auto p = static_cast<std::size_t>(e.position);
  const std::uint32_t since = config_.policy == EvictionPolicy::fifo ? born_[p] : stamp_[p];
  return (stamp_[p] != 0) & (since == e.tick);
}

std::size_t GpuPool::compact_threshold() const {
  const auto size = static_cast<std::size_t>(size_);
  return size + std::max(kCompactSlack, size / 2);
}

void GpuPool::compact_queue() {
  std::size_t out = 0;
  for (std::size_t i = queue_head_; i < queue_.size(); ++i) {
    queue_[out] = queue_[i];  // branch-free: kept only if live
    out += static_cast<std::size_t>(live(queue_[i]));
  }
  queue_.resize(out);
  queue_head_ = 0;
}

void GpuPool::renumber_ticks() {
  // Ticks restart at 1 in the same order, so the 32-bit stamps never wrap.
  std::uint32_t t = 0;
  if (config_.policy == EvictionPolicy::heat) {
    for (const std::int32_t s : heap_) {
      stamp_[static_cast<std::size_t>(heat_slots_[static_cast<std::size_t>(s)].position)] = 1;
    }
    t = 1;
  } else {
    compact_queue();
    for (QueueEntry& e : queue_) {
      e.tick = ++t;
      const auto p = static_cast<std::size_t>(e.position);
      stamp_[p] = t;
      if (config_.policy == EvictionPolicy::fifo) born_[p] = t;
    }
    if (mode_ == Mode::delta) {
      // The selected entries are not queued: one tick newer than every queued one.
      ++t;
      for (std::size_t w = 0; w < selected_bits_.size(); ++w) {
        for (std::uint64_t bits = selected_bits_[w]; bits != 0; bits &= bits - 1) {
          stamp_[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))] = t;
        }
      }
      last_access_tick_ = t;
    }
  }
  tick_ = t;
}

std::int64_t GpuPool::evict_queue(std::int64_t count) {
  std::int64_t evicted = 0;
  scratch_kept_.clear();
  while (evicted < count && queue_head_ < queue_.size()) {
    const QueueEntry e = queue_[queue_head_++];
    const auto p = static_cast<std::size_t>(e.position);
    // Stale entries (re-selected later, or evicted already) are skipped; branch-free, since live
    // and stale entries interleave unpredictably.
    const bool is_live = live(e);
    const bool now = stamp_[p] == tick_;
    if (is_live && now) {
      scratch_kept_.push_back(e);  // fifo only: selected now, keeps its place
      continue;
    }
    const bool victim = is_live && !now;
    stamp_[p] = victim ? 0U : stamp_[p];
    evicted += static_cast<std::int64_t>(victim);
  }
  size_ -= evicted;
  // The entries set aside go back in front, in order, into slots the loop has just consumed.
  for (std::size_t i = scratch_kept_.size(); i-- > 0;) queue_[--queue_head_] = scratch_kept_[i];
  return evicted;
}

// ---- heat heap ----------------------------------------------------------------------------------

bool GpuPool::heat_less(std::int32_t a, std::int32_t b) const {
  const HeatSlot& x = heat_slots_[static_cast<std::size_t>(a)];
  const HeatSlot& y = heat_slots_[static_cast<std::size_t>(b)];
  if (x.key != y.key) return x.key < y.key;
  if (x.clock != y.clock) return x.clock < y.clock;
  return x.position < y.position;
}

void GpuPool::heap_sift_up(std::size_t i) {
  const std::int32_t s = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!heat_less(s, heap_[parent])) break;
    heap_[i] = heap_[parent];
    heat_slots_[static_cast<std::size_t>(heap_[i])].heap_index = static_cast<std::int32_t>(i);
    i = parent;
  }
  heap_[i] = s;
  heat_slots_[static_cast<std::size_t>(s)].heap_index = static_cast<std::int32_t>(i);
}

void GpuPool::heap_sift_down(std::size_t i) {
  const std::int32_t s = heap_[i];
  const std::size_t n = heap_.size();
  while (true) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heat_less(heap_[child + 1], heap_[child])) ++child;
    if (!heat_less(heap_[child], s)) break;
    heap_[i] = heap_[child];
    heat_slots_[static_cast<std::size_t>(heap_[i])].heap_index = static_cast<std::int32_t>(i);
    i = child;
  }
  heap_[i] = s;
  heat_slots_[static_cast<std::size_t>(s)].heap_index = static_cast<std::int32_t>(i);
}

void GpuPool::heap_push(std::int32_t s) {
  heap_.push_back(s);
  heap_sift_up(heap_.size() - 1);
}

void GpuPool::heap_erase(std::int32_t s) {
  HeatSlot& slot = heat_slots_[static_cast<std::size_t>(s)];
  const auto i = static_cast<std::size_t>(slot.heap_index);
  slot.heap_index = kNone;
  const std::int32_t last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last element
  heap_[i] = last;
  heat_slots_[static_cast<std::size_t>(last)].heap_index = static_cast<std::int32_t>(i);
  heap_sift_down(i);
  heap_sift_up(static_cast<std::size_t>(heat_slots_[static_cast<std::size_t>(last)].heap_index));
}

void GpuPool::heat_advance_to(int step) {
  if (config_.heat_decay == 1.0) return;  // heats never decay: keys are plain selection counts
  const double elapsed = static_cast<double>(step) - static_cast<double>(heat_base_step_);
  heat_scale_ = std::pow(config_.heat_decay, -elapsed);
  if (heat_scale_ < kHeatRebaseScale) return;
  // Rebase: multiply every key by decay^elapsed so the scale restarts at 1. Very old heats may
  // underflow to equal keys, where the tie-break differs from the old order: rebuild the heap.
  const double factor = 1.0 / heat_scale_;
  for (const std::int32_t s : heap_) heat_slots_[static_cast<std::size_t>(s)].key *= factor;
  heat_base_step_ = step;
  heat_scale_ = 1.0;
  for (std::size_t i = heap_.size() / 2; i-- > 0;) heap_sift_down(i);
}

void GpuPool::heat_touch(std::int64_t position) {
  const std::int32_t s = slot_of_[static_cast<std::size_t>(position)];
  HeatSlot& slot = heat_slots_[static_cast<std::size_t>(s)];
  slot.key += heat_scale_;
  slot.clock = heat_clock_;
  heap_sift_down(static_cast<std::size_t>(slot.heap_index));  // its key only grew
}

void GpuPool::remove_heat(std::int32_t s) {
  HeatSlot& slot = heat_slots_[static_cast<std::size_t>(s)];
  const auto p = static_cast<std::size_t>(slot.position);
  slot_of_[p] = kNone;
  stamp_[p] = 0;
  heap_erase(s);
  slot.position = kNone;
  free_slots_.push_back(s);
  --size_;
}

std::int64_t GpuPool::evict_heat(std::int64_t count) {
  // Entries selected now may be the coolest; set them aside and restore them afterwards.
  std::int64_t evicted = 0;
  std::vector<std::int32_t> kept;
  while (evicted < count && !heap_.empty()) {
    const std::int32_t s = heap_.front();
    const auto p = static_cast<std::size_t>(heat_slots_[static_cast<std::size_t>(s)].position);
    if (stamp_[p] == tick_) {
      heap_erase(s);
      kept.push_back(s);
      continue;
    }
    remove_heat(s);
    ++evicted;
  }
  for (const std::int32_t s : kept) heap_push(s);
  return evicted;
}

// ---- pool operations ----------------------------------------------------------------------------

void GpuPool::insert(std::int64_t position) {
  const auto p = static_cast<std::size_t>(position);
  stamp_[p] = tick_;
  ++size_;
  switch (config_.policy) {
    case EvictionPolicy::lru: break;  // access() queues every selected entry in one pass
    case EvictionPolicy::fifo:
      born_[p] = tick_;
      queue_.push_back({static_cast<std::int32_t>(position), tick_});
      break;
    case EvictionPolicy::heat: {
      std::int32_t s = kNone;
      if (!free_slots_.empty()) {
        s = free_slots_.back();
        free_slots_.pop_back();
      } else {
        s = static_cast<std::int32_t>(heat_slots_.size());
        heat_slots_.emplace_back();
      }
      HeatSlot& slot = heat_slots_[static_cast<std::size_t>(s)];
      slot.key = heat_scale_;  // one selection: heat 1 now
      slot.clock = heat_clock_;
      slot.position = static_cast<std::int32_t>(position);
      slot_of_[p] = s;
      heap_push(s);
      break;
    }
  }
}

std::int64_t GpuPool::evict(std::int64_t count) {
  const std::int64_t evicted =
      config_.policy == EvictionPolicy::heat ? evict_heat(count) : evict_queue(count);
  if (evicted < count) {
    throw std::logic_error("GpuPool: could evict only " + std::to_string(evicted) + " of " +
                           std::to_string(count) + " entries");
  }
  return evicted;
}

std::int64_t GpuPool::set_capacity(std::int64_t capacity) {
  PoolConfig changed = config_;
  changed.capacity = capacity;
  validate(changed);
  config_.capacity = capacity;
  if (size_ <= capacity) return 0;
  // A fresh tick, so that no entry counts as selected now and every one may be evicted.
  if (tick_ >= tick_limit_) renumber_ticks();
  ++tick_;
  return evict(size_ - capacity);
}

// ---- shared by access() and access_delta() ------------------------------------------------------

void GpuPool::check_progress(std::int64_t context, int step, const char* where) const {
  const std::string who = std::string("GpuPool::") + where;
  if (context < 0 || context > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument(who + ": context " + std::to_string(context) + " outside [0, 2^31)");
  }
  if (started_ && context < last_context_) {
    throw std::invalid_argument(
        positions_message((who + ": context decreased (previous, now)").c_str(), last_context_, context));
  }
  if (started_ && step < last_step_) {
    throw std::invalid_argument(positions_message((who + ": step decreased (previous, now)").c_str(), last_step_, step));
  }
}

std::int64_t GpuPool::missed_runs() const {
  std::int64_t runs = 0;
  for (std::size_t i = 0; i < scratch_missed_.size(); ++i) {
    if (i == 0 || scratch_missed_[i] != scratch_missed_[i - 1] + 1) ++runs;
  }
  return runs;
}

void GpuPool::reserve_queue() {
  // The queue never exceeds the compaction threshold plus one selection (<= capacity): reserving
  // that once avoids reallocating (and copying) it as it grows.
  const auto capacity = static_cast<std::size_t>(config_.capacity);
  const std::size_t most = capacity + std::max(kCompactSlack, capacity / 2) + capacity;
  if (queue_.capacity() < most) queue_.reserve(most + most / 4);  // room for a growing capacity
}

void GpuPool::compact_if_stale() {
  // At least a third of the entries are stale: amortised O(1) per push.
  if (queue_.size() - queue_head_ > compact_threshold()) compact_queue();
}

void GpuPool::check_size() const {
  if (size_ > config_.capacity) {
    throw std::logic_error("GpuPool invariant: pool holds " + std::to_string(size_) +
                           " entries, capacity " + std::to_string(config_.capacity));
  }
}

AccessResult GpuPool::access(const std::vector<std::int64_t>& selected, std::int64_t context,
                             int step, std::vector<std::int64_t>* missed) {
  // ---- preconditions (caller errors) ----
  check_progress(context, step, "access");
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (selected[i] < 0 || selected[i] >= context) {
      throw std::invalid_argument("GpuPool::access: selected position " +
                                  std::to_string(selected[i]) + " outside [0, " +
                                  std::to_string(context) + ")");
    }
    if (i > 0 && selected[i] <= selected[i - 1]) {
      throw std::invalid_argument(positions_message(
          "GpuPool::access: selection not strictly ascending at", selected[i - 1], selected[i]));
    }
  }
  const std::int64_t pin_start = std::max<std::int64_t>(0, context - config_.pinned_recent);
  const auto unpinned = static_cast<std::size_t>(
      std::lower_bound(selected.begin(), selected.end(), pin_start) - selected.begin());
  if (static_cast<std::int64_t>(unpinned) > config_.capacity) {
    throw std::invalid_argument("GpuPool::access: " + std::to_string(unpinned) +
                                " selected entries outside the pinned window exceed the pool "
                                "capacity of " + std::to_string(config_.capacity));
  }

  enter(Mode::full);
  if (!started_) heat_base_step_ = step;
  started_ = true;
  last_step_ = step;
  last_context_ = context;
  grow_positions(context);
  if (config_.policy == EvictionPolicy::heat) {
    heat_advance_to(step);
    ++heat_clock_;
  }
  if (tick_ >= tick_limit_) renumber_ticks();
  ++tick_;

  // ---- pass 1: hits (stamped with this tick: protected from eviction) and misses ----
  AccessResult result;
  if (config_.policy == EvictionPolicy::heat) {
    scratch_missed_.clear();
    for (std::size_t i = 0; i < unpinned; ++i) {
      const auto p = static_cast<std::size_t>(selected[i]);
      if (stamp_[p] != 0) {
        ++result.hits;
        stamp_[p] = tick_;
        heat_touch(selected[i]);
      } else {
        scratch_missed_.push_back(selected[i]);
      }
    }
  } else {
    // Branch-free (hits and misses interleave unpredictably). The positions are known in advance:
    // prefetching their stamps helps when hundreds of pools take turns and this one is cold.
    constexpr std::size_t kPrefetchAhead = 16;
    scratch_missed_.resize(unpinned);
    std::size_t missed_count = 0;
    for (std::size_t i = 0; i < unpinned; ++i) {
      if (i + kPrefetchAhead < unpinned) {
        __builtin_prefetch(&stamp_[static_cast<std::size_t>(selected[i + kPrefetchAhead])], 1);
      }
      const auto p = static_cast<std::size_t>(selected[i]);
      const bool hit = stamp_[p] != 0;
      stamp_[p] = hit ? tick_ : 0U;
      result.hits += static_cast<std::int64_t>(hit);
      scratch_missed_[missed_count] = selected[i];
      missed_count += static_cast<std::size_t>(!hit);
    }
    scratch_missed_.resize(missed_count);
  }
  result.pinned_hits = static_cast<std::int64_t>(selected.size() - unpinned);
  result.hits += result.pinned_hits;
  result.misses = static_cast<std::int64_t>(scratch_missed_.size());
  result.runs = missed_runs();

  // ---- eviction, then pass 2: insert the misses; lru requeues every selected entry in position
  // order, so the order among entries selected together does not depend on which of them were hits
  // (this keeps LRU a stack algorithm: a larger pool always holds a superset of a smaller one) ----
  const std::int64_t need = size_ + result.misses - config_.capacity;
  if (need > 0 && fault_ != TestFault::skip_evictions) result.evictions = evict(need);
  bool forget = fault_ == TestFault::forget_one_insert;
  for (const std::int64_t p : scratch_missed_) {
    if (forget) {
      forget = false;
      continue;
    }
    insert(p);  // lru: stamps only, queued below with the hits
  }
  if (config_.policy != EvictionPolicy::heat) reserve_queue();
  if (config_.policy == EvictionPolicy::lru) {
    // Every entry selected now goes to the back, in position order: one branch-free copy.
    const std::size_t base = queue_.size();
    queue_.resize(base + unpinned);
    for (std::size_t i = 0; i < unpinned; ++i) {
      queue_[base + i] = {static_cast<std::int32_t>(selected[i]), tick_};
    }
  }
  if (config_.policy != EvictionPolicy::heat) compact_if_stale();
  if (fault_ == TestFault::count_extra_hit) ++result.hits;

  // ---- invariants (release builds too) ----
  check_size();
  for (std::size_t i = 0; i < unpinned; ++i) {
    if (stamp_[static_cast<std::size_t>(selected[i])] != tick_) {
      throw std::logic_error("GpuPool invariant: selected position " + std::to_string(selected[i]) +
                             " is not resident after the access");
    }
  }
  if (result.hits + result.misses != static_cast<std::int64_t>(selected.size())) {
    throw std::logic_error("GpuPool invariant: hits " + std::to_string(result.hits) +
                           " + misses " + std::to_string(result.misses) + " != selected " +
                           std::to_string(selected.size()));
  }

  if (missed != nullptr) missed->assign(scratch_missed_.begin(), scratch_missed_.end());
  return result;
}

void GpuPool::enter(Mode mode) {
  if (mode_ != Mode::unused && mode_ != mode) {
    throw std::logic_error("GpuPool: access() and access_delta() calls mixed on one pool");
  }
  mode_ = mode;
}

AccessResult GpuPool::access_delta(const SelectionDelta& delta, std::int64_t context, int step,
                                   std::vector<std::int64_t>* missed) {
  // ---- preconditions (caller errors) ----
  if (config_.policy != EvictionPolicy::lru || config_.pinned_recent != 0) {
    throw std::invalid_argument("GpuPool::access_delta: only for an lru pool without a pinned window (this one: " +
                                to_string(config_.policy) + ", pinned_recent " +
                                std::to_string(config_.pinned_recent) + ")");
  }
  check_progress(context, step, "access_delta");
  enter(Mode::delta);
  grow_positions(context);
  const auto words = static_cast<std::size_t>((context + 63) / 64);
  if (selected_bits_.size() < words) selected_bits_.resize(std::max(words, stamp_.size() / 64 + 1), 0);
  const auto is_selected = [this](std::int64_t p) {
    return (selected_bits_[static_cast<std::size_t>(p >> 6)] >> (p & 63)) & 1U;
  };
  const auto check = [&](const std::vector<std::int64_t>& list, const char* name, bool selected) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i] < 0 || list[i] >= context) {
        throw std::invalid_argument("GpuPool::access_delta: " + std::string(name) + " position " +
                                    std::to_string(list[i]) + " outside [0, " + std::to_string(context) + ")");
      }
      if (i > 0 && list[i] <= list[i - 1]) {
        throw std::invalid_argument(positions_message(
            (std::string("GpuPool::access_delta: ") + name + " not strictly ascending at").c_str(), list[i - 1],
            list[i]));
      }
      if (static_cast<bool>(is_selected(list[i])) != selected) {
        throw std::invalid_argument("GpuPool::access_delta: " + std::string(name) + " position " +
                                    std::to_string(list[i]) + (selected ? " was not" : " was already") +
                                    " selected by the previous access");
      }
    }
  };
  check(delta.removed, "removed", true);
  check(delta.added, "added", false);
  const std::int64_t count = selected_count_ - static_cast<std::int64_t>(delta.removed.size()) +
                             static_cast<std::int64_t>(delta.added.size());
  if (count != delta.selected) {
    throw std::invalid_argument("GpuPool::access_delta: the change leaves " + std::to_string(count) +
                                " entries selected, the delta says " + std::to_string(delta.selected));
  }
  if (count > config_.capacity) {
    throw std::invalid_argument("GpuPool::access_delta: " + std::to_string(count) +
                                " selected entries exceed the pool capacity of " +
                                std::to_string(config_.capacity));
  }

  started_ = true;
  last_step_ = step;
  last_context_ = context;
  if (tick_ >= tick_limit_) renumber_ticks();
  const std::uint32_t previous = last_access_tick_;
  ++tick_;

  // Dropped entries join the back of the queue, stamped with the access that last selected them:
  // newer than every queued entry, in position order, as access() would have queued them then.
  for (const std::int64_t p : delta.removed) {
    const auto i = static_cast<std::size_t>(p);
    if (stamp_[i] == 0) {
      throw std::logic_error("GpuPool invariant: selected position " + std::to_string(p) + " is not resident");
    }
    selected_bits_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
    stamp_[i] = previous;
    queue_.push_back({static_cast<std::int32_t>(p), previous});
  }
  // Added entries: hits leave the queue (their entry goes stale), misses are fetched.
  AccessResult result;
  scratch_missed_.clear();
  for (const std::int64_t p : delta.added) {
    const auto i = static_cast<std::size_t>(p);
    selected_bits_[i >> 6] |= std::uint64_t{1} << (i & 63);
    if (stamp_[i] != 0) {
      stamp_[i] = tick_;
    } else {
      scratch_missed_.push_back(p);
    }
  }
  result.misses = static_cast<std::int64_t>(scratch_missed_.size());
  result.hits = count - result.misses;
  result.runs = missed_runs();
  // The queue holds only unselected entries, so its oldest live ones are the victims.
  const std::int64_t need = size_ + result.misses - config_.capacity;
  if (need > 0) result.evictions = evict(need);
  for (const std::int64_t p : scratch_missed_) insert(p);
  selected_count_ = count;
  last_access_tick_ = tick_;
  reserve_queue();
  compact_if_stale();

  // ---- invariants (release builds too) ----
  check_size();
  for (const std::int64_t p : delta.added) {
    if (stamp_[static_cast<std::size_t>(p)] != tick_) {
      throw std::logic_error("GpuPool invariant: selected position " + std::to_string(p) +
                             " is not resident after the access");
    }
  }
  if (missed != nullptr) missed->assign(scratch_missed_.begin(), scratch_missed_.end());
  return result;
}

void GpuPool::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("GpuPool invariant: " + what); };
  if (size_ > config_.capacity) {
    fail("pool holds " + std::to_string(size_) + " entries, capacity " +
         std::to_string(config_.capacity));
  }
  std::int64_t pooled = 0;
  for (std::size_t p = 0; p < stamp_.size(); ++p) {
    if (stamp_[p] == 0) continue;
    ++pooled;
    if (stamp_[p] > tick_) fail("position " + std::to_string(p) + " stamped in the future");
    if (config_.policy == EvictionPolicy::heat) {
      const std::int32_t s = slot_of_[p];
      if (s < 0 || static_cast<std::size_t>(s) >= heat_slots_.size() ||
          heat_slots_[static_cast<std::size_t>(s)].position != static_cast<std::int32_t>(p)) {
        fail("position " + std::to_string(p) + " maps to a slot that does not hold it");
      }
    }
  }
  if (pooled != size_) fail(std::to_string(pooled) + " positions pooled, size " + std::to_string(size_));
  if (config_.policy == EvictionPolicy::heat) {
    if (static_cast<std::int64_t>(heap_.size()) != size_) fail("heap size differs from pool size");
    for (std::size_t i = 0; i < heap_.size(); ++i) {
      const std::int32_t s = heap_[i];
      if (heat_slots_[static_cast<std::size_t>(s)].heap_index != static_cast<std::int32_t>(i)) {
        fail("heap index out of date");
      }
      if (i > 0 && heat_less(s, heap_[(i - 1) / 2])) fail("heap order violated");
    }
  } else {
    std::vector<bool> seen(stamp_.size(), false);
    std::int64_t live_entries = 0;
    std::uint32_t previous_tick = 0;
    for (std::size_t i = queue_head_; i < queue_.size(); ++i) {
      if (!live(queue_[i])) continue;
      const auto p = static_cast<std::size_t>(queue_[i].position);
      if (seen[p]) fail("position " + std::to_string(p) + " queued twice");
      seen[p] = true;
      if (queue_[i].tick < previous_tick) fail("eviction queue out of order");
      previous_tick = queue_[i].tick;
      ++live_entries;
    }
    // access_delta keeps the selected entries out of the queue.
    std::int64_t selected = 0;
    for (std::size_t w = 0; w < selected_bits_.size(); ++w) {
      for (std::uint64_t bits = selected_bits_[w]; bits != 0; bits &= bits - 1) {
        const std::size_t p = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (p >= stamp_.size() || stamp_[p] == 0) fail("selected position " + std::to_string(p) + " not pooled");
        if (seen[p]) fail("selected position " + std::to_string(p) + " also queued");
        ++selected;
      }
    }
    if (selected != selected_count_) fail("selected count out of date");
    if (live_entries + selected != size_) {
      fail(std::to_string(live_entries) + " live queue entries and " + std::to_string(selected) +
           " selected ones, size " + std::to_string(size_));
    }
  }
}

}  // namespace ess
