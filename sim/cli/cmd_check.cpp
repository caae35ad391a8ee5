// `ess-sim check FILE [--set path=value ...] [--allow-large]`: validate a scenario (everything `run`
// checks before simulating) and print it resolved.
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"
#include "sim/serving/arrivals.h"

namespace ess {

void add_check_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string file;
    std::vector<std::string> sets;
    bool allow_large = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "Validate a scenario and print it resolved: every value the simulator "
                                          "will use, with its source (preset, file, --set or default)");
  cmd->add_option("FILE", opts->file, "Scenario JSON file")->required();
  add_set_option(*cmd, opts->sets);
  add_allow_large_flag(*cmd, opts->allow_large);
  cmd->callback([opts, &action] {
    action = [opts](std::ostream& out) {
      const Scenario scenario = load_scenario(opts->file, parse_overrides(opts->sets));
      // What `run` would refuse before simulating (memory, cost models, a replay trace, resource
      // limits), `check` refuses too.
      (void)preflight(scenario, 0, 1, resource_limits(opts->allow_large));
      // A serving section's arrival trace is read and checked too.
      if (scenario.serving) (void)arrivals(*scenario.serving, scenario.seed);
      out << format_resolved(scenario.resolved);
      return 0;
    };
  });
}

}  // namespace ess
