#include "sim/offload/gpu_pool.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

#include "sim/base/error.h"

namespace ess {

namespace {

std::string positions_message(const char* what, std::int64_t a, std::int64_t b) {
  return std::string(what) + " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

void validate_capacity(std::int64_t capacity) {
  if (capacity < 1) {
    throw InternalError("pool capacity must be >= 1 entry, got " + std::to_string(capacity));
  }
  if (capacity > std::numeric_limits<std::int32_t>::max()) {
    throw InternalError("pool capacity must be < 2^31 entries, got " + std::to_string(capacity));
  }
}

// Every check of validate() but the policy's name.
void validate_numbers(const PoolConfig& config) {
  validate_capacity(config.capacity);
  if (config.pinned_recent < 0) {
    throw InternalError("pool pinned_recent must be >= 0, got " +
                        std::to_string(config.pinned_recent));
  }
  check_values(declared_params(eviction_policies()), config.params, "pool");
}

}  // namespace

void validate(const PoolConfig& config) {
  validate_numbers(config);
  (void)registered(eviction_policies(), "eviction", config.policy);
}

GpuPool::GpuPool(const PoolConfig& config) : config_(config) {
  validate(config_);
  policy_ = registered(eviction_policies(), "eviction", config_.policy).make(config_);
  residency_.capacity = config_.capacity;
}

GpuPool::GpuPool(const PoolConfig& config, std::unique_ptr<EvictionPolicy> policy)
    : config_(config), policy_(std::move(policy)) {
  validate_numbers(config_);
  if (!policy_) throw InternalError("GpuPool: no eviction policy");
  residency_.capacity = config_.capacity;
}

bool GpuPool::takes_delta() const { return policy_->supports_delta() && config_.pinned_recent == 0; }

bool GpuPool::in_pool(std::int64_t position) const {
  return position >= 0 && position < static_cast<std::int64_t>(residency_.stamp.size()) &&
         residency_.stamp[static_cast<std::size_t>(position)] != 0;
}

bool GpuPool::resident(std::int64_t position) const {
  if (position < 0 || position >= last_context_) return false;
  return position >= last_context_ - config_.pinned_recent || in_pool(position);
}

void GpuPool::grow_positions(std::int64_t context) {
  const auto needed = static_cast<std::size_t>(context);
  if (needed <= residency_.stamp.size()) return;
  // Headroom of 1/8: a context that grows by a token per step reallocates every ~context/8 steps.
  const std::size_t grown = std::max(needed + needed / 8, static_cast<std::size_t>(1024));
  residency_.stamp.resize(grown, 0);
  policy_->grow(grown);
}

void GpuPool::renumber_ticks() {
  // Ticks restart at 1 in the same order, so the 32-bit stamps never wrap.
  std::uint32_t t = policy_->renumber(residency_);
  if (mode_ == Mode::delta) {
    // The selected entries are not in the policy's order: one tick newer than every other.
    ++t;
    for (std::size_t w = 0; w < selected_bits_.size(); ++w) {
      for (std::uint64_t bits = selected_bits_[w]; bits != 0; bits &= bits - 1) {
        residency_.stamp[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))] = t;
      }
    }
    last_access_tick_ = t;
  }
  residency_.tick = t;
}

void GpuPool::next_tick() {
  if (residency_.tick >= tick_limit_) renumber_ticks();
  ++residency_.tick;
}

void GpuPool::insert_missed(std::size_t skip) {
  for (std::size_t i = skip; i < scratch_missed_.size(); ++i) {
    residency_.stamp[static_cast<std::size_t>(scratch_missed_[i])] = residency_.tick;
  }
  residency_.size += static_cast<std::int64_t>(scratch_missed_.size() - std::min(skip, scratch_missed_.size()));
}

std::int64_t GpuPool::evict(std::int64_t count) {
  const std::int64_t evicted = policy_->evict(count, residency_);
  if (evicted < count) {
    throw InternalError("GpuPool: could evict only " + std::to_string(evicted) + " of " +
                        std::to_string(count) + " entries");
  }
  return evicted;
}

