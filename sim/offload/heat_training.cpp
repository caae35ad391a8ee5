#include "sim/offload/heat_training.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

#include <Eigen/Dense>

#include "sim/base/error.h"
#include "sim/base/rng.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/cache_sim.h"
#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

constexpr int kParameters = static_cast<int>(kHeatFeatureCount) + 1;  // the bias first
using Vector = Eigen::Matrix<double, kParameters, 1>;
using Matrix = Eigen::Matrix<double, kParameters, kParameters>;

constexpr int kMaxNewtonIterations = 100;
constexpr double kNewtonTolerance = 1e-9;
// Steps replayed per CacheSimulator::steps call: the engine's AccessPipeline chunk
// (sim/engine/step_plans.h), well below HeatState's memory of the previous layer's fetches.
constexpr std::size_t kChunkSteps = 8;
// Thresholds tried: k / kThresholdGrid for k = 0 .. kThresholdGrid - 1.
constexpr int kThresholdGrid = 200;

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

LogisticFit fit_logistic(std::span<const HeatSample> samples, double l2) {
  if (samples.empty()) throw InternalError("fit_logistic: no samples");
  if (!(l2 >= 0.0) || !std::isfinite(l2)) throw InternalError("fit_logistic: the L2 penalty must be >= 0");
  LogisticFit fit;
  double total = 0.0;
  double positive = 0.0;
  for (const HeatSample& s : samples) {
    if (!(s.weight > 0.0) || !std::isfinite(s.weight)) throw InternalError("fit_logistic: sample weights must be > 0");
    total += s.weight;
    if (s.label) positive += s.weight;
    for (std::size_t i = 0; i < kHeatFeatureCount; ++i) fit.mean[i] += s.weight * s.x[i];
  }
  for (double& m : fit.mean) m /= total;
  HeatFeatures var{};
  for (const HeatSample& s : samples) {
    for (std::size_t i = 0; i < kHeatFeatureCount; ++i) var[i] += s.weight * (s.x[i] - fit.mean[i]) * (s.x[i] - fit.mean[i]);
  }
  for (std::size_t i = 0; i < kHeatFeatureCount; ++i) {
    const double sd = std::sqrt(var[i] / total);
    fit.scale[i] = sd > 1e-12 ? sd : 1.0;  // a constant feature: its weight stays at 0 (penalised)
  }
  Vector beta = Vector::Zero();
  const double rate = std::clamp(positive / total, 1e-9, 1.0 - 1e-9);
  beta(0) = std::log(rate / (1.0 - rate));
  Vector penalty = Vector::Constant(l2);
  penalty(0) = 0.0;
  const auto normalised = [&fit](const HeatSample& s) {
    Vector x;
    x(0) = 1.0;
    for (std::size_t i = 0; i < kHeatFeatureCount; ++i) x(static_cast<int>(i) + 1) = (s.x[i] - fit.mean[i]) / fit.scale[i];
    return x;
  };
  // The penalised log-likelihood (log(1 + e^z) computed without overflow).
  const auto objective = [&](const Vector& b) {
    double sum = 0.0;
    for (const HeatSample& s : samples) {
      const double z = b.dot(normalised(s));
      const double log1pexp = z > 0.0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
      sum += s.weight * ((s.label ? z : 0.0) - log1pexp);
    }
    return sum - 0.5 * penalty.dot(b.cwiseProduct(b));
  };
  double current = objective(beta);
  for (fit.iterations = 1; fit.iterations <= kMaxNewtonIterations; ++fit.iterations) {
    Vector gradient = Vector::Zero();
    Matrix hessian = Matrix::Zero();
    for (const HeatSample& s : samples) {
      const Vector x = normalised(s);
      const double p = sigmoid(beta.dot(x));
      gradient += s.weight * ((s.label ? 1.0 : 0.0) - p) * x;
      hessian.noalias() += (s.weight * std::max(p * (1.0 - p), 1e-12)) * (x * x.transpose());
    }
    gradient -= penalty.cwiseProduct(beta);
    hessian += penalty.asDiagonal();
    Vector step = hessian.ldlt().solve(gradient);
    // Damped Newton: halve the step until the objective does not fall (a full step can overshoot
    // far from the optimum, e.g. on nearly separable samples).
    double next = objective(beta + step);
    for (int halving = 0; halving < 40 && !(next >= current); ++halving) {
      step *= 0.5;
      next = objective(beta + step);
    }
    if (!(next >= current)) break;  // no step improves: at the optimum to rounding
    beta += step;
    current = next;
    if (step.cwiseAbs().maxCoeff() < kNewtonTolerance) break;
  }
  fit.iterations = std::min(fit.iterations, kMaxNewtonIterations);
  fit.bias = beta(0);
  for (std::size_t i = 0; i < kHeatFeatureCount; ++i) fit.weight[i] = beta(static_cast<int>(i) + 1);
  return fit;
}

