// `ess-sim run FILE [-o DIR] [--steps N] [--trace-steps N] [--set path=value ...] [--json]`:
// simulate decode steps, print a summary (or results.json with --json) and write the outputs.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/cli/commands.h"
#include "sim/config/scenario.h"
#include "sim/config/utf8.h"
#include "sim/engine/simulation.h"
#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"
#include "sim/metrics/prefill_results.h"
#include "sim/metrics/results.h"

namespace ess {

void add_run_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string file;
    std::string out_dir;
    std::vector<std::string> sets;
    std::int64_t steps = 0;
    int trace_steps = 1;
    bool json = false;
    bool allow_large = false;
    std::string access_store;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("run", "Simulate decode (or prefill) steps of a scenario: step time, throughput, memory, where the "
                                        "time goes; writes results.json and trace.json with -o");
  cmd->add_option("FILE", o->file, "Scenario JSON file")->required();
  cmd->add_option("-o,--output", o->out_dir, "Directory for results.json and trace.json (created if missing)");
  cmd->add_option("--steps", o->steps, "Decode steps to simulate (default: workload.decode_steps)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  cmd->add_option("--trace-steps", o->trace_steps, "Steps recorded in trace.json with -o (default 1; 0 for none)")
      ->check(CLI::Range(0, 1000));
  add_set_option(*cmd, o->sets);
  cmd->add_flag("--json", o->json, "Print results.json to stdout instead of the summary table");
  add_allow_large_flag(*cmd, o->allow_large);
  // Sweeps share cache-simulation results between their points (sim/engine/access_store.h).
  cmd->add_option("--access-store", o->access_store, "")->group("");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Scenario scenario = load_scenario(o->file, parse_overrides(o->sets));
      if (scenario.serving) return run_serving_scenario(scenario, o->out_dir, o->json, resource_limits(o->allow_large), out);
      // Without -o nothing is written, so no trace is recorded.
      SimulationOptions options{o->steps, o->out_dir.empty() ? 0 : o->trace_steps, resource_limits(o->allow_large)};
      options.access_store = o->access_store;
      Simulation sim(scenario, options);
      RunResult result = sim.run();
      const std::string sha = sha256_hex(format_resolved(scenario.resolved));
      const auto results = scenario.prefill ? prefill_results_json(scenario, result, ESS_SIM_VERSION, sha)
                                            : results_json(scenario, result, ESS_SIM_VERSION, sha);
      const std::string results_text = results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      if (!o->out_dir.empty()) {
        const std::filesystem::path dir(o->out_dir);
        ensure_directory(dir);
        result.trace.set_metadata("scenario", printable(scenario.name.empty() ? scenario.origin : scenario.name));
        result.trace.set_metadata("ess_sim_version", ESS_SIM_VERSION);
        // One consistent set: never a new trace beside an old results.json (see write_output_set).
        const std::string trace_text = result.trace.to_json();
        write_output_set(dir, {{"trace.json", trace_text}, {"results.json", results_text}},
                         std::string("ess-sim ") + ESS_SIM_VERSION);
      }
      if (o->json) {
        out << results_text;
      } else {
        out << (scenario.prefill ? prefill_results_table(scenario, result) : results_table(scenario, result));
        if (!o->out_dir.empty()) out << "\n  wrote " << o->out_dir << "/results.json, trace.json and manifest.json\n";
      }
      return 0;
    };
  });
}

}  // namespace ess