std::int64_t GpuPool::set_capacity(std::int64_t capacity) {
  validate_capacity(capacity);
  config_.capacity = capacity;
  residency_.capacity = capacity;
  if (residency_.size <= capacity) return 0;
  // A fresh tick, so that no entry counts as selected now and every one may be evicted.
  next_tick();
  return evict(residency_.size - capacity);
}

// ---- shared by access() and access_delta() ------------------------------------------------------

void GpuPool::check_progress(std::int64_t context, int step, const char* where) const {
  const std::string who = std::string("GpuPool::") + where;
  if (context < 0 || context > std::numeric_limits<std::int32_t>::max()) {
    throw InternalError(who + ": context " + std::to_string(context) + " outside [0, 2^31)");
  }
  if (started_ && context < last_context_) {
    throw InputError(
        positions_message((who + ": context decreased (previous, now)").c_str(), last_context_, context));
  }
  if (started_ && step < last_step_) {
    throw InternalError(positions_message((who + ": step decreased (previous, now)").c_str(), last_step_, step));
  }
}

std::int64_t GpuPool::missed_runs() const {
  std::int64_t runs = 0;
  for (std::size_t i = 0; i < scratch_missed_.size(); ++i) {
    if (i == 0 || scratch_missed_[i] != scratch_missed_[i - 1] + 1) ++runs;
  }
  return runs;
}

void GpuPool::check_size() const {
  if (residency_.size > config_.capacity) {
    throw InternalError("GpuPool invariant: pool holds " + std::to_string(residency_.size) +
                        " entries, capacity " + std::to_string(config_.capacity));
  }
}

AccessResult GpuPool::access(const std::vector<std::int64_t>& selected, std::int64_t context,
                             int step, std::vector<std::int64_t>* missed) {
  // ---- preconditions (caller errors) ----
  check_progress(context, step, "access");
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (selected[i] < 0 || selected[i] >= context) {
      throw InternalError("GpuPool::access: selected position " +
                          std::to_string(selected[i]) + " outside [0, " +
                          std::to_string(context) + ")");
    }
    if (i > 0 && selected[i] <= selected[i - 1]) {
      throw InternalError(positions_message(
          "GpuPool::access: selection not strictly ascending at", selected[i - 1], selected[i]));
    }
  }
  const std::int64_t pin_start = std::max<std::int64_t>(0, context - config_.pinned_recent);
  const auto unpinned = static_cast<std::size_t>(
      std::lower_bound(selected.begin(), selected.end(), pin_start) - selected.begin());
  if (static_cast<std::int64_t>(unpinned) > config_.capacity) {
    throw InternalError("GpuPool::access: " + std::to_string(unpinned) +
                        " selected entries outside the pinned window exceed the pool "
                        "capacity of " + std::to_string(config_.capacity));
  }

  enter(Mode::full);
  started_ = true;
  last_step_ = step;
  last_context_ = context;
  grow_positions(context);
  next_tick();
  const std::span<const std::int64_t> pooled_selection(selected.data(), unpinned);

  // ---- pass 1: hits (stamped with this tick: protected from eviction) and misses ----
  // Branch-free (hits and misses interleave unpredictably). The positions are known in advance:
  // prefetching their stamps helps when hundreds of pools take turns and this one is cold.
  AccessResult result;
  std::vector<std::uint32_t>& stamp = residency_.stamp;
  const std::uint32_t tick = residency_.tick;
  constexpr std::size_t kPrefetchAhead = 16;
  scratch_missed_.resize(unpinned);
  std::size_t missed_count = 0;
  for (std::size_t i = 0; i < unpinned; ++i) {
    if (i + kPrefetchAhead < unpinned) {
      __builtin_prefetch(&stamp[static_cast<std::size_t>(selected[i + kPrefetchAhead])], 1);
    }
    const auto p = static_cast<std::size_t>(selected[i]);
    const bool hit = stamp[p] != 0;
    stamp[p] = hit ? tick : 0U;
    result.hits += static_cast<std::int64_t>(hit);
    scratch_missed_[missed_count] = selected[i];
    missed_count += static_cast<std::size_t>(!hit);
  }
  scratch_missed_.resize(missed_count);
  policy_->selected(step, pooled_selection, residency_);
  result.pinned_hits = static_cast<std::int64_t>(selected.size() - unpinned);
  result.hits += result.pinned_hits;
  result.misses = static_cast<std::int64_t>(scratch_missed_.size());
  result.runs = missed_runs();

  // ---- eviction (never an entry selected now), then pass 2: insert the misses ----
  const std::int64_t need = residency_.size + result.misses - config_.capacity;
  if (need > 0 && fault_ != TestFault::skip_evictions) result.evictions = evict(need);
  const std::size_t skip = std::min<std::size_t>(fault_ == TestFault::forget_one_insert ? 1 : 0, missed_count);
  insert_missed(skip);
  policy_->inserted(pooled_selection, std::span<const std::int64_t>(scratch_missed_).subspan(skip), residency_);
  if (fault_ == TestFault::count_extra_hit) ++result.hits;

  // ---- invariants (release builds too) ----
  check_size();
  for (std::size_t i = 0; i < unpinned; ++i) {
    if (stamp[static_cast<std::size_t>(selected[i])] != tick) {
      throw InternalError("GpuPool invariant: selected position " + std::to_string(selected[i]) +
                          " is not resident after the access");
    }
  }
  if (result.hits + result.misses != static_cast<std::int64_t>(selected.size())) {
    throw InternalError("GpuPool invariant: hits " + std::to_string(result.hits) +
                        " + misses " + std::to_string(result.misses) + " != selected " +
                        std::to_string(selected.size()));
  }

  if (missed != nullptr) missed->assign(scratch_missed_.begin(), scratch_missed_.end());
  return result;
}

