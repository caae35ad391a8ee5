// The heat model of the `learned` prefetch predictor (predictor_learned.cpp) and of
// `ess-sim train-predictor` (sim/cli/cmd_train_predictor.cpp): features of a candidate position,
// kept online per (layer, request) from what a predictor observes, and a logistic model, trained
// offline, that turns them into the probability that the position is missed by the coming access.
//
// What a predictor observes (prefetch.h): before an access, the pool (which positions are on the
// GPU); after it, the positions it fetched (AccessObservation::missed). Hits are not observed, so
// the history below is a history of *fetches*: "selected while not on the GPU". The trainer builds
// its samples through the same interface (a collecting predictor inside a CacheSimulator replaying
// the trace), so training and inference see exactly the same features.
//
// The label of a candidate p at an access: p is selected by it and not on the GPU before it, i.e.
// p is one of the access's misses: exactly what a prefetch of p makes useful (cache_sim.h scores a
// prediction as used when the access then misses it).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/base/error.h"
#include "sim/offload/prefetch.h"

namespace ess {

// Features of one candidate, in this order (heat_feature_names()):
//   0 fetch_heat              sum over the observed fetches of p of kHeatDecayPerStep^(steps since)
//   1 log_steps_since_fetch   log2(1 + steps since p was last fetched), kHeatHistorySteps if not
//                             fetched within them
//   2 log_distance_from_end   log2(context - p): 0 for the newest token
//   3 previous_layer_fetched  1 if layer - 1 of the same request fetched p at this step, else 0
//   4 ever_fetched            1 if p was fetched at any observed access of this pool, else 0
inline constexpr std::size_t kHeatFeatureCount = 5;
using HeatFeatures = std::array<double, kHeatFeatureCount>;
[[nodiscard]] std::span<const std::string_view> heat_feature_names();

// Decay of fetch_heat per step: 0.8 halves a fetch's weight in about 3 steps, of the order of the
// mean lifetime of a long-range pick in the synthetic model's volatile layers (1 / (1 - 0.5..0.7)
// steps, sim/offload/README.md); fixed, since a model is trained for one definition of its features.
inline constexpr double kHeatDecayPerStep = 0.8;
// Fetches older than this many steps are forgotten (not candidates any more, and
// log_steps_since_fetch saturates): 0.8^64 < 1e-6, the heat is gone. Bounds the history's size.
inline constexpr int kHeatHistorySteps = 64;

// The fetch history of one (layer, request) pool. Steps must not decrease.
class HeatHistory {
 public:
  // After an access at `step`: the positions it fetched, ascending.
  void observe(int step, std::span<const std::int64_t> fetched);
  // The features of `position` before the access at `step` (> every observed step) at `context`.
  [[nodiscard]] HeatFeatures features(std::int64_t position, int step, std::int64_t context,
                                      bool previous_layer_fetched) const;
  // Positions fetched within the last kHeatHistorySteps steps before `step`, ascending, appended.
  void recent(int step, std::vector<std::int64_t>& out) const;

 private:
  struct Entry {
    std::int64_t position = 0;
    int last_step = 0;  // the step of its last fetch
    double heat = 0.0;  // fetch_heat just after that fetch (it included)
  };
  [[nodiscard]] const Entry* find(std::int64_t position) const;
  std::vector<Entry> entries_;        // ascending by position
  std::vector<Entry> scratch_;
  std::vector<std::uint64_t> ever_;   // bitmap by position: fetched at some observed access
};

// The online part of the learned predictor for every pool of a cache simulation: each pool's
// history and, per request, what the previous layer fetched at each recent step.
class HeatState {
 public:
  HeatState(int layers, int requests);

  // The candidates of an access and their features: positions not on the GPU (on_gpu) that the
  // pool's history holds, that the previous layer fetched at this step, or among the `newest`
  // newest positions not on the GPU (a backward scan from the context's end, as hot-window does);
  // ascending and unique. Costs O(history + previous layer's fetches + newest + resident positions
  // skipped by the scan), never a scan of the whole context.
  void candidates(const PredictionInput& in, std::int64_t newest, std::vector<std::int64_t>& positions,
                  std::vector<HeatFeatures>& features) const;
  // After the access (AccessObservation from the cache simulation).
  void observe(const AccessObservation& seen);

