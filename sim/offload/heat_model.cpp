#include "sim/offload/heat_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/base/error.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"
#include "sim/offload/predictor_support.h"

namespace ess {

namespace {

constexpr std::array<std::string_view, kHeatFeatureCount> kFeatureNames{
    "fetch_heat", "log_steps_since_fetch", "log_distance_from_end", "previous_layer_fetched", "ever_fetched"};

// kHeatDecayPerStep^n for n in [0, kHeatHistorySteps], by repeated multiplication (the same bits on
// every platform, unlike std::pow).
const std::array<double, kHeatHistorySteps + 1>& decay_powers() {
  static const auto powers = [] {
    std::array<double, kHeatHistorySteps + 1> p{};
    p[0] = 1.0;
    for (std::size_t n = 1; n < p.size(); ++n) p[n] = p[n - 1] * kHeatDecayPerStep;
    return p;
  }();
  return powers;
}

double decayed(double heat, int steps) {
  if (steps > kHeatHistorySteps) return 0.0;
  return heat * decay_powers()[static_cast<std::size_t>(std::max(steps, 0))];
}

}  // namespace

std::span<const std::string_view> heat_feature_names() { return kFeatureNames; }

// --- HeatHistory -------------------------------------------------------------------------------

void HeatHistory::observe(int step, std::span<const std::int64_t> fetched) {
  scratch_.clear();
  scratch_.reserve(entries_.size() + fetched.size());
  auto e = entries_.begin();
  const auto keep = [step](const Entry& entry) { return step - entry.last_step < kHeatHistorySteps; };
  for (const std::int64_t p : fetched) {
    for (; e != entries_.end() && e->position < p; ++e) {
      if (keep(*e)) scratch_.push_back(*e);
    }
    double heat = 1.0;
    if (e != entries_.end() && e->position == p) {
      heat += decayed(e->heat, step - e->last_step);
      ++e;
    }
    scratch_.push_back(Entry{p, step, heat});
    const auto word = static_cast<std::size_t>(p) / 64;
    if (word >= ever_.size()) ever_.resize(word + word / 8 + 1, 0);
    ever_[word] |= std::uint64_t{1} << (static_cast<std::size_t>(p) % 64);
  }
  for (; e != entries_.end(); ++e) {
    if (keep(*e)) scratch_.push_back(*e);
  }
  entries_.swap(scratch_);
}

const HeatHistory::Entry* HeatHistory::find(std::int64_t position) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), position,
                                   [](const Entry& e, std::int64_t p) { return e.position < p; });
  return it != entries_.end() && it->position == position ? &*it : nullptr;
}

HeatFeatures HeatHistory::features(std::int64_t position, int step, std::int64_t context,
                                   bool previous_layer_fetched) const {
  double heat = 0.0;
  int since = kHeatHistorySteps;
  if (const Entry* e = find(position); e != nullptr && step - e->last_step <= kHeatHistorySteps) {
    since = std::max(step - e->last_step, 1);
    heat = decayed(e->heat, since);
  }
  const auto word = static_cast<std::size_t>(position) / 64;
  const bool ever = word < ever_.size() && ((ever_[word] >> (static_cast<std::size_t>(position) % 64)) & 1U) != 0;
  return {heat, std::log2(1.0 + since), std::log2(static_cast<double>(std::max<std::int64_t>(context - position, 1))),
          previous_layer_fetched ? 1.0 : 0.0, ever ? 1.0 : 0.0};
}

void HeatHistory::recent(int step, std::vector<std::int64_t>& out) const {
  for (const Entry& e : entries_) {
    if (step - e.last_step <= kHeatHistorySteps) out.push_back(e.position);
  }
}

// --- HeatState ---------------------------------------------------------------------------------

HeatState::HeatState(int layers, int requests) : layers_(layers), requests_(requests) {
  if (layers < 1 || requests < 1) {
    throw InternalError("HeatState: layers and requests must be >= 1, got " + std::to_string(layers) + " and " +
                        std::to_string(requests));
  }
  histories_.resize(static_cast<std::size_t>(layers) * static_cast<std::size_t>(requests));
}

