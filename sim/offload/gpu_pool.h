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
#include <memory>
#include <string>
#include <vector>

#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"

namespace ess {

struct PoolConfig {
  // Entries the pool holds at most (latent-cache rows of this request and layer), >= 1. The pinned
  // window below does not count against it.
  std::int64_t capacity = 0;
  // The newest `pinned_recent` positions (>= context - pinned_recent) are always resident (a hot
  // window of recent tokens, written to GPU memory as they are generated), >= 0. Selecting one is
  // a hit and does not touch the pool. A position that ages out of the window leaves GPU memory
  // unless it is also in the pool; it enters the pool only when selected later (a miss then).
  std::int64_t pinned_recent = 0;
  // The eviction policy, by its registered name (eviction_policies(), eviction.h).
  std::string policy{kDefaultEviction};
  // Values of the eviction policies' declared parameters (policy_params.h; e.g. heat's
  // heat_decay); one not given takes its declared default. Checked whatever the policy.
  PolicyValues params;
};

// Throws InternalError (the values come from a checked scenario) naming the field for a
// capacity < 1, a negative pinned window, a parameter no eviction policy declares or one outside its
// range, or a policy name that is not registered (listing the registered ones).
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
  // The registered policy config.policy. Throws InternalError (see validate) for a bad
  // configuration.
  explicit GpuPool(const PoolConfig& config);
  // A pool evicting by `policy` (e.g. one not registered, for tests); config.policy only names it
  // in messages. The same checks as validate() except the name's.
  GpuPool(const PoolConfig& config, std::unique_ptr<EvictionPolicy> policy);

  // One selection of the indexer: `selected` sorted strictly ascending, every position in
  // [0, context). `context` and `step` must not decrease from one call to the next (several
  // accesses in one step are allowed; heat decays once per step of difference). The number of
  // selected positions outside the pinned window must not exceed the capacity, since attention
  // reads all of them from GPU memory. Violations throw InternalError (the callers guarantee
  // them), except a context that decreases: InputError, as a recorded trace's contexts can.
  //
  // One batch: hits are looked up, entries are evicted as needed (never one selected now), the
  // misses are inserted. Entries selected together count as selected in position order, whether
  // they hit or missed, so LRU stays a stack algorithm (a bigger pool holds a superset of a
  // smaller one on the same selections). Afterwards every selected entry is resident. If `missed`
  // is not null it receives the missed positions, ascending.
  //
  // Invariants checked on every call, in release builds too (InternalError if violated): the
  // pool never holds more than its capacity; every selected entry is resident after the access;
  // misses == selected - hits.
  AccessResult access(const std::vector<std::int64_t>& selected, std::int64_t context, int step,
                      std::vector<std::int64_t>* missed = nullptr);

  // The same access for a pool without a pinned window whose policy supports_delta() (lru), given
  // as the change from the previous
  // access (SelectionDelta, see access_model.h): removed entries must be selected now, added ones
  // not, both ascending, and the count after the change must equal delta.selected. Hits, misses,
  // runs, evictions, `missed` and residency are exactly those access() gives on the full
  // selections, at O(change) instead of O(selected): an entry selected at consecutive accesses is
  // not touched, and joins the eviction queue (stamped with the access that last selected it)
  // only when a later access drops it. A pool takes access() or access_delta() calls, never both.
  // Errors as access() (InternalError), plus a policy without deltas or a pinned window.
  AccessResult access_delta(const SelectionDelta& delta, std::int64_t context, int step,
                            std::vector<std::int64_t>* missed = nullptr);

  // Changes the capacity (e.g. a pool sized as a ratio of a growing context), >= 1. Shrinking
  // evicts by the policy until the pool fits; the evictions are returned.
  std::int64_t set_capacity(std::int64_t capacity);

  // Whether access_delta() may be called: the policy supports deltas and there is no pinned window.
  [[nodiscard]] bool takes_delta() const;

  [[nodiscard]] const PoolConfig& config() const { return config_; }
  [[nodiscard]] std::int64_t capacity() const { return config_.capacity; }
  // Entries in the pool (the pinned window excluded).
  [[nodiscard]] std::int64_t size() const { return residency_.size; }
  // Whether `position` is in the pool proper (not counting the pinned window).
  [[nodiscard]] bool in_pool(std::int64_t position) const;
  // Whether attention could read `position` from GPU memory at the context of the last access:
  // in the pool or in the pinned window.
  [[nodiscard]] bool resident(std::int64_t position) const;

  // Full consistency check, O(pool + context): the pooled positions number size() <= capacity,
  // and the policy's order (EvictionPolicy::check: the lru/fifo queue, the heat heap) holds each of
  // them exactly once, in a valid order. Throws InternalError describing the first problem.
  // access() runs the cheaper per-access checks.
  void check_invariants() const;

 private:
  friend struct GpuPoolTestPeer;  // tests inject faults to prove the invariant checks can fail

  // Fault injection, set only by tests through GpuPoolTestPeer.
  enum class TestFault { none, skip_evictions, forget_one_insert, count_extra_hit };

  // Shared by access() and access_delta(): the context and step checks (`where` names the caller),
  // the runs among scratch_missed_, the size invariant.
  void check_progress(std::int64_t context, int step, const char* where) const;
  [[nodiscard]] std::int64_t missed_runs() const;
  void check_size() const;

  void grow_positions(std::int64_t context);
  void renumber_ticks();
  void next_tick();
  void insert_missed(std::size_t skip);     // stamps scratch_missed_ (but the first `skip`) and counts them
  std::int64_t evict(std::int64_t count);  // victims not selected by the current access

  PoolConfig config_;
  std::unique_ptr<EvictionPolicy> policy_;
  PoolResidency residency_;

  // access_delta: the entries of the current selection (a bitmap over positions), how many, and
  // the tick of the last access. They stay out of the eviction queue while selected.
  enum class Mode { unused, full, delta };
  void enter(Mode mode);
  Mode mode_ = Mode::unused;
  std::vector<std::uint64_t> selected_bits_;
  std::int64_t selected_count_ = 0;
  std::uint32_t last_access_tick_ = 0;

  std::uint32_t tick_limit_ = 0xFFFFFFFFU;
  bool started_ = false;
  int last_step_ = 0;
  std::int64_t last_context_ = 0;
  std::vector<std::int64_t> scratch_missed_;
  TestFault fault_ = TestFault::none;
};

}  // namespace ess
