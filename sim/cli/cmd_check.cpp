// `ess-sim check FILE [--set path=value ...] [--allow-large] [--estimate]`: validate a scenario
// (everything `run` checks before simulating) and print it resolved, or what its run will need.
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"
#include "sim/serving/serving_run.h"

namespace ess {

void add_check_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string file;
    std::vector<std::string> sets;
    bool allow_large = false;
    bool estimate = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "Validate a scenario and print it resolved: every value the simulator "
                                          "will use, with its source (preset, file, --set or default)");
  cmd->add_option("FILE", opts->file, "Scenario JSON file")->required();
  add_set_option(*cmd, opts->sets);
  add_allow_large_flag(*cmd, opts->allow_large);
  cmd->add_flag("--estimate", opts->estimate,
                "Print what the run will need (requests, step-table runs, memory, wall time) instead of the resolved scenario");
  cmd->callback([opts, &action] {
    action = [opts](std::ostream& out) {
      const Scenario scenario = load_scenario(opts->file, parse_overrides(opts->sets));
      // What `run` would refuse before simulating (memory, cost models, a replay trace, resource
      // limits), `check` refuses too.
      const ResourceLimits limits = resource_limits(opts->allow_large);
      // A serving scenario's decode side is checked as a decode run of its workload.
      const Preflight p = preflight(scenario.serving ? RunRequest{decode_run(scenario)} : run_request(scenario), 0, 1, limits);
      // A serving scenario: its requests drawn (a trace read and checked), its memory plan and
      // every request against it, and the estimate of its step-table runs, as `run` would refuse them.
      std::string estimate;
      if (scenario.serving) {
        const Prepared prepared = prepare(scenario, limits);
        estimate = "serving run: " + std::to_string(prepared.requests.size()) + " requests, " +
                   std::to_string(prepared.table_runs) + " step-table runs, batch bound " +
                   std::to_string(prepared.memory.batch_bound()) + " per GPU; " + describe_estimate(prepared.estimate);
      } else if (!p.estimate.memory.empty()) {
        estimate = "run: " + describe_estimate(p.estimate);
      }
      if (opts->estimate) {
        out << (scenario.name.empty() ? scenario.origin : scenario.name) << ": " << (estimate.empty() ? "nothing to estimate\n" : estimate);
      } else {
        out << format_resolved(scenario.resolved);
      }
      return 0;
    };
  });
}

}  // namespace ess