void HeatState::candidates(const PredictionInput& in, std::int64_t newest, std::vector<std::int64_t>& positions,
                           std::vector<HeatFeatures>& features) const {
  if (in.layer < 0 || in.layer >= layers_ || in.request < 0 || in.request >= requests_) {
    throw InternalError("learned predictor: no pool for layer " + std::to_string(in.layer) + ", request " +
                        std::to_string(in.request));
  }
  const HeatHistory& history =
      histories_[static_cast<std::size_t>(in.layer) * static_cast<std::size_t>(requests_) + static_cast<std::size_t>(in.request)];
  positions.clear();
  scratch_.clear();
  history.recent(in.step, scratch_);
  for (const std::int64_t p : scratch_) {
    if (p < in.context && !on_gpu(in, p)) positions.push_back(p);
  }
  std::span<const std::int64_t> previous;
  if (const auto it = last_.find({in.request, in.step}); in.layer > 0 && it != last_.end() && it->second.layer == in.layer - 1) {
    previous = it->second.fetched;
  }
  for (const std::int64_t p : previous) {
    if (p < in.context && !on_gpu(in, p)) positions.push_back(p);
  }
  std::int64_t found = 0;
  for (std::int64_t p = in.context - 1; p >= 0 && found < newest; --p) {
    if (!on_gpu(in, p)) {
      positions.push_back(p);
      ++found;
    }
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  features.clear();
  features.reserve(positions.size());
  for (const std::int64_t p : positions) {
    features.push_back(history.features(p, in.step, in.context, std::binary_search(previous.begin(), previous.end(), p)));
  }
}

void HeatState::observe(const AccessObservation& seen) {
  if (seen.layer < 0 || seen.layer >= layers_ || seen.request < 0 || seen.request >= requests_) {
    throw InternalError("learned predictor: no pool for layer " + std::to_string(seen.layer) + ", request " +
                        std::to_string(seen.request));
  }
  histories_[static_cast<std::size_t>(seen.layer) * static_cast<std::size_t>(requests_) + static_cast<std::size_t>(seen.request)]
      .observe(seen.step, seen.missed);
  // Pools are visited layer-major, steps increasing within a pool (prefetch.h): when layer l reads
  // (request, step), layer l - 1 has just written it, and layer l then replaces it for layer l + 1.
  auto& entry = last_[{seen.request, seen.step}];
  entry.layer = seen.layer;
  entry.fetched.assign(seen.missed.begin(), seen.missed.end());
  for (auto old = last_.lower_bound({seen.request, std::numeric_limits<int>::min()});
       old != last_.end() && old->first.first == seen.request && old->first.second < seen.step - kKeptSteps;) {
    old = last_.erase(old);
  }
}

// --- HeatMetrics, HeatModel, ranking ------------------------------------------------------------

double HeatMetrics::precision() const {
  return predicted == 0 ? 0.0 : static_cast<double>(used) / static_cast<double>(predicted);
}
double HeatMetrics::recall() const { return misses == 0 ? 0.0 : static_cast<double>(used) / static_cast<double>(misses); }
double HeatMetrics::f1() const {
  const double p = precision();
  const double r = recall();
  return p + r == 0.0 ? 0.0 : 2.0 * p * r / (p + r);
}

double HeatModel::logit(const HeatFeatures& x) const {
  double z = bias;
  for (std::size_t i = 0; i < kHeatFeatureCount; ++i) z += weight[i] * (x[i] - mean[i]) / scale[i];
  return z;
}

double HeatModel::probability(const HeatFeatures& x) const { return 1.0 / (1.0 + std::exp(-logit(x))); }

void heat_rank(const HeatModel& model, std::span<const std::int64_t> positions, std::span<const double> probabilities,
               std::int64_t budget, std::vector<std::int64_t>& out) {
  out.clear();
  if (positions.size() != probabilities.size()) {
    throw InternalError("heat_rank: " + std::to_string(positions.size()) + " positions but " +
                        std::to_string(probabilities.size()) + " probabilities");
  }
  thread_local std::vector<std::size_t> passing;
  passing.clear();
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (model.passes(probabilities[i])) passing.push_back(i);
  }
  const auto keep = static_cast<std::size_t>(std::max<std::int64_t>(budget, 0));
  if (passing.size() > keep) {
    const auto better = [&](std::size_t a, std::size_t b) {
      return probabilities[a] != probabilities[b] ? probabilities[a] > probabilities[b] : positions[a] > positions[b];
    };
    std::nth_element(passing.begin(), passing.begin() + static_cast<std::ptrdiff_t>(keep), passing.end(), better);
    passing.resize(keep);
  }
  for (const std::size_t i : passing) out.push_back(positions[i]);
  std::sort(out.begin(), out.end());
}

// --- The model file ----------------------------------------------------------------------------

