// `ess-sim bench FILE [--steps N] [--set path=value ...] [--json]`: how fast the simulator runs a
// scenario: wall time per simulated step and SimGrid activities per second. A benchmark, not a
// test: its numbers depend on the machine.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"

namespace ess {

void add_bench_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string file;
    std::vector<std::string> sets;
    std::int64_t steps = 0;
    bool json = false;
    bool allow_large = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Measure simulator speed on a scenario: wall time per simulated step and "
                                          "SimGrid activities per second (no trace, no output files)");
  cmd->add_option("FILE", o->file, "Scenario JSON file")->required();
  cmd->add_option("--steps", o->steps, "Decode steps to simulate (default: workload.decode_steps)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  add_set_option(*cmd, o->sets);
  cmd->add_flag("--json", o->json, "Print a JSON object instead of the table");
  add_allow_large_flag(*cmd, o->allow_large);
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Scenario scenario = load_scenario(o->file, parse_overrides(o->sets));
      if (scenario.serving) return bench_serving_scenario(scenario, o->json, resource_limits(o->allow_large), out);
      Simulation sim(scenario, SimulationOptions{o->steps, 0, resource_limits(o->allow_large)});
      const auto begin = std::chrono::steady_clock::now();
      const RunResult r = sim.run();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      const double steps = static_cast<double>(r.steps);
      const double activities = static_cast<double>(r.activities);
      // The preflight estimate beside the measurement, so its constants can be checked on any machine.
      const ResourceEstimate estimate = scenario.prefill ? estimate_prefill_resources(prefill_run(scenario), r.steps)
                                                         : estimate_resources(decode_run(scenario), r.batch_per_gpu, r.steps, 0, 0);
      if (o->json) {
        out << nlohmann::ordered_json{{"scenario", scenario.name.empty() ? scenario.origin : scenario.name},
                                      {"steps", r.steps},
                                      {"gpus", r.gpus},
                                      {"wall_s", wall},
                                      {"wall_per_step_s", wall / steps},
                                      {"activities", r.activities},
                                      {"activities_per_s", activities / wall},
                                      {"estimated_wall_s", estimate.wall_seconds()},
                                      {"estimated_memory_bytes", estimate.memory_bytes()}}
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
        return 0;
      }
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "%s: %lld steps on %d GPUs (batch %lld per GPU)\n"
                    "  wall time            %.3f s   (%.2f ms per simulated step, includes building the step plans)\n"
                    "  SimGrid activities   %.0f   (%.0f per step, %.0f per second)\n"
                    "  preflight estimate   %.3f s of wall time, %.2f GB of memory (the limits' estimate)\n",
                    (scenario.name.empty() ? scenario.origin : scenario.name).c_str(), static_cast<long long>(r.steps),
                    r.gpus, static_cast<long long>(r.batch_per_gpu), wall, wall / steps * 1e3, activities,
                    activities / steps, activities / wall, estimate.wall_seconds(), estimate.memory_bytes() / 1e9);
      out << buf;
      return 0;
    };
  });
}

}  // namespace ess
