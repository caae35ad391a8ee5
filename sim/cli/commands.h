// Registration of each ess-sim subcommand on the CLI11 application (one file per command).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/config/serving_config.h"
#include "sim/engine/preflight.h"

namespace ess {

// What a subcommand runs once parsing succeeded; returns the exit code. May throw an ess::Error:
// an InputError (ConfigError, UnsupportedError, ...) for bad input, an InternalError for a bug.
using CommandAction = std::function<int(std::ostream& out)>;

// --allow-large on the commands that simulate: run past the resource limits (sim/README.md).
void add_allow_large_flag(CLI::App& command, bool& allow_large);
[[nodiscard]] ResourceLimits resource_limits(bool allow_large);
// --set on the commands that load a scenario (parse_overrides reads what it collects); `scope`
// says whose fields it overrides when that is not the one scenario's ("of every probe").
void add_set_option(CLI::App& command, std::vector<std::string>& sets, const std::string& scope = "");
// A positive, finite duration option ("500ms", "90s"), in seconds; ConfigError naming `option`
// and giving `example` otherwise.
[[nodiscard]] double positive_duration(const std::string& text, const std::string& option, const std::string& example);

// A scenario with a "serving" section (cmd_run_serving.cpp): `run` and `bench` call these.
struct Scenario;
int run_serving_scenario(const Scenario& s, const std::string& out_dir, bool json, const ResourceLimits& limits,
                         std::ostream& out);
int bench_serving_scenario(const Scenario& s, bool json, const ResourceLimits& limits, std::ostream& out);
// `search pd` (cmd_search_pd.cpp): sim/serving/pd_search.h's search, printed as a table or (json)
// its document; exit 1 when nothing meets the SLOs.
struct PdSearch;
int print_search_pd(const PdSearch& q, bool json, std::ostream& out);

void add_check_command(CLI::App& app, CommandAction& action);
void add_presets_command(CLI::App& app, CommandAction& action);
// `policies` (cmd_policies.cpp): the registered policies of each kind.
void add_policies_command(CLI::App& app, CommandAction& action);
void add_cost_command(CLI::App& app, CommandAction& action);
void add_run_command(CLI::App& app, CommandAction& action);
void add_bench_command(CLI::App& app, CommandAction& action);
void add_calibrate_command(CLI::App& app, CommandAction& action);
void add_validate_command(CLI::App& app, CommandAction& action);
// `sweep` and `sweep-merge` (cmd_sweep.cpp).
void add_sweep_command(CLI::App& app, CommandAction& action);
// `plot` (cmd_plot.cpp): charts of a sweep directory with gnuplot.
void add_plot_command(CLI::App& app, CommandAction& action);
// `search` and `pareto` (cmd_search.cpp): bisection searches over the simulator, ranked fronts.
void add_search_command(CLI::App& app, CommandAction& action);
// `compare` (cmd_compare.cpp): scenarios side by side on common random numbers, over seeds.
void add_compare_command(CLI::App& app, CommandAction& action);
// `launch` (cmd_launch.cpp): an engine's launch and benchmark commands as a serving scenario.
void add_launch_command(CLI::App& app, CommandAction& action);
// `train-predictor` (cmd_train_predictor.cpp): the learned prefetch predictor's heat model from traces.
void add_train_predictor_command(CLI::App& app, CommandAction& action);

}  // namespace ess
