// One request-layer "sparse memory pool" of ESS (arXiv 2512.10576, section 3): the latent-cache
// entries of one request and one layer that are resident in GPU memory. The full latent cache lives
// in CPU memory; each decode step the indexer selects top-k positions, the selected entries already
// resident are hits, the others are misses fetched from CPU memory into the pool, evicting entries
// chosen by the policy when the pool is full.
//
// Residency is tracked per token position (0 .. context-1) with flat arrays indexed by position,
// grown as the context grows, so an access costs a few tens of ns per selected entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/offload/access_model.h"

namespace ess {

// Which resident entry leaves the pool to make room for a fetched one.
//  - lru:  least recently selected (the paper's policy);
//  - fifo: earliest fetched, whatever happened since;
//  - heat: lowest "heat", where every selection adds 1 to an entry's heat and every step multiplies
//          all heats by PoolConfig::heat_decay; ties go to the least recently selected.
// Entries selected in the current access are never evicted by it, under any policy.
enum class EvictionPolicy { lru, fifo, heat };

// "lru", "fifo", "heat".
[[nodiscard]] std::string to_string(EvictionPolicy policy);
// The inverse of to_string; anything else throws std::invalid_argument listing the choices.
[[nodiscard]] EvictionPolicy parse_eviction_policy(std::string_view name);
// The accepted names, in declaration order (for a configuration reader's choice()).
[[nodiscard]] const std::vector<std::string>& eviction_policy_names();

struct PoolConfig {
  // Entries the pool holds at most (latent-cache rows of this request and layer), >= 1. The pinned
  // window below does not count against it.
  std::int64_t capacity = 0;
  // The newest `pinned_recent` positions (>= context - pinned_recent) are always resident (a hot
  // window of recent tokens, written to GPU memory as they are generated), >= 0. Selecting one is
  // a hit and does not touch the pool. A position that ages out of the window leaves GPU memory
  // unless it is also in the pool; it enters the pool only when selected later (a miss then).
  std::int64_t pinned_recent = 0;
  EvictionPolicy policy = EvictionPolicy::lru;
  // Heat policy only: factor applied to every heat once per step, in (0, 1]; 1 means pure access
  // counts (LFU with LRU tie-break). Checked for every policy.
  double heat_decay = 1.0;
};

// Throws std::invalid_argument naming the field for a capacity < 1, a negative pinned window, a
// heat_decay outside (0, 1] or an unknown policy value.
void validate(const PoolConfig& config);

struct AccessResult {
  std::int64_t hits = 0;         // selected entries already resident (pinned ones included)
  std::int64_t pinned_hits = 0;  // of those, how many were in the pinned recent window
  std::int64_t misses = 0;       // selected entries fetched from CPU memory: selected - hits
  std::int64_t runs = 0;         // maximal runs of consecutive positions among the missed ones
  std::int64_t evictions = 0;    // entries removed from the pool to make room
};

class GpuPool {
 public:
  // Throws std::invalid_argument (see validate) for a bad configuration.
  explicit GpuPool(const PoolConfig& config);

  // One selection of the indexer: `selected` sorted strictly ascending, every position in
  // [0, context). `context` and `step` must not decrease from one call to the next (several
  // accesses in one step are allowed; heat decays once per step of difference). The number of
  // selected positions outside the pinned window must not exceed the capacity, since attention
  // reads all of them from GPU memory. Violations throw std::invalid_argument.
  //
  // One batch: hits are looked up, entries are evicted as needed (never one selected now), the
  // misses are inserted. Entries selected together count as selected in position order, whether
  // they hit or missed, so LRU stays a stack algorithm (a bigger pool holds a superset of a
  // smaller one on the same selections). Afterwards every selected entry is resident. If `missed`
  // is not null it receives the missed positions, ascending.
  //
  // Invariants checked on every call, in release builds too (std::logic_error if violated): the
  // pool never holds more than its capacity; every selected entry is resident after the access;
  // misses == selected - hits.
  AccessResult access(const std::vector<std::int64_t>& selected, std::int64_t context, int step,
                      std::vector<std::int64_t>* missed = nullptr);

  // The same access for an LRU pool without a pinned window, given as the change from the previous
  // access (SelectionDelta, see access_model.h): removed entries must be selected now, added ones
  // not, both ascending, and the count after the change must equal delta.selected. Hits, misses,
  // runs, evictions, `missed` and residency are exactly those access() gives on the full
  // selections, at O(change) instead of O(selected): an entry selected at consecutive accesses is
  // not touched, and joins the eviction queue (stamped with the access that last selected it)
  // only when a later access drops it. A pool takes access() or access_delta() calls, never both.
  // Errors as access() (std::invalid_argument), plus another policy or a pinned window.
  AccessResult access_delta(const SelectionDelta& delta, std::int64_t context, int step,
                            std::vector<std::int64_t>* missed = nullptr);

  // Changes the capacity (e.g. a pool sized as a ratio of a growing context), >= 1. Shrinking
  // evicts by the policy until the pool fits; the evictions are returned.
  std::int64_t set_capacity(std::int64_t capacity);