namespace {

// One trace, read and checked for training.
struct Trace {
  std::string file;
  std::unique_ptr<ReplayAccess> replay;
  HeatTrainingTrace info;
  std::vector<int> steps;  // decode steps
  std::vector<std::int64_t> contexts;
};

Trace read_trace(const std::string& file, double holdout) {
  Trace t;
  t.file = file;
  std::string bytes;
  if (const ReadProblem problem = read_whole_file(file, bytes); problem != ReadProblem::none) {
    throw AccessTraceError(file, std::nullopt, describe(problem));
  }
  t.info.file = file;
  t.info.sha256 = sha256_hex(bytes);
  t.replay = std::make_unique<ReplayAccess>(file, std::move(bytes));
  const auto& steps = t.replay->steps();
  std::vector<TraceStep> warmup;
  for (const TraceStep& s : steps) {
    if (s.step < 0) {
      warmup.push_back(s);
    } else {
      t.steps.push_back(s.step);
      t.contexts.push_back(s.context);
    }
  }
  const auto fail = [&](const std::string& message) { throw InputError(file + ": " + message); };
  if (t.steps.size() < 2) {
    fail("has " + std::to_string(t.steps.size()) + " decode steps (steps >= 0); training needs at least 2, one held out");
  }
  // The warm-up CacheSimulator::warm_up makes: steps -W .. -1 at contexts C - W .. C - 1 (those
  // with a context >= 1), C the first decode step's; validate --prepare writes exactly these.
  const std::int64_t c0 = t.contexts.front();
  const int windows = warmup.empty() ? 0 : -warmup.front().step;
  std::vector<TraceStep> expected;
  for (int w = windows; w >= 1; --w) {
    if (c0 - w >= 1) expected.push_back({-w, c0 - w});
  }
  if (warmup != expected) {
    fail("its warm-up steps must be -W .. -1 at contexts C - W .. C - 1, C = " + std::to_string(c0) +
         " the context of the first decode step (as ess-sim validate --prepare writes them)");
  }
  t.info.layers = t.replay->layers();
  t.info.requests = t.replay->requests();
  t.info.top_k = t.replay->top_k();
  t.info.warmup_steps = static_cast<int>(warmup.size());
  t.info.decode_steps = static_cast<int>(t.steps.size());
  const auto held = static_cast<int>(std::ceil(holdout * static_cast<double>(t.steps.size()) - 1e-9));
  t.info.holdout_steps = std::clamp(held, 1, t.info.decode_steps - 1);
  return t;
}

// The accesses of one pass, shared with the collecting predictor that the simulator owns.
struct PassSink {
  // Pass 1.
  std::vector<HeatSample> samples;
  double negative_keep = 1.0;
  std::int64_t positives = 0;
  // Pass 2.
  const HeatModel* model = nullptr;
  int first_holdout_step = 0;  // of the trace being replayed
  std::int64_t budget = 0;
  std::array<std::int64_t, kThresholdGrid> train_predicted{};  // by probability bucket, top-budget only
  std::array<std::int64_t, kThresholdGrid> train_used{};
  std::int64_t train_accesses = 0;
  std::int64_t train_misses = 0;
  std::int64_t train_candidates = 0;
  std::int64_t train_candidate_positives = 0;
  struct HeldOut {
    std::vector<double> probability;  // the top-budget candidates, most probable first
    std::vector<bool> label;
    std::int64_t candidates = 0;
    std::int64_t candidate_positives = 0;
    std::int64_t misses = 0;
  };
  std::vector<HeldOut> held_out;
  HeatMetrics hot_window;
};

int bucket(double p) { return std::clamp(static_cast<int>(p * kThresholdGrid), 0, kThresholdGrid - 1); }

// Stands in the cache simulation where the learned predictor would: the same candidates and
// features (HeatState), labelled by the access's misses.
class Collector final : public PrefetchPredictor {
 public:
  Collector(const HeatTrainingTrace& trace, PassSink& sink, Rng rng, std::int64_t max_samples)
      : sink_(sink), state_(trace.layers, trace.requests), rng_(rng), max_samples_(max_samples) {}

