// Where routed token copies land: skewed expert popularity, its step-to-step drift and the
// placement of experts on the ranks of an expert-parallel group (with or without EPLB).
//
// The model (sim/graph/README.md, "Expert load"):
//  - each MoE layer has a long-run popularity per routed expert, log-normal with sigma `skew`
//    (drawn once per layer from the scenario seed: TensorRT-LLM saw the same hot experts for
//    hundreds of iterations);
//  - each pass of a layer multiplies it by a fresh log-normal factor with sigma `drift` (what a
//    placement computed from past statistics cannot foresee: other requests, other hot experts);
//  - a token picks experts_per_token distinct experts, each draw proportional to the pass's
//    popularity (sampling without replacement; a stand-in for the router's top-k);
//  - without EPLB routed expert e sits in slot e (rank e / slots_per_rank); with EPLB the
//    redundant slots replicate the experts of highest long-run load per copy, and the copies are
//    packed onto ranks greedily, heaviest first, onto the least loaded rank with a free slot
//    (the global policy of deepseek-ai/EPLB); a copy routed to a replicated expert goes to one of
//    its replicas uniformly.
// skew = drift = 0 is a balanced router.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/base/rng.h"

namespace ess {

struct RoutingParams {
  double skew = 0.0;   // sigma of log(long-run popularity)
  double drift = 0.0;  // sigma of log(this pass's popularity / long-run popularity)
  bool eplb = false;   // place (and replicate) experts by their long-run load
};

class ExpertRouting {
 public:
  // `routed` logical experts in `slots` physical slots (routed + redundant, a multiple of
  // `ranks`), `layers` MoE layers; `rng` draws the long-run popularity of every layer.
  // Redundant slots need EPLB (without it nothing decides what they hold).
  ExpertRouting(std::int64_t routed, std::int64_t slots, int ranks, int layers, RoutingParams params, Rng rng);

  [[nodiscard]] std::int64_t slots() const { return slots_; }
  [[nodiscard]] std::int64_t slots_per_rank() const { return slots_ / ranks_; }

  // Draws of one pass of one layer: this pass's popularity, then tokens.
  class Pass {
   public:
    // experts_per_token distinct experts for one token, as slot indices (rank x slots_per_rank
    // + local), into `picked` (its size).
    void route(Rng& rng, std::span<std::int64_t> picked) const;

   private:
    friend class ExpertRouting;
    const ExpertRouting* routing_ = nullptr;
    int layer_ = 0;
    bool uniform_ = true;
    // Walker alias table over routed experts, one entry per column: keep the column when a 53-bit
    // uniform integer is below `keep` (ceil(probability x 2^53): the same draws as comparing
    // Rng::uniform() with the probability, in integers), else take `alias`.
    struct Column {
      std::uint64_t keep = 0;
      std::uint32_t alias = 0;
    };
    std::vector<Column> columns_;
    [[nodiscard]] std::int64_t draw_expert(Rng& rng) const;
  };
  // `layer` counts MoE layers from 0 (any int: taken modulo the layers given).
  [[nodiscard]] Pass pass(int layer, Rng& rng) const;

 private:
  std::int64_t routed_;
  std::int64_t slots_;
  int ranks_;
  RoutingParams params_;
  std::vector<std::vector<double>> popularity_;  // [layer][expert], mean 1
  // [layer]: the slots of each expert (first_slot_[e] .. first_slot_[e + 1] into replica_slots_)
  std::vector<std::vector<std::int64_t>> first_slot_;
  std::vector<std::vector<std::int64_t>> replica_slots_;
};

// A standard normal draw (Box-Muller on two uniforms of `rng`; uses libm, so it is identical on
// one machine, not necessarily across CPUs).
[[nodiscard]] double normal_draw(Rng& rng);

}  // namespace ess

namespace ess {

// Load statistics of routed token copies, each the average over layers and passes of the
// per-layer, per-pass statistic (as TensorRT-LLM's report_load_statistics.py reports them):
// per rank of the group and per physical slot, the mean, the standard deviation (n - 1, torch's
// default) and the imbalance (max - mean) / mean.
struct ExpertLoadStats {
  double rank_mean = 0, rank_std = 0, rank_imbalance = 0;
  double slot_mean = 0, slot_std = 0, slot_imbalance = 0;
};

struct ExpertLoadLayout {
  std::int64_t routed = 256;
  int top_k = 8;
  int ranks = 32;
  std::int64_t slots = 256;
  std::int64_t tokens = 4096;  // tokens routed per pass over the whole group
};

// Simulates `layers` x `passes` passes of the routing model on `layout`.
[[nodiscard]] ExpertLoadStats expert_load_stats(const ExpertLoadLayout& layout, RoutingParams params, int layers,
                                                int passes, std::uint64_t seed);

}  // namespace ess
