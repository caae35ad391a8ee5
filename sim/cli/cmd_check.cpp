// `ess-sim check FILE [--set path=value ...]`: validate a scenario and print it resolved.
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/scenario.h"

namespace ess {

void add_check_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string file;
    std::vector<std::string> sets;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check", "Validate a scenario and print it resolved: every value the simulator "
                                          "will use, with its source (preset, file, --set or default)");
  cmd->add_option("FILE", opts->file, "Scenario JSON file")->required();
  cmd->add_option("--set", opts->sets, "Override a field: dotted.path=value (repeatable), e.g. "
                                       "--set workload.context_length=131072");
  cmd->callback([opts, &action] {
    action = [opts](std::ostream& out) {
      std::vector<Override> overrides;
      for (const auto& s : opts->sets) overrides.push_back(parse_override(s));
      const Scenario scenario = load_scenario(opts->file, overrides);
      out << format_resolved(scenario.resolved);
      return 0;
    };
  });
}

}  // namespace ess