  void predict(const PredictionInput& in, std::vector<std::int64_t>& out) override {
    state_.candidates(in, in.budget, positions_, features_);
    out.clear();
    hot_.clear();
    if (sink_.model == nullptr) return;
    probabilities_.clear();
    for (const auto& x : features_) probabilities_.push_back(sink_.model->probability(x));
    heat_rank(*sink_.model, positions_, probabilities_, in.budget, out);  // contract-checked by the simulator
    if (in.step >= sink_.first_holdout_step) {
      for (std::int64_t p = in.context - 1; p >= 0 && static_cast<std::int64_t>(hot_.size()) < in.budget; --p) {
        if (!on_gpu(in, p)) hot_.push_back(p);
      }
      std::sort(hot_.begin(), hot_.end());
    }
  }

  void observe(const AccessObservation& seen) override {
    const std::span<const std::int64_t> missed = seen.missed;
    labels_.assign(positions_.size(), false);
    std::int64_t positives = 0;
    auto m = missed.begin();
    for (std::size_t i = 0; i < positions_.size(); ++i) {
      while (m != missed.end() && *m < positions_[i]) ++m;
      labels_[i] = m != missed.end() && *m == positions_[i];
      positives += labels_[i] ? 1 : 0;
    }
    if (sink_.model == nullptr) {
      collect();
    } else {
      score(seen, positives);
    }
    state_.observe(seen);
  }

 private:
  void collect() {
    for (std::size_t i = 0; i < positions_.size(); ++i) {
      if (labels_[i]) {
        sink_.samples.push_back({features_[i], true, 1.0});
        ++sink_.positives;
      } else if (sink_.negative_keep >= 1.0 || rng_.uniform() < sink_.negative_keep) {
        sink_.samples.push_back({features_[i], false, 1.0 / sink_.negative_keep});
      }
    }
    if (static_cast<std::int64_t>(sink_.samples.size()) > max_samples_) thin();
  }

  // Halves the negatives kept so far and the rate of those to come: memory stays bounded, every
  // kept negative stands for 1 / keep of them.
  void thin() {
    sink_.negative_keep /= 2.0;
    std::size_t kept = 0;
    for (HeatSample& s : sink_.samples) {
      if (s.label) {
        sink_.samples[kept++] = s;
      } else if (rng_.uniform() < 0.5) {
        s.weight = 1.0 / sink_.negative_keep;
        sink_.samples[kept++] = s;
      }
    }
    sink_.samples.resize(kept);
  }

  void score(const AccessObservation& seen, std::int64_t positives) {
    order_.resize(positions_.size());
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    // As heat_rank orders: most probable first, ties the newer position first.
    const auto keep = std::min(order_.size(), static_cast<std::size_t>(sink_.budget));
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(keep), order_.end(),
                      [&](std::size_t a, std::size_t b) {
                        return probabilities_[a] != probabilities_[b] ? probabilities_[a] > probabilities_[b]
                                                                       : positions_[a] > positions_[b];
                      });
    const auto misses = static_cast<std::int64_t>(seen.missed.size());
    if (seen.step < sink_.first_holdout_step) {
      ++sink_.train_accesses;
      sink_.train_misses += misses;
      sink_.train_candidates += static_cast<std::int64_t>(positions_.size());
      sink_.train_candidate_positives += positives;
      for (std::size_t r = 0; r < keep; ++r) {
        const int b = bucket(probabilities_[order_[r]]);
        ++sink_.train_predicted[static_cast<std::size_t>(b)];
        sink_.train_used[static_cast<std::size_t>(b)] += labels_[order_[r]] ? 1 : 0;
      }
      return;
    }
    PassSink::HeldOut h;
    for (std::size_t r = 0; r < keep; ++r) {
      h.probability.push_back(probabilities_[order_[r]]);
      h.label.push_back(labels_[order_[r]]);
    }
    h.candidates = static_cast<std::int64_t>(positions_.size());
    h.candidate_positives = positives;
    h.misses = misses;
    sink_.held_out.push_back(std::move(h));
    ++sink_.hot_window.accesses;
    sink_.hot_window.misses += misses;
    sink_.hot_window.predicted += static_cast<std::int64_t>(hot_.size());
    auto m = seen.missed.begin();
    for (const std::int64_t p : hot_) {
      while (m != seen.missed.end() && *m < p) ++m;
      if (m != seen.missed.end() && *m == p) ++sink_.hot_window.used;
    }
  }

