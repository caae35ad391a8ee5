// `ess-sim train-predictor`: trains on ESS-TOPK traces, writes a model a scenario loads, reports
// held-out precision and recall; on a trace with a learnable pattern the model beats a random
// choice of candidates, and that check fails on a trace without one; bad input writes nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/rng.h"
#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/synthetic_access.h"
#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"

namespace {

constexpr int kLayers = 2;
constexpr int kRequests = 2;
constexpr std::int64_t kTopK = 64;
constexpr std::int64_t kContext = 4096;

// Selections of top_k positions: with `pattern`, 16 hot positions per (layer, request), half of
// them selected at each step (those with i + step even: every hot position every other step), the
// rest uniform over the context; without, all uniform. There is no recent window, so that nothing
// but the hot set can be learnt.
class HotSetAccess final : public ess::AccessModel {
 public:
  explicit HotSetAccess(bool pattern) : pattern_(pattern) {}
  void select(int step, int layer, int request, std::int64_t context, std::vector<std::int64_t>& out) override {
    std::set<std::int64_t> picks;
    if (pattern_) {
      for (int i = 0; i < 16; ++i) {
        if ((i + step + 1000) % 2 == 0) picks.insert(100 + 37 * i + 5 * layer + request);
      }
    }
    ess::Rng rng(static_cast<std::uint64_t>(step + 1000) * 1000003ULL + static_cast<std::uint64_t>(layer) * 101ULL +
                 static_cast<std::uint64_t>(request));
    while (static_cast<std::int64_t>(picks.size()) < std::min(kTopK, context)) {
      picks.insert(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(context))));
    }
    out.assign(picks.begin(), picks.end());
  }

 private:
  bool pattern_;
};

// 4 warm-up windows and `decode` steps, as validate --prepare writes them.
std::vector<ess::TraceStep> trace_steps(int decode) {
  std::vector<ess::TraceStep> steps;
  for (int w = 4; w >= 1; --w) steps.push_back({-w, kContext - w});
  for (int s = 0; s < decode; ++s) steps.push_back({s, kContext + s});
  return steps;
}

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(ess::test::read_file(p)); }

// The check this test relies on: held out, the learned predictor's precision is more than twice
// that of a random choice of as many candidates, and by 0.05 at least.
bool beats_random(const nlohmann::json& model) {
  const auto& m = model.at("training").at("metrics");
  const double learned = m.at("holdout").at("precision").get<double>();
  const double random = m.at("holdout_random").at("precision").get<double>();
  return learned > 2.0 * random + 0.05;
}

ess::test::CliRun train(const std::filesystem::path& trace, const std::filesystem::path& model,
                        std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"train-predictor", trace.string(), "-o", model.string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return ess::test::run_cli(args);
}

}  // namespace

TEST_CASE("train-predictor: a model trained on a synthetic trace loads in a scenario and runs, and its held-out metrics are reported") {
  ess::test::ScratchDir dir("train-predictor");
  ess::SyntheticAccessParams params;
  params.layers = 4;
  params.top_k = kTopK;
  params.recent_window = 8;
  ess::SyntheticAccess synthetic(params);
  const auto trace = dir.path() / "synthetic.esstrace";
  ess::write_access_trace(trace, synthetic, 4, kRequests, kTopK, trace_steps(10));
  const auto model = dir.path() / "model.json";
  const auto r = train(trace, model, {"--pool-ratio", "0.05", "--budget", "16"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("held out") != std::string::npos);
  CHECK(r.out.find("hot-window") != std::string::npos);
  const nlohmann::json m = read_json(model);
  CHECK(m.at("schema") == "ess-sim/heat-model/v1");
  const auto& t = m.at("training");
  CHECK(t.at("traces").at(0).at("decode_steps") == 10);
  CHECK(t.at("traces").at(0).at("holdout_steps") == 2);
  CHECK(t.at("traces").at(0).at("sha256") == ess::sha256_hex(ess::test::read_file(trace)));
  for (const char* which : {"train", "holdout", "holdout_hot_window", "holdout_random"}) {
    INFO(which);
    for (const char* metric : {"precision", "recall", "f1"}) {
      const double v = t.at("metrics").at(which).at(metric).get<double>();
      CHECK(v >= 0.0);
      CHECK(v <= 1.0);
    }
    CHECK(t.at("metrics").at(which).at("accesses").get<int>() > 0);
  }
  // The same inputs give the same bytes.
  const auto again = dir.path() / "again.json";
  REQUIRE(train(trace, again, {"--pool-ratio", "0.05", "--budget", "16"}).code == 0);
  CHECK(ess::test::read_file(again) == ess::test::read_file(model));

  const std::string scenario = std::string(ESS_SOURCE_DIR) + "/scenarios/policies/prefetch-learned.json";
  const auto run = ess::test::run_cli({"run", scenario, "--set", "cache.prefetch.model=" + model.string(), "--steps", "1"});
  INFO(run.err);
  CHECK(run.code == 0);
  CHECK(run.out.find("learned") != std::string::npos);
  // A model given to another predictor, or a bad model, is an error of the scenario.
  const auto other = ess::test::run_cli({"check", scenario, "--set", "cache.prefetch.predictor=hot-window"});
  CHECK(other.code == 2);
  CHECK(other.err.find("/cache/prefetch/model") != std::string::npos);
  const auto missing = ess::test::run_cli({"check", scenario, "--set", "cache.prefetch.model=" + (dir.path() / "none.json").string()});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("none.json") != std::string::npos);
}