 private:
  // Steps of fetches kept per request for the next layer: more than the cache simulation computes
  // at once (AccessPipeline's chunk of 8 steps).
  static constexpr int kKeptSteps = 64;
  struct LayerFetches {
    int layer = -1;
    std::vector<std::int64_t> fetched;
  };
  int layers_;
  int requests_;
  std::vector<HeatHistory> histories_;  // [layer * requests + request]
  std::map<std::pair<int, int>, LayerFetches> last_;  // (request, step) -> the last layer's fetches
  mutable std::vector<std::int64_t> scratch_;
};

// Held-out or training scores of a predictor over a set of accesses: predicted entries, those the
// accesses then missed (used), and all their misses.
struct HeatMetrics {
  std::int64_t accesses = 0;
  std::int64_t predicted = 0;
  std::int64_t used = 0;
  std::int64_t misses = 0;
  // used / predicted (0 when nothing was predicted), used / misses (0 without misses), and their
  // harmonic mean (0 when both are 0).
  [[nodiscard]] double precision() const;
  [[nodiscard]] double recall() const;
  [[nodiscard]] double f1() const;
};

// One trace a model was trained on.
struct HeatTrainingTrace {
  std::string file;    // as given to train-predictor
  std::string sha256;  // of the file's bytes
  int layers = 0;
  int requests = 0;
  std::int64_t top_k = 0;
  int warmup_steps = 0;
  int decode_steps = 0;
  int holdout_steps = 0;  // the last decode steps, held out
};

// Where a model came from and how well it did: what `ess-sim train-predictor` records.
struct HeatProvenance {
  std::string tool;  // e.g. "ess-sim 0.1.0 train-predictor"
  std::vector<HeatTrainingTrace> traces;
  double holdout = 0.0;            // fraction of each trace's decode steps held out (the last ones)
  std::int64_t budget = 0;         // entries predicted per access at most (the staging buffer)
  double pool_ratio = 0.0;         // pools replayed: ratio of the context ...
  std::int64_t pool_entries = 0;   // ... or fixed entries (exactly one is set)
  std::uint64_t seed = 0;          // subsampling of negatives and the random baseline
  double l2 = 0.0;                 // L2 penalty of the fit (on the normalised weights)
  double negative_keep = 1.0;      // fraction of negative samples kept (each weighted by its inverse)
  std::int64_t train_samples = 0;  // kept (features, label) samples of the training split
  std::int64_t train_positives = 0;
  int iterations = 0;              // Newton iterations of the fit
  HeatMetrics train_metrics;       // at the chosen threshold, on the training accesses
  HeatMetrics holdout_metrics;     // the same on the held-out accesses
  HeatMetrics hot_window_metrics;  // the hot-window predictor on the held-out accesses
  HeatMetrics random_metrics;      // held out: as many candidates as the model predicted, drawn at random
  double candidate_recall = 0.0;   // held-out misses that were candidates: the recall's ceiling
};

// A logistic model over normalised features: P(missed) = 1 / (1 + exp(-z)),
// z = bias + sum_i weight[i] * (x[i] - mean[i]) / scale[i].
struct HeatModel {
  HeatFeatures mean{};
  HeatFeatures scale{1.0, 1.0, 1.0, 1.0, 1.0};  // > 0
  HeatFeatures weight{};
  double bias = 0.0;
  // Predict a candidate only if its probability is >= threshold, in [0, 1]; 1 predicts nothing.
  double threshold = 1.0;
  HeatProvenance provenance;

  [[nodiscard]] double logit(const HeatFeatures& x) const;
  [[nodiscard]] double probability(const HeatFeatures& x) const;
  // Whether probability p passes the threshold.
  [[nodiscard]] bool passes(double p) const { return threshold < 1.0 && p >= threshold; }
};

// The positions the model predicts among scored candidates: the `budget` most probable that pass
// the threshold (ties: the newer position first), ascending, into `out`. `probabilities[i]` is the
// probability of `positions[i]`.
void heat_rank(const HeatModel& model, std::span<const std::int64_t> positions, std::span<const double> probabilities,
               std::int64_t budget, std::vector<std::int64_t>& out);

// A model file that cannot be read or is malformed: the file, the JSON pointer of the value at
// fault ("" for the whole document) and what was expected, e.g.
// "model.json: /weights/2: expected a finite number, got \"x\"". Bad input (exit 2).
class HeatModelError : public InputError {
 public:
  HeatModelError(std::filesystem::path path, std::string pointer, const std::string& message);
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] const std::string& pointer() const { return pointer_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::filesystem::path path_;
  std::string pointer_;
  std::string message_;
};

inline constexpr std::string_view kHeatModelSchema = "ess-sim/heat-model/v1";

// The model as a JSON document (schema kHeatModelSchema), deterministic: the same model gives the
// same bytes. Ends with a newline.
[[nodiscard]] std::string heat_model_json(const HeatModel& model);
// Parses a document written by heat_model_json; `origin` names it in errors. Every key is checked
// (unknown ones are errors), the features must be this build's (names, decay, history).
[[nodiscard]] HeatModel parse_heat_model(std::string_view text, const std::filesystem::path& origin);
// Reads and parses a model file (HeatModelError for a missing or unreadable file, too).
[[nodiscard]] HeatModel load_heat_model(const std::filesystem::path& path);
// SHA-256 of a model file's bytes (HeatModelError if unreadable): its identity for caches.
[[nodiscard]] std::string heat_model_sha256(const std::filesystem::path& path);

}  // namespace ess
