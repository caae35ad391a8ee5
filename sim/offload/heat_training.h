// Offline training of the learned predictor's heat model (heat_model.h) from recorded access
// traces (access_trace.h), for `ess-sim train-predictor`.
//
// Each trace is replayed through a CacheSimulator (LRU pools as the engine's cache simulation has
// them) with a collecting predictor in the learned predictor's place, so the candidates and
// features are exactly those the learned predictor computes in a run; a candidate's label is
// whether the access then missed it. The last `holdout` fraction of every trace's decode steps is
// held out (a split by time, never shuffled). Two passes:
//  1. the training steps: samples (features, label), negatives thinned to a bounded number and
//     weighted by their inverse keep rate; a weighted logistic regression with an L2 penalty is
//     fitted by Newton's method (fit_logistic);
//  2. all steps again with the fitted model: the threshold is the one maximising F1 at the budget
//     on the training accesses among those whose precision is at least kHeatMinLift x the
//     candidates' base rate (no such threshold: 1, the model predicts nothing); the held-out
//     accesses give precision, recall and F1 of the model, of hot-window and of a random choice of
//     as many candidates as the model predicted.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/offload/heat_model.h"

namespace ess {

// A predicted entry must be at least this many times likelier to be used than a candidate drawn at
// random, or the model predicts nothing: a model that has learnt nothing costs no PCIe bytes.
inline constexpr double kHeatMinLift = 2.0;

struct HeatSample {
  HeatFeatures x{};
  bool label = false;
  double weight = 1.0;  // > 0
};

struct LogisticFit {
  HeatFeatures mean{};
  HeatFeatures scale{};  // the features' weighted standard deviations (1 where one is constant)
  HeatFeatures weight{};
  double bias = 0.0;
  int iterations = 0;
};

// Weighted logistic regression of label on the normalised features, L2 penalty `l2` (>= 0) on the
// weights (not the bias), by Newton's method (iteratively reweighted least squares, Eigen's LDLT)
// until no parameter moves by more than 1e-9 (at most 100 iterations). Deterministic: the same
// samples in the same order give the same bits. InternalError without samples, with a
// non-positive weight or a negative penalty (train_heat_model checks its inputs first).
[[nodiscard]] LogisticFit fit_logistic(std::span<const HeatSample> samples, double l2);

struct HeatTrainingOptions {
  double holdout = 0.2;          // in (0, 1): fraction of each trace's decode steps held out
  std::int64_t budget = 512;     // most entries predicted per access (cache.prefetch.buffer_entries)
  double pool_ratio = 0.2;       // the replayed pools: ratio of the context (0: use pool_entries)
  std::int64_t pool_entries = 0; // or a fixed number of entries
  std::uint64_t seed = 1;        // thinning of negatives, the random baseline
  double l2 = 1.0;
  std::int64_t max_samples = 2'000'000;  // kept training samples at most (negatives are thinned)
  std::string tool = "ess-sim train-predictor";
  std::function<void(const std::string&)> progress;  // a line per chunk of steps (may be empty)
};

// Trains on the traces (paths, in order). Throws AccessTraceError for an unreadable or malformed
// trace, InputError naming the file for a trace that cannot be trained on (warm-up steps other than
// -W..-1 at contexts C-W..C-1, fewer than 2 decode steps, no training samples), InternalError for
// bad options (the command line checks them first).
[[nodiscard]] HeatModel train_heat_model(const std::vector<std::string>& traces, const HeatTrainingOptions& options);

}  // namespace ess
