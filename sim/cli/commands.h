// Registration of each ess-sim subcommand on the CLI11 application (one file per command).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/engine/preflight.h"

namespace ess {

// What a subcommand runs once parsing succeeded; returns the exit code. May throw ConfigError,
// std::invalid_argument or UnsupportedError for bad input.
using CommandAction = std::function<int(std::ostream& out)>;

// --allow-large on the commands that simulate: run past the resource limits (sim/README.md).
void add_allow_large_flag(CLI::App& command, bool& allow_large);
[[nodiscard]] ResourceLimits resource_limits(bool allow_large);
// A positive, finite duration option ("500ms", "90s"), in seconds; ConfigError naming `option`
// and giving `example` otherwise.
[[nodiscard]] double positive_duration(const std::string& text, const std::string& option, const std::string& example);

// A scenario with a "serving" section (cmd_run_serving.cpp): `run` and `bench` call these.
struct Scenario;
int run_serving_scenario(const Scenario& s, const std::string& out_dir, bool json, std::ostream& out);
int bench_serving_scenario(const Scenario& s, bool json, std::ostream& out);
// `search pd`: the fewest prefill instances (1 .. max_instances) of a disaggregated serving scenario
// with which every request completes and `attainment` of them meet serving.slo; exit 1 and the
// reason when none does.
int search_prefill_instances(const Scenario& s, int max_instances, double attainment, bool json, std::ostream& out);

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
// `train-predictor` (cmd_train_predictor.cpp): the learned prefetch predictor's heat model from traces.
void add_train_predictor_command(CLI::App& app, CommandAction& action);

}  // namespace ess
