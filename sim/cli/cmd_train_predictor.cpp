// `ess-sim train-predictor TRACE... -o MODEL.json [--holdout 0.2] [--budget N]
// [--pool-ratio R | --pool-entries N] [--seed S] [--l2 L] [--quiet]`: trains the learned prefetch
// predictor's heat model on recorded access traces (sim/offload/heat_training.h) and reports its
// held-out precision and recall beside hot-window's and a random choice's on the same accesses.
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/io/atomic_file.h"
#include "sim/offload/heat_training.h"

namespace ess {

namespace {

std::string fixed_decimals(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

void print_row(std::ostream& out, const std::string& name, const HeatMetrics& m) {
  const double per_access = m.accesses == 0 ? 0.0 : static_cast<double>(m.predicted) / static_cast<double>(m.accesses);
  out << "  " << std::left << std::setw(22) << name << std::right << std::setw(10) << fixed_decimals(m.precision(), 4)
      << std::setw(10) << fixed_decimals(m.recall(), 4) << std::setw(10) << fixed_decimals(m.f1(), 4) << std::setw(12)
      << fixed_decimals(per_access, 1) << "\n";
}

void print_report(std::ostream& out, const HeatModel& model, const std::string& output) {
  const HeatProvenance& p = model.provenance;
  out << "trained on " << p.traces.size() << " trace" << (p.traces.size() == 1 ? "" : "s") << ":\n";
  for (const auto& t : p.traces) {
    out << "  " << t.file << ": " << t.layers << " layers x " << t.requests << " requests, top_k " << t.top_k << ", "
        << t.warmup_steps << " warm-up and " << t.decode_steps << " decode steps, the last " << t.holdout_steps
        << " held out\n";
  }
  out << "pools: LRU, " << (p.pool_entries != 0 ? std::to_string(p.pool_entries) + " entries" : fixed_decimals(p.pool_ratio, 3) + " x context")
      << "; budget " << p.budget << " entries per access\n";
  out << "samples: " << p.train_samples << " (" << p.train_positives << " misses), negatives kept at "
      << fixed_decimals(p.negative_keep, 4) << ", fitted in " << p.iterations << " Newton iterations\n";
  out << "weights (normalised features):";
  const auto names = heat_feature_names();
  for (std::size_t i = 0; i < names.size(); ++i) out << (i == 0 ? " " : ", ") << names[i] << " " << fixed_decimals(model.weight[i], 3);
  out << "; bias " << fixed_decimals(model.bias, 3) << "\n";
  out << "threshold: " << fixed_decimals(model.threshold, 3)
      << (model.threshold >= 1.0 ? " (no threshold reaches " + fixed_decimals(kHeatMinLift, 0) + " x the candidates' base rate: the model predicts nothing)"
                                 : " (the best training F1 with a precision >= " + fixed_decimals(kHeatMinLift, 0) + " x the candidates' base rate)")
      << "\n";
  out << "held out (" << p.holdout_metrics.accesses << " accesses, " << p.holdout_metrics.misses << " misses):\n";
  out << "  " << std::left << std::setw(22) << "predictor" << std::right << std::setw(10) << "precision" << std::setw(10)
      << "recall" << std::setw(10) << "F1" << std::setw(12) << "per access" << "\n";
  print_row(out, "learned", p.holdout_metrics);
  print_row(out, "hot-window", p.hot_window_metrics);
  print_row(out, "random (as many)", p.random_metrics);
  out << "  misses among the candidates (the learned recall's ceiling): " << fixed_decimals(p.candidate_recall, 4) << "\n";
  print_row(out, "learned, training", p.train_metrics);
  out << "wrote " << output << "\n";
}

}  // namespace

void add_train_predictor_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::vector<std::string> traces;
    std::string output;
    double holdout = 0.2;
    std::int64_t budget = 512;
    double pool_ratio = 0.0;
    std::int64_t pool_entries = 0;
    std::uint64_t seed = 1;
    double l2 = 1.0;
    bool quiet = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("train-predictor",
                                 "Train the learned prefetch predictor's heat model on ESS-TOPK access traces "
                                 "(validate --prepare writes them); report held-out precision and recall");
  cmd->add_option("TRACE", o->traces, "Access traces (ESS-TOPK, sim/offload/README.md)")->required();
  cmd->add_option("-o,--output", o->output, "The model file to write (JSON, ess-sim/heat-model/v1)")->required();
  cmd->add_option("--holdout", o->holdout, "Fraction of each trace's decode steps held out, the last ones (default 0.2)");
  cmd->add_option("--budget", o->budget, "Most entries predicted per request, layer and step: the scenario's "
                                         "cache.prefetch.buffer_entries (default 512)");
  cmd->add_option("--pool-ratio", o->pool_ratio, "GPU pool per request and layer as a ratio of the context (default 0.2)");
  cmd->add_option("--pool-entries", o->pool_entries, "GPU pool per request and layer in entries (instead of --pool-ratio)");
  cmd->add_option("--seed", o->seed, "Seed of the thinning of negative samples and of the random baseline (default 1)");
  cmd->add_option("--l2", o->l2, "L2 penalty on the normalised weights (default 1)");
  cmd->add_flag("--quiet", o->quiet, "No progress lines on stderr");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      if (!(o->holdout > 0.0 && o->holdout < 1.0)) {
        throw ConfigError("--holdout " + fixed_decimals(o->holdout, 6), "", "expected a fraction in (0, 1), e.g. 0.2");
      }
      if (o->budget < 1) throw ConfigError("--budget " + std::to_string(o->budget), "", "expected an integer >= 1");
      if (o->pool_ratio != 0.0 && o->pool_entries != 0) {
        throw ConfigError("--pool-ratio", "", "give either --pool-ratio or --pool-entries, not both");
      }
      if (o->pool_entries < 0) throw ConfigError("--pool-entries " + std::to_string(o->pool_entries), "", "expected an integer >= 1");
      if (o->pool_ratio != 0.0 && !(o->pool_ratio > 0.0 && o->pool_ratio <= 1.0)) {
        throw ConfigError("--pool-ratio " + fixed_decimals(o->pool_ratio, 6), "", "expected a ratio in (0, 1], e.g. 0.2");
      }
      if (!(o->l2 >= 0.0) || !std::isfinite(o->l2)) throw ConfigError("--l2", "", "expected a penalty >= 0");
      HeatTrainingOptions t;
      t.holdout = o->holdout;
      t.budget = o->budget;
      t.pool_entries = o->pool_entries;
      t.pool_ratio = o->pool_entries != 0 ? 0.0 : (o->pool_ratio != 0.0 ? o->pool_ratio : 0.2);
      t.seed = o->seed;
      t.l2 = o->l2;
      t.tool = std::string("ess-sim ") + ESS_SIM_VERSION + " train-predictor";
      if (!o->quiet) t.progress = [](const std::string& line) { std::cerr << "train-predictor: " << line << "\n"; };
      const HeatModel model = train_heat_model(o->traces, t);
      write_file_atomically(o->output, heat_model_json(model));
      print_report(out, model, o->output);
      return kExitOk;
    };
  });
}

}  // namespace ess