HeatModelError::HeatModelError(std::filesystem::path path, std::string pointer, const std::string& message)
    : InputError(path.string() + ": " + (pointer.empty() ? "" : pointer + ": ") + message),
      path_(std::move(path)),
      pointer_(std::move(pointer)),
      message_(message) {}

namespace {

using Json = nlohmann::ordered_json;

Json metrics_json(const HeatMetrics& m) {
  Json j;
  j["accesses"] = m.accesses;
  j["predicted"] = m.predicted;
  j["used"] = m.used;
  j["misses"] = m.misses;
  j["precision"] = m.precision();
  j["recall"] = m.recall();
  j["f1"] = m.f1();
  return j;
}

Json features_json(const HeatFeatures& f) {
  Json j = Json::array();
  for (const double v : f) j.push_back(v);
  return j;
}

// A checked view of the parsed document: every accessor names the JSON pointer of what it reads.
class Checked {
 public:
  Checked(const nlohmann::json& j, std::string pointer, const std::filesystem::path& origin)
      : j_(j), pointer_(std::move(pointer)), origin_(origin) {}

  [[noreturn]] void fail(const std::string& message) const { throw HeatModelError(origin_, pointer_, message); }

  // An object with exactly these keys (all required).
  void object(std::initializer_list<std::string_view> keys) const {
    if (!j_.is_object()) fail("expected an object, got " + kind());
    for (const auto& [key, value] : j_.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        std::string choices;
        for (const auto k : keys) choices += (choices.empty() ? "\"" : ", \"") + std::string(k) + "\"";
        Checked(value, pointer_ + "/" + key, origin_).fail("unknown key; expected one of " + choices);
      }
    }
    for (const auto k : keys) {
      if (!j_.contains(std::string(k))) fail("missing key \"" + std::string(k) + "\"");
    }
  }
  [[nodiscard]] Checked at(std::string_view key) const {
    const auto it = j_.find(std::string(key));
    if (it == j_.end()) fail("missing key \"" + std::string(key) + "\"");
    return Checked(*it, pointer_ + "/" + std::string(key), origin_);
  }
  [[nodiscard]] Checked at(std::size_t index) const {
    return Checked(j_.at(index), pointer_ + "/" + std::to_string(index), origin_);
  }
  [[nodiscard]] std::size_t array(std::size_t min, std::size_t max) const {
    if (!j_.is_array()) fail("expected an array, got " + kind());
    if (j_.size() < min || j_.size() > max) {
      fail("expected " + (min == max ? std::to_string(min) : "between " + std::to_string(min) + " and " + std::to_string(max)) +
           " elements, got " + std::to_string(j_.size()));
    }
    return j_.size();
  }
  [[nodiscard]] double number(double lo = -std::numeric_limits<double>::max(),
                              double hi = std::numeric_limits<double>::max()) const {
    if (!j_.is_number()) fail("expected a finite number, got " + kind());
    const double v = j_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    if (v < lo || v > hi) fail("expected a number in [" + text_of(lo) + ", " + text_of(hi) + "], got " + text_of(v));
    return v;
  }
  [[nodiscard]] std::int64_t integer(std::int64_t lo, std::int64_t hi) const {
    if (!j_.is_number_integer()) fail("expected an integer, got " + kind());
    if (j_.is_number_unsigned() && j_.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      fail("expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    const auto v = j_.get<std::int64_t>();
    if (v < lo || v > hi) {
      fail("expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    }
    return v;
  }
  [[nodiscard]] std::uint64_t unsigned_integer() const {
    if (!j_.is_number_unsigned() && !(j_.is_number_integer() && j_.get<std::int64_t>() >= 0)) {
      fail("expected a non-negative integer, got " + kind());
    }
    return j_.get<std::uint64_t>();
  }
  [[nodiscard]] std::string text() const {
    if (!j_.is_string()) fail("expected a string, got " + kind());
    return j_.get<std::string>();
  }
  [[nodiscard]] HeatFeatures features(bool positive) const {
    (void)array(kHeatFeatureCount, kHeatFeatureCount);
    HeatFeatures f{};
    for (std::size_t i = 0; i < kHeatFeatureCount; ++i) {
      const Checked element = at(i);
      f[i] = element.number();
      if (positive && !(f[i] > 0.0)) element.fail("expected a number > 0, got " + text_of(f[i]));
    }
    return f;
  }

 private:
  [[nodiscard]] std::string kind() const {
    if (j_.is_string()) return "the string " + j_.dump();
    if (j_.is_number()) return "the number " + j_.dump();
    return j_.type_name();
  }
  static std::string text_of(double v) { return nlohmann::json(v).dump(); }
  const nlohmann::json& j_;
  std::string pointer_;
  const std::filesystem::path& origin_;
};

HeatMetrics read_metrics(const Checked& c) {
  c.object({"accesses", "predicted", "used", "misses", "precision", "recall", "f1"});
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  HeatMetrics m;
  m.accesses = c.at("accesses").integer(0, kMax);
  m.predicted = c.at("predicted").integer(0, kMax);
  m.used = c.at("used").integer(0, m.predicted);
  m.misses = c.at("misses").integer(0, kMax);
  if (m.used > m.misses) c.at("used").fail("expected at most the misses (" + std::to_string(m.misses) + ")");
  // Derived values: present for readers of the file, checked against the counts.
  const std::array<std::pair<std::string_view, double>, 3> derived{
      {{"precision", m.precision()}, {"recall", m.recall()}, {"f1", m.f1()}}};
  for (const auto& d : derived) {
    const Checked v = c.at(d.first);
    if (std::abs(v.number(0.0, 1.0) - d.second) > 1e-9) {
      v.fail("expected " + nlohmann::json(d.second).dump() + " (from the counts)");
    }
  }
  return m;
}

}  // namespace

std::string heat_model_json(const HeatModel& model) {
  Json j;
  j["schema"] = kHeatModelSchema;
  j["features"] = Json::array();
  for (const auto name : kFeatureNames) j["features"].push_back(name);
  j["decay_per_step"] = kHeatDecayPerStep;
  j["history_steps"] = kHeatHistorySteps;
  j["normalisation"] = {{"mean", features_json(model.mean)}, {"scale", features_json(model.scale)}};
  j["weights"] = features_json(model.weight);
  j["bias"] = model.bias;
  j["threshold"] = model.threshold;
  const HeatProvenance& p = model.provenance;
  Json t;
  t["tool"] = p.tool;
  t["traces"] = Json::array();
  for (const auto& trace : p.traces) {
    Json tj;
    tj["file"] = trace.file;
    tj["sha256"] = trace.sha256;
    tj["layers"] = trace.layers;
    tj["requests"] = trace.requests;
    tj["top_k"] = trace.top_k;
    tj["warmup_steps"] = trace.warmup_steps;
    tj["decode_steps"] = trace.decode_steps;
    tj["holdout_steps"] = trace.holdout_steps;
    t["traces"].push_back(tj);
  }
  t["holdout"] = p.holdout;
  t["budget"] = p.budget;
  t["pool"] = p.pool_entries != 0 ? Json{{"entries", p.pool_entries}} : Json{{"ratio", p.pool_ratio}};
  t["seed"] = p.seed;
  t["l2"] = p.l2;
  t["negative_keep"] = p.negative_keep;
  t["train_samples"] = p.train_samples;
  t["train_positives"] = p.train_positives;
  t["iterations"] = p.iterations;
  t["candidate_recall"] = p.candidate_recall;
  t["metrics"] = {{"train", metrics_json(p.train_metrics)},
                  {"holdout", metrics_json(p.holdout_metrics)},
                  {"holdout_hot_window", metrics_json(p.hot_window_metrics)},
                  {"holdout_random", metrics_json(p.random_metrics)}};
  j["training"] = t;
  return j.dump(2) + "\n";
}

HeatModel parse_heat_model(std::string_view text, const std::filesystem::path& origin) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw HeatModelError(origin, "", std::string("not valid JSON: ") + e.what());
  }
  const Checked root(document, "", origin);
  root.object({"schema", "features", "decay_per_step", "history_steps", "normalisation", "weights", "bias", "threshold",
               "training"});
  if (root.at("schema").text() != kHeatModelSchema) {
    root.at("schema").fail("expected \"" + std::string(kHeatModelSchema) + "\"");
  }
  const Checked names = root.at("features");
  (void)names.array(kHeatFeatureCount, kHeatFeatureCount);
  for (std::size_t i = 0; i < kHeatFeatureCount; ++i) {
    if (names.at(i).text() != kFeatureNames[i]) {
      names.at(i).fail("expected \"" + std::string(kFeatureNames[i]) + "\" (this build's features, in order)");
    }
  }
  if (root.at("decay_per_step").number() != kHeatDecayPerStep) {
    root.at("decay_per_step").fail("expected " + nlohmann::json(kHeatDecayPerStep).dump() +
                                   " (this build's feature definition; retrain the model)");
  }
  if (root.at("history_steps").integer(0, 1 << 30) != kHeatHistorySteps) {
    root.at("history_steps").fail("expected " + std::to_string(kHeatHistorySteps) +
                                  " (this build's feature definition; retrain the model)");
  }
  HeatModel m;
  const Checked norm = root.at("normalisation");
  norm.object({"mean", "scale"});
  m.mean = norm.at("mean").features(false);
  m.scale = norm.at("scale").features(true);
  m.weight = root.at("weights").features(false);
  m.bias = root.at("bias").number();
  m.threshold = root.at("threshold").number(0.0, 1.0);

  const Checked t = root.at("training");
  t.object({"tool", "traces", "holdout", "budget", "pool", "seed", "l2", "negative_keep", "train_samples",
            "train_positives", "iterations", "candidate_recall", "metrics"});
  HeatProvenance& p = m.provenance;
  p.tool = t.at("tool").text();
  const Checked traces = t.at("traces");
  const std::size_t n = traces.array(0, 1 << 20);
  for (std::size_t i = 0; i < n; ++i) {
    const Checked tr = traces.at(i);
    tr.object({"file", "sha256", "layers", "requests", "top_k", "warmup_steps", "decode_steps", "holdout_steps"});
    HeatTrainingTrace h;
    h.file = tr.at("file").text();
    h.sha256 = tr.at("sha256").text();
    if (h.sha256.size() != 64 || h.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      tr.at("sha256").fail("expected 64 lowercase hexadecimal digits");
    }
    constexpr std::int64_t kU32 = 0xFFFFFFFFLL;
    h.layers = static_cast<int>(tr.at("layers").integer(1, std::numeric_limits<int>::max()));
    h.requests = static_cast<int>(tr.at("requests").integer(1, std::numeric_limits<int>::max()));
    h.top_k = tr.at("top_k").integer(1, kU32);
    h.warmup_steps = static_cast<int>(tr.at("warmup_steps").integer(0, std::numeric_limits<int>::max()));
    h.decode_steps = static_cast<int>(tr.at("decode_steps").integer(0, std::numeric_limits<int>::max()));
    h.holdout_steps = static_cast<int>(tr.at("holdout_steps").integer(0, h.decode_steps));
    p.traces.push_back(h);
  }
  p.holdout = t.at("holdout").number(0.0, 1.0);
  p.budget = t.at("budget").integer(0, std::numeric_limits<std::int64_t>::max());
  const Checked pool = t.at("pool");
  if (!document.at("training").at("pool").is_object() || document.at("training").at("pool").size() != 1) {
    pool.fail("expected an object with one key, \"ratio\" or \"entries\"");
  }
  if (document.at("training").at("pool").contains("ratio")) {
    pool.object({"ratio"});
    p.pool_ratio = pool.at("ratio").number(0.0, 1.0);
  } else {
    pool.object({"entries"});
    p.pool_entries = pool.at("entries").integer(1, std::numeric_limits<std::int64_t>::max());
  }
  p.seed = t.at("seed").unsigned_integer();
  p.l2 = t.at("l2").number(0.0);
  p.negative_keep = t.at("negative_keep").number(0.0, 1.0);
  p.train_samples = t.at("train_samples").integer(0, std::numeric_limits<std::int64_t>::max());
  p.train_positives = t.at("train_positives").integer(0, p.train_samples);
  p.iterations = static_cast<int>(t.at("iterations").integer(0, std::numeric_limits<int>::max()));
  p.candidate_recall = t.at("candidate_recall").number(0.0, 1.0);
  const Checked metrics = t.at("metrics");
  metrics.object({"train", "holdout", "holdout_hot_window", "holdout_random"});
  p.train_metrics = read_metrics(metrics.at("train"));
  p.holdout_metrics = read_metrics(metrics.at("holdout"));
  p.hot_window_metrics = read_metrics(metrics.at("holdout_hot_window"));
  p.random_metrics = read_metrics(metrics.at("holdout_random"));
  return m;
}

HeatModel load_heat_model(const std::filesystem::path& path) {
  std::string text;
  if (const ReadProblem problem = read_whole_file(path, text); problem != ReadProblem::none) {
    throw HeatModelError(path, "", "cannot read the heat model: " + describe(problem));
  }
  return parse_heat_model(text, path);
}

std::string heat_model_sha256(const std::filesystem::path& path) {
  std::string text;
  if (const ReadProblem problem = read_whole_file(path, text); problem != ReadProblem::none) {
    throw HeatModelError(path, "", "cannot read the heat model: " + describe(problem));
  }
  return sha256_hex(text);
}

}  // namespace ess