  PassSink& sink_;
  HeatState state_;
  Rng rng_;
  std::int64_t max_samples_;
  std::vector<std::int64_t> positions_;
  std::vector<HeatFeatures> features_;
  std::vector<double> probabilities_;
  std::vector<bool> labels_;
  std::vector<std::size_t> order_;
  std::vector<std::int64_t> hot_;
};

// Replays `trace` (its first `steps` decode steps) with a collector writing into `sink`.
void replay(const Trace& trace, const HeatTrainingOptions& options, PassSink& sink, Rng rng, std::size_t steps,
            const std::string& pass) {
  CacheSimConfig c;
  c.layers = trace.info.layers;
  c.top_k = trace.info.top_k;
  c.sampled_requests = trace.info.requests;
  c.warmup_windows = trace.info.warmup_steps == 0 ? 0 : -trace.replay->steps().front().step;
  c.capacity_ratio = options.pool_entries != 0 ? 0.0 : options.pool_ratio;
  c.capacity_entries = options.pool_entries;
  c.prefetch_budget = options.budget;
  CacheSimulator sim(c, *trace.replay, std::make_unique<Collector>(trace.info, sink, rng, options.max_samples));
  sim.warm_up(trace.contexts.front());
  for (std::size_t first = 0; first < steps; first += kChunkSteps) {
    const std::size_t last = std::min(steps, first + kChunkSteps);
    (void)sim.steps(std::vector<int>(trace.steps.begin() + static_cast<std::ptrdiff_t>(first),
                                     trace.steps.begin() + static_cast<std::ptrdiff_t>(last)),
                    std::vector<std::int64_t>(trace.contexts.begin() + static_cast<std::ptrdiff_t>(first),
                                              trace.contexts.begin() + static_cast<std::ptrdiff_t>(last)));
    if (options.progress) {
      options.progress(trace.file + ": " + pass + ", step " + std::to_string(last) + " of " + std::to_string(steps));
    }
  }
}

void check(const HeatTrainingOptions& o) {
  const auto fail = [](const std::string& m) { throw InternalError("train-predictor: " + m); };
  if (!(o.holdout > 0.0 && o.holdout < 1.0)) fail("the held-out fraction must be in (0, 1)");
  if (o.budget < 1) fail("the budget must be >= 1");
  if ((o.pool_ratio != 0.0) == (o.pool_entries != 0)) fail("give exactly one of a pool ratio and pool entries");
  if (o.pool_entries == 0 && !(o.pool_ratio > 0.0 && o.pool_ratio <= 1.0)) fail("the pool ratio must be in (0, 1]");
  if (o.pool_entries < 0) fail("the pool entries must be >= 1");
  if (!(o.l2 >= 0.0) || !std::isfinite(o.l2)) fail("the L2 penalty must be >= 0");
  if (o.max_samples < 1000) fail("max_samples must be >= 1000");
}

}  // namespace