void GpuPool::enter(Mode mode) {
  if (mode_ != Mode::unused && mode_ != mode) {
    throw InternalError("GpuPool: access() and access_delta() calls mixed on one pool");
  }
  mode_ = mode;
}

AccessResult GpuPool::access_delta(const SelectionDelta& delta, std::int64_t context, int step,
                                   std::vector<std::int64_t>* missed) {
  // ---- preconditions (caller errors) ----
  if (!takes_delta()) {
    throw InternalError(
        "GpuPool::access_delta: only for a pool whose eviction policy supports deltas, without a pinned window "
        "(this one: " + config_.policy + (policy_->supports_delta() ? "" : ", no deltas") + ", pinned_recent " +
        std::to_string(config_.pinned_recent) + ")");
  }
  check_progress(context, step, "access_delta");
  enter(Mode::delta);
  grow_positions(context);
  std::vector<std::uint32_t>& stamp = residency_.stamp;
  const auto words = static_cast<std::size_t>((context + 63) / 64);
  if (selected_bits_.size() < words) selected_bits_.resize(std::max(words, stamp.size() / 64 + 1), 0);
  const auto is_selected = [this](std::int64_t p) {
    return (selected_bits_[static_cast<std::size_t>(p >> 6)] >> (p & 63)) & 1U;
  };
  const auto check = [&](const std::vector<std::int64_t>& list, const char* name, bool selected) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i] < 0 || list[i] >= context) {
        throw InternalError("GpuPool::access_delta: " + std::string(name) + " position " +
                            std::to_string(list[i]) + " outside [0, " + std::to_string(context) + ")");
      }
      if (i > 0 && list[i] <= list[i - 1]) {
        throw InternalError(positions_message(
            (std::string("GpuPool::access_delta: ") + name + " not strictly ascending at").c_str(), list[i - 1],
            list[i]));
      }
      if (static_cast<bool>(is_selected(list[i])) != selected) {
        throw InternalError("GpuPool::access_delta: " + std::string(name) + " position " +
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
    throw InternalError("GpuPool::access_delta: the change leaves " + std::to_string(count) +
                        " entries selected, the delta says " + std::to_string(delta.selected));
  }
  if (count > config_.capacity) {
    throw InternalError("GpuPool::access_delta: " + std::to_string(count) +
                        " selected entries exceed the pool capacity of " +
                        std::to_string(config_.capacity));
  }

  started_ = true;
  last_step_ = step;
  last_context_ = context;
  next_tick();
  const std::uint32_t previous = last_access_tick_;  // after a renumbering, which updates it
  const std::uint32_t tick = residency_.tick;

  // Dropped entries join the policy's order, stamped with the access that last selected them.
  for (const std::int64_t p : delta.removed) {
    const auto i = static_cast<std::size_t>(p);
    if (stamp[i] == 0) {
      throw InternalError("GpuPool invariant: selected position " + std::to_string(p) + " is not resident");
    }
    selected_bits_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
    stamp[i] = previous;
  }
  policy_->released(delta.removed, previous, residency_);
  // Added entries: hits leave the order (lru: their queue entry goes stale), misses are fetched.
  AccessResult result;
  scratch_missed_.clear();
  for (const std::int64_t p : delta.added) {
    const auto i = static_cast<std::size_t>(p);
    selected_bits_[i >> 6] |= std::uint64_t{1} << (i & 63);
    if (stamp[i] != 0) {
      stamp[i] = tick;
    } else {
      scratch_missed_.push_back(p);
    }
  }
  result.misses = static_cast<std::int64_t>(scratch_missed_.size());
  result.hits = count - result.misses;
  result.runs = missed_runs();
  // The policy holds only unselected entries, so its first victims are never selected now.
  const std::int64_t need = residency_.size + result.misses - config_.capacity;
  if (need > 0) result.evictions = evict(need);
  insert_missed(0);
  policy_->inserted({}, scratch_missed_, residency_);
  selected_count_ = count;
  last_access_tick_ = tick;

  // ---- invariants (release builds too) ----
  check_size();
  for (const std::int64_t p : delta.added) {
    if (stamp[static_cast<std::size_t>(p)] != tick) {
      throw InternalError("GpuPool invariant: selected position " + std::to_string(p) +
                          " is not resident after the access");
    }
  }
  if (missed != nullptr) missed->assign(scratch_missed_.begin(), scratch_missed_.end());
  return result;
}