TEST_CASE("train-predictor: on a trace with a learnable pattern the model beats a random choice, and the check fails without one") {
  ess::test::ScratchDir dir("train-predictor-pattern");
  for (const bool pattern : {true, false}) {
    INFO("pattern " << pattern);
    HotSetAccess access(pattern);
    const auto trace = dir.path() / (pattern ? "hot.esstrace" : "uniform.esstrace");
    ess::write_access_trace(trace, access, kLayers, kRequests, kTopK, trace_steps(20));
    const auto model = dir.path() / (pattern ? "hot.json" : "uniform.json");
    // A pool of one selection: whatever this step does not select is gone at the next.
    const auto r = train(trace, model, {"--pool-entries", "64", "--budget", "16"});
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json m = read_json(model);
    const auto& metrics = m.at("training").at("metrics");
    INFO("learned " << metrics.at("holdout").dump() << "\nrandom " << metrics.at("holdout_random").dump());
    CHECK(beats_random(m) == pattern);
    if (pattern) {
      // The 8 hot positions due at each access are missed, and predicted (with the best training
      // F1 the model fills its budget of 16, so half of its predictions are right).
      CHECK(metrics.at("holdout").at("used").get<double>() >= 0.9 * 8.0 * metrics.at("holdout").at("accesses").get<double>());
      CHECK(metrics.at("holdout").at("precision").get<double>() > 0.4);
    }
  }
}

TEST_CASE("train-predictor: bad input exits 2 with a precise message and writes no model") {
  ess::test::ScratchDir dir("train-predictor-bad");
  HotSetAccess access(true);
  const auto good = dir.path() / "good.esstrace";
  ess::write_access_trace(good, access, kLayers, kRequests, kTopK, trace_steps(6));
  const auto one_step = dir.path() / "one.esstrace";
  ess::write_access_trace(one_step, access, kLayers, kRequests, kTopK, trace_steps(1));
  const auto odd_warmup = dir.path() / "odd.esstrace";
  ess::write_access_trace(odd_warmup, access, kLayers, kRequests, kTopK, {{-3, 1000}, {0, kContext}, {1, kContext + 1}});
  const auto truncated = dir.path() / "truncated.esstrace";
  const std::string bytes = ess::test::read_file(good);
  ess::write_file_atomically(truncated, bytes.substr(0, bytes.size() / 2));
  const auto model = dir.path() / "model.json";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"train-predictor", (dir.path() / "none.esstrace").string(), "-o", model.string()}, "none.esstrace: no such file"},
      {{"train-predictor", one_step.string(), "-o", model.string()}, "one.esstrace: has 1 decode steps"},
      {{"train-predictor", odd_warmup.string(), "-o", model.string()}, "odd.esstrace: its warm-up steps must be -W .. -1"},
      {{"train-predictor", truncated.string(), "-o", model.string()}, "truncated.esstrace: byte"},
      {{"train-predictor", good.string(), "-o", model.string(), "--holdout", "1.5"}, "--holdout"},
      {{"train-predictor", good.string(), "-o", model.string(), "--budget", "0"}, "--budget"},
      {{"train-predictor", good.string(), "-o", model.string(), "--pool-ratio", "0.2", "--pool-entries", "64"}, "not both"},
      {{"train-predictor", good.string(), "-o", (dir.path() / "no-dir" / "m.json").string()}, "no-dir"},
  };
  for (const auto& [args, words] : cases) {
    INFO(args[1] << " " << words);
    const auto r = ess::test::run_cli(args);
    CHECK(r.code == 2);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(model));
  }
}