HeatModel train_heat_model(const std::vector<std::string>& files, const HeatTrainingOptions& options) {
  check(options);
  if (files.empty()) throw InternalError("train-predictor: no trace given");
  std::vector<Trace> traces;
  for (const auto& f : files) traces.push_back(read_trace(f, options.holdout));

  // Pass 1: training samples.
  const Rng root(options.seed);
  PassSink collect;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    replay(t, options, collect, root.fork(2 * i), t.steps.size() - static_cast<std::size_t>(t.info.holdout_steps),
           "pass 1 of 2 (training samples)");
  }
  if (collect.positives == 0 || collect.positives == static_cast<std::int64_t>(collect.samples.size())) {
    throw InputError("train-predictor: the training steps give " + std::to_string(collect.positives) +
                     " positive samples of " + std::to_string(collect.samples.size()) +
                     "; a model needs both misses and non-misses among the candidates");
  }
  const LogisticFit fit = fit_logistic(collect.samples, options.l2);
  HeatModel model;
  model.mean = fit.mean;
  model.scale = fit.scale;
  model.weight = fit.weight;
  model.bias = fit.bias;
  model.threshold = 0.0;
  HeatProvenance& p = model.provenance;
  p.tool = options.tool;
  for (const Trace& t : traces) p.traces.push_back(t.info);
  p.holdout = options.holdout;
  p.budget = options.budget;
  p.pool_ratio = options.pool_entries != 0 ? 0.0 : options.pool_ratio;
  p.pool_entries = options.pool_entries;
  p.seed = options.seed;
  p.l2 = options.l2;
  p.negative_keep = collect.negative_keep;
  p.train_samples = static_cast<std::int64_t>(collect.samples.size());
  p.train_positives = collect.positives;
  p.iterations = fit.iterations;
  collect.samples = {};

  // Pass 2: scores of the fitted model on every step.
  PassSink score;
  score.model = &model;
  score.budget = options.budget;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    score.first_holdout_step = t.steps[t.steps.size() - static_cast<std::size_t>(t.info.holdout_steps)];
    replay(t, options, score, root.fork(2 * i + 1), t.steps.size(), "pass 2 of 2 (threshold and held-out scores)");
  }

  // The threshold: the best training F1 among the thresholds with enough lift.
  const double base_rate = score.train_candidates == 0 ? 0.0
                                                        : static_cast<double>(score.train_candidate_positives) /
                                                              static_cast<double>(score.train_candidates);
  HeatMetrics best;
  best.accesses = score.train_accesses;
  best.misses = score.train_misses;
  double best_threshold = 1.0;
  HeatMetrics at;
  at.accesses = score.train_accesses;
  at.misses = score.train_misses;
  for (int k = kThresholdGrid - 1; k >= 0; --k) {
    at.predicted += score.train_predicted[static_cast<std::size_t>(k)];
    at.used += score.train_used[static_cast<std::size_t>(k)];
    if (at.predicted == 0 || at.precision() < kHeatMinLift * base_rate) continue;
    if (at.f1() > best.f1()) {
      best = at;
      best_threshold = static_cast<double>(k) / kThresholdGrid;
    }
  }
  model.threshold = best_threshold;
  p.train_metrics = best;

  // Held out: the model at that threshold, hot-window, and a random choice of as many candidates.
  Rng draw = root.fork(2 * traces.size() + 1);
  HeatMetrics& h = p.holdout_metrics;
  HeatMetrics& r = p.random_metrics;
  std::int64_t candidate_positives = 0;
  for (const auto& a : score.held_out) {
    std::int64_t n = 0;
    ++h.accesses;
    ++r.accesses;
    h.misses += a.misses;
    r.misses += a.misses;
    candidate_positives += a.candidate_positives;
    for (std::size_t i = 0; i < a.probability.size() && model.passes(a.probability[i]); ++i) {
      ++n;
      h.used += a.label[i] ? 1 : 0;
    }
    h.predicted += n;
    // n of the candidates drawn without replacement: each draw is a miss with the probability
    // that the candidates left hold.
    std::int64_t left = a.candidates;
    std::int64_t left_positive = a.candidate_positives;
    for (std::int64_t d = 0; d < n; ++d, --left) {
      if (draw.below(static_cast<std::uint64_t>(left)) < static_cast<std::uint64_t>(left_positive)) {
        --left_positive;
        ++r.used;
      }
    }
    r.predicted += n;
  }
  p.hot_window_metrics = score.hot_window;
  p.candidate_recall = h.misses == 0 ? 0.0 : static_cast<double>(candidate_positives) / static_cast<double>(h.misses);
  return model;
}

}  // namespace ess