  [[nodiscard]] const PoolConfig& config() const { return config_; }
  [[nodiscard]] std::int64_t capacity() const { return config_.capacity; }
  // Entries in the pool (the pinned window excluded).
  [[nodiscard]] std::int64_t size() const { return size_; }
  // Whether `position` is in the pool proper (not counting the pinned window).
  [[nodiscard]] bool in_pool(std::int64_t position) const;
  // Whether attention could read `position` from GPU memory at the context of the last access:
  // in the pool or in the pinned window.
  [[nodiscard]] bool resident(std::int64_t position) const;

  // Full consistency check, O(pool + context): the pooled positions number size() <= capacity,
  // and the eviction queue (lru, fifo) or heap (heat) holds each of them exactly once, in a valid
  // order. Throws std::logic_error describing the first problem. access() runs the cheaper
  // per-access checks.
  void check_invariants() const;

 private:
  friend struct GpuPoolTestPeer;  // tests inject faults to prove the invariant checks can fail

  // Fault injection, set only by tests through GpuPoolTestPeer.
  enum class TestFault { none, skip_evictions, forget_one_insert, count_extra_hit };

  static constexpr std::int32_t kNone = -1;

  // lru/fifo: eviction order as a queue of (position, tick), front = next victim. An entry is live
  // while the position is pooled and its stamp (lru: tick of the last selection; fifo: tick of
  // insertion) still equals the entry's tick; a re-selected lru entry is pushed again and its old
  // entry goes stale. Stale entries are dropped when the front reaches them or on compaction.
  // So a hit costs one write to a per-position array and one append, no pointer chasing.
  struct QueueEntry {
    std::int32_t position;
    std::uint32_t tick;
  };

  // Shared by access() and access_delta(): the context and step checks (`where` names the caller),
  // the runs among scratch_missed_, the queue's reserve and compaction, the size invariant.
  void check_progress(std::int64_t context, int step, const char* where) const;
  [[nodiscard]] std::int64_t missed_runs() const;
  void reserve_queue();
  void compact_if_stale();
  void check_size() const;

  void grow_positions(std::int64_t context);
  [[nodiscard]] bool live(const QueueEntry& e) const;
  [[nodiscard]] std::size_t compact_threshold() const;
  void compact_queue();
  void renumber_ticks();
  void insert(std::int64_t position);
  void remove_heat(std::int32_t slot);
  std::int64_t evict(std::int64_t count);  // victims not selected by the current access
  std::int64_t evict_queue(std::int64_t count);
  std::int64_t evict_heat(std::int64_t count);

  // Heat: a binary min-heap of slots ordered by (key, last selection, position). A key is the heat
  // scaled by heat_decay^-(step - heat_base_step_), so a uniform decay of all heats never reorders
  // the heap; keys are rebased before the scale grows out of double range.
  struct HeatSlot {
    double key = 0.0;
    std::uint64_t clock = 0;  // heat_clock_ at the last selection (LRU tie-break)
    std::int32_t position = kNone;
    std::int32_t heap_index = kNone;
  };
  [[nodiscard]] bool heat_less(std::int32_t a, std::int32_t b) const;
  void heap_push(std::int32_t slot);
  void heap_erase(std::int32_t slot);
  void heap_sift_up(std::size_t i);
  void heap_sift_down(std::size_t i);
  void heat_advance_to(int step);
  void heat_touch(std::int64_t position);

  PoolConfig config_;
  std::int64_t size_ = 0;
  // By position: 0 = not pooled, else the tick of the last access that selected it (or, for a
  // pooled fifo entry never selected since, of its insertion). Equal to tick_ = selected now.
  std::vector<std::uint32_t> stamp_;
  std::vector<std::uint32_t> born_;  // fifo, by position: tick of insertion
  std::vector<QueueEntry> queue_;
  std::size_t queue_head_ = 0;
  std::vector<QueueEntry> scratch_kept_;

  std::vector<std::int32_t> slot_of_;  // heat, by position: slot or kNone
  std::vector<HeatSlot> heat_slots_;
  std::vector<std::int32_t> free_slots_;
  std::vector<std::int32_t> heap_;
  double heat_scale_ = 1.0;  // heat_decay^-(current step - heat_base_step_)
  int heat_base_step_ = 0;
  std::uint64_t heat_clock_ = 0;

  // access_delta: the entries of the current selection (a bitmap over positions), how many, and
  // the tick of the last access. They stay out of the eviction queue while selected.
  enum class Mode { unused, full, delta };
  void enter(Mode mode);
  Mode mode_ = Mode::unused;
  std::vector<std::uint64_t> selected_bits_;
  std::int64_t selected_count_ = 0;
  std::uint32_t last_access_tick_ = 0;

  std::uint32_t tick_ = 0;  // one per access; renumbered before it wraps
  std::uint32_t tick_limit_ = 0xFFFFFFFFU;
  bool started_ = false;
  int last_step_ = 0;
  std::int64_t last_context_ = 0;
  std::vector<std::int64_t> scratch_missed_;
  TestFault fault_ = TestFault::none;
};

}  // namespace ess