void GpuPool::check_invariants() const {
  auto fail = [](const std::string& what) { throw InternalError("GpuPool invariant: " + what); };
  const std::vector<std::uint32_t>& stamp = residency_.stamp;
  if (residency_.size > config_.capacity) {
    fail("pool holds " + std::to_string(residency_.size) + " entries, capacity " + std::to_string(config_.capacity));
  }
  std::int64_t pooled = 0;
  for (std::size_t p = 0; p < stamp.size(); ++p) {
    if (stamp[p] == 0) continue;
    ++pooled;
    if (stamp[p] > residency_.tick) fail("position " + std::to_string(p) + " stamped in the future");
  }
  if (pooled != residency_.size) {
    fail(std::to_string(pooled) + " positions pooled, size " + std::to_string(residency_.size));
  }
  // access_delta keeps the selected entries out of the policy's order.
  std::int64_t selected = 0;
  for (std::size_t w = 0; w < selected_bits_.size(); ++w) {
    for (std::uint64_t bits = selected_bits_[w]; bits != 0; bits &= bits - 1) {
      const std::size_t p = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      if (p >= stamp.size() || stamp[p] == 0) fail("selected position " + std::to_string(p) + " not pooled");
      ++selected;
    }
  }
  if (selected != selected_count_) fail("selected count out of date");
  policy_->check(residency_, selected_bits_);
}

}  // namespace ess
