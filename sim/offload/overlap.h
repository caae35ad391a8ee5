// How one MLA layer's miss fetch overlaps its sparse attention under offload (ESS paper,
// arXiv 2512.10576, section 4): the policy orders the layer's priced parts into pieces on the
// compute stream, some of them "stages" that run while (part of) the fetch is in flight. The
// decode-step builder prices the parts with the cost models and turns the pieces into segments;
// the engine runs them. Nothing here knows about SimGrid, JSON or the scenario format.
//
// Implementations beside this header (overlap_serial.cpp, overlap_da.cpp, overlap_dba.cpp,
// overlap_auto.cpp), one line each in overlap_registry.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "models/units.h"
#include "sim/offload/registry.h"

namespace ess {

// The priced parts of one layer's sparse attention with offload.
enum class AttentionPart : std::uint8_t {
  score,             // indexer scoring, whole batch
  topk,              // indexer top-k, whole batch
  absorb,            // queries absorbed into the latent space
  attention,         // sparse MLA over every selected entry
  attention_hits,    // ... over the entries already on the GPU
  attention_misses,  // ... over the fetched entries
  merge,             // merging the hits' and misses' partial attentions
  score_a,           // the indexer over the first half of the batch (dba)
  topk_a,
  score_b,           // ... and over the second half
  topk_b,
  misses_a,          // attention over the fetched entries of each half
  misses_b,
};
inline constexpr std::size_t kAttentionPartCount = 13;

// Which part of the layer's miss fetch a stage moves.
enum class FetchShare : std::uint8_t {
  none,    // no transfer: a plain compute piece
  all,     // every miss
  half_a,  // the first half of the batch's misses
  half_b,  // the rest
};

// What the builder priced for one layer (per GPU): part times and fetch times without contention.
struct AttentionCosts {
  std::array<Seconds, kAttentionPartCount> part{};  // indexed by AttentionPart
  bool splittable = false;  // two or more requests: the batch splits into halves (the *_a/_b parts are priced)
  Seconds fetch_all;        // every miss
  Seconds fetch_a;          // the first half's share
  Seconds fetch_b;          // the second half's share
  [[nodiscard]] Seconds operator[](AttentionPart p) const { return part[static_cast<std::size_t>(p)]; }
};

// One piece of the layer's timeline on the compute stream. A piece with a fetch share is a stage:
// its parts run while that share of the misses is fetched, and it ends when both are done.
// `after_fetch`: the piece belongs to the post-fetch part of the layer (segment label
// "attention_post"), which the builder merges with what follows the attention.
struct OverlapPiece {
  std::string_view label;  // the stage's segment label ("fetch_overlap"); unused for compute pieces
  FetchShare fetch = FetchShare::none;
  std::vector<AttentionPart> parts;
  bool after_fetch = false;
};

class OverlapPolicy {
 public:
  OverlapPolicy() = default;
  OverlapPolicy(const OverlapPolicy&) = delete;
  OverlapPolicy& operator=(const OverlapPolicy&) = delete;
  virtual ~OverlapPolicy() = default;

  // The registered policy that actually runs for these costs: itself, or another one (auto picks
  // the fastest estimate; dba falls back to da for a batch that cannot be split). Its registry
  // index is what the results count.
  [[nodiscard]] virtual std::size_t resolve(std::size_t self, const AttentionCosts& /*costs*/) const { return self; }
  // Whether the policy always resolves to another one (a chooser such as auto, with no timeline
  // of its own).
  [[nodiscard]] virtual bool chooses_another() const { return false; }
  // The layer's attention time for these costs, without contention (what auto compares).
  [[nodiscard]] virtual Seconds estimate(const AttentionCosts& costs) const = 0;
  // The pieces, in order; only called on a resolved policy and with something to fetch.
  [[nodiscard]] virtual std::vector<OverlapPiece> pieces(const AttentionCosts& costs) const = 0;
};

using OverlapFactory = std::unique_ptr<OverlapPolicy> (*)();

// Every overlap policy, in registry order (overlap_registry.cpp).
[[nodiscard]] std::span<const Registered<OverlapFactory>> overlap_policies();
// The policy of a scenario that names none (ESS's DA).
inline constexpr std::string_view kDefaultOverlap = "da";
// The registry index of `name`; InternalError listing the choices otherwise.
[[nodiscard]] std::size_t overlap_index(std::string_view name);
// One instance of every registered policy, by registry index (they are stateless).
[[nodiscard]] const std::vector<std::unique_ptr<OverlapPolicy>>& overlap_instances();
// Whether the policy at `index` runs a timeline of its own, rather than choosing another policy
// every time (auto): the results count layer-steps per concrete policy.
[[nodiscard]] bool overlap_is_concrete(std::size_t index);

// The implementations (one .cpp each), for the registry.
std::unique_ptr<OverlapPolicy> make_serial_overlap();
std::unique_ptr<OverlapPolicy> make_da_overlap();
std::unique_ptr<OverlapPolicy> make_dba_overlap();
std::unique_ptr<OverlapPolicy> make_auto_overlap();

}  // namespace ess
