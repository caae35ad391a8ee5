// `ess-sim cost prefill SCENARIO --prompt-length N[,N...] [--tokens-per-gpu T]`: the prefill step of
// a scenario's model, hardware, layout, engine and execution (its decode batch, context, cache and
// serving sections are not used), simulated on the event engine for each prompt length: step time,
// prompt tokens per second and where the time goes.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/cli.h"
#include "sim/cli/cost_common.h"
#include "sim/config/config_error.h"
#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"
#include "sim/metrics/prefill_results.h"
#include "sim/metrics/results.h"

namespace ess {

namespace {

struct PrefillOptions {
  std::string file;
  std::vector<std::int64_t> prompt_lengths;
  std::int64_t tokens_per_gpu = 0;  // 0: one prompt per GPU (the prompt length)
  int steps = 1;
  std::vector<std::string> sets;
  bool json = false;
  bool allow_large = false;
};

struct Row {
  std::int64_t prompt_length = 0;
  std::int64_t tokens_per_gpu = 0;
  double step = 0.0;
  double per_gpu = 0.0;
  nlohmann::ordered_json categories;
};

int print_prefill(const PrefillOptions& o, std::ostream& out) {
  const Scenario base = load_scenario(o.file, parse_overrides(o.sets));
  std::vector<Row> rows;
  for (const std::int64_t length : o.prompt_lengths) {
    // Prefill computes every prompt token's cache on the GPU, whatever the scenario's cache mode.
    const PrefillRun run = prefill_run(base, base.hardware.nodes, base.parallelism,
                                       PrefillConfig{length, 0, o.tokens_per_gpu > 0 ? o.tokens_per_gpu : length, o.steps});
    Simulation sim(run, SimulationOptions(o.steps, 0, resource_limits(o.allow_large)));
    const RunResult r = sim.run();
    rows.push_back(Row{length, run.work.tokens_per_gpu, step_stats(r.step_time).mean, prefill_tokens_per_s_per_gpu(run, r),
                       time_by_category(r)});
  }
  const int per_node = base.hardware.gpu.count;
  if (o.json) {
    nlohmann::ordered_json j = {{"scenario", o.file}, {"model", base.model.name}, {"hardware", base.hardware.name},
                                {"gpus", base.hardware.total_gpus()}, {"rows", nlohmann::ordered_json::array()}};
    for (const Row& row : rows) {
      j["rows"].push_back({{"prompt_length", row.prompt_length},
                           {"tokens_per_gpu", row.tokens_per_gpu},
                           {"step_time_s", row.step},
                           {"prompt_tokens_per_s_per_gpu", row.per_gpu},
                           {"prompt_tokens_per_s_node", row.per_gpu * per_node},
                           {"time_by_category_s", row.categories}});
    }
    out << j.dump() << "\n";
    return 0;
  }
  out << "prefill: " << base.model.name << " on " << base.hardware.total_gpus() << " x " << base.hardware.name
      << " (attention DP" << base.parallelism.attention_dp << " x TP" << base.parallelism.tensor_parallel << ", EP"
      << base.parallelism.expert_parallel << "), engine " << base.engine.name << ", "
      << (base.execution.micro_batches == 2 ? "two-batch overlap" : "one micro-batch") << "\n";
  out << "  prompt  tokens/GPU    step (ms)   tokens/s/GPU  tokens/s/node   gemm  attn  idx  comm  other (% of step)\n";
  for (const Row& row : rows) {
    const auto pct = [&](const char* key) { return 100.0 * row.categories.at(key).get<double>() / row.step; };
    const double known = pct("gemm") + pct("attention") + pct("indexer") + pct("collectives");
    char line[200];
    std::snprintf(line, sizeof line, "  %6lld  %10lld  %11.3f  %13.0f  %13.0f  %5.1f %5.1f %4.1f %5.1f  %5.1f\n",
                  static_cast<long long>(row.prompt_length), static_cast<long long>(row.tokens_per_gpu), row.step * 1e3,
                  row.per_gpu, row.per_gpu * per_node, pct("gemm"), pct("attention"), pct("indexer"), pct("collectives"),
                  100.0 - known);
    out << line;
  }
  out << "  (every attention replica runs the same prompts; step time = the slowest GPU; sim/README.md \"Prefill\")\n";
  return 0;
}

}  // namespace

void cost_cli::add_cost_prefill_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<PrefillOptions>();
  auto* cmd = cost->add_subcommand(
      "prefill", "A prefill step of a scenario's model, hardware, layout and engine at each prompt length, on the event "
                 "engine (the scenario's decode batch, context, cache and serving sections are not used)");
  cmd->add_option("SCENARIO", o->file, "Scenario JSON file (decode or prefill)")->required();
  cmd->add_option("--prompt-length", o->prompt_lengths, "Prompt tokens (repeatable or comma-separated)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{16} << 20));
  cmd->add_option("--tokens-per-gpu", o->tokens_per_gpu,
                  "Prompt tokens per GPU per step (default: the prompt length, one prompt per GPU)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  cmd->add_option("--steps", o->steps, "Steps simulated per prompt length (default 1)")->check(CLI::Range(1, 100));
  add_set_option(*cmd, o->sets);
  cmd->add_flag("--json", o->json, "Print JSON");
  add_allow_large_flag(*cmd, o->allow_large);
  cmd->callback([o, &action] { action = [o](std::ostream& out) { return print_prefill(*o, out); }; });
}

}  // namespace ess
