// `ess-sim validate --scenario S.json --trace T.json [--threshold 3%] [--categories MAP.json] [--json]`:
// simulate the configuration a real GPU trace records and report the error per step and category;
// exit 1 when the step-time error exceeds the threshold.
// `ess-sim validate --scenario S.json --prepare DIR [--name N]`: write the GPU runner's
// configuration (arguments and access trace) for that scenario.
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/cli/cli.h"
#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"
#include "sim/io/atomic_file.h"
#include "validate/compare.h"
#include "validate/prepare.h"
#include "validate/trace.h"

namespace ess {

namespace {

double parse_threshold(const std::string& text) {
  if (const auto p = parse_percentage(text)) {
    if (*p > 0.0 && *p < 10.0) return *p;
  }
  throw ConfigError("--threshold " + text, "", "expected a percentage such as 3% (greater than 0)");
}

// Runs a comparison of the trace with the scenario; its InputError (a trace whose shape cannot be
// the scenario's, compare.h) becomes a TraceError naming the trace file.
template <typename F>
auto naming_trace(const std::string& trace_path, F&& compare) {
  try {
    return compare();
  } catch (const TraceError&) {
    throw;  // names its file already
  } catch (const InputError& e) {
    throw TraceError(trace_path, "", e.what());
  }
}

}  // namespace

void add_validate_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string scenario;
    std::string trace;
    std::string threshold = "3%";
    std::string categories;
    std::string prepare;
    std::string name;
    std::string output;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Compare the simulation with a real GPU trace (ess-runner or PyTorch profiler): error per step and per operator "
      "category; exit 1 above the threshold. With --prepare, write the GPU runner's configuration for the scenario");
  cmd->add_option("--scenario", o->scenario, "Scenario JSON file describing the traced run")->required();
  cmd->add_option("--trace", o->trace, "Chrome trace JSON from kernels/ess-runner or the PyTorch profiler");
  cmd->add_option("--threshold", o->threshold, "Largest acceptable step-time median |error| (default 3%)");
  cmd->add_option("--categories", o->categories,
                  "Kernel-name to category mapping for PyTorch profiler traces (default: validate/kineto-categories.json, "
                  "built in)");
  add_set_option(*cmd, o->sets);
  cmd->add_option("-o,--output", o->output, "Also write the report as JSON to this file");
  cmd->add_flag("--json", o->json, "Print the report as JSON instead of the table");
  cmd->add_option("--prepare", o->prepare, "Write DIR/NAME.args and DIR/NAME.esstrace for kernels/ess-runner");
  cmd->add_option("--name", o->name, "Name of the prepared configuration (default: the scenario file's stem)");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Scenario scenario = load_scenario(o->scenario, parse_overrides(o->sets));
      require_decode_scenario(scenario, "validate");
      if (!o->prepare.empty()) {
        if (!o->trace.empty()) throw ConfigError("--prepare", "", "give either --prepare or --trace, not both");
        const std::string name = o->name.empty() ? std::filesystem::path(o->scenario).stem().string() : o->name;
        const RunnerConfig rc = prepare_runner(scenario, o->prepare, name);
        out << name << " " << rc.arguments << "\n";
        return kExitOk;
      }
      if (o->trace.empty()) throw ConfigError("validate", "", "--trace is required (or --prepare DIR)");
      const double threshold = parse_threshold(o->threshold);
      const CategoryMap map = o->categories.empty() ? CategoryMap::builtin() : CategoryMap::read(o->categories);
      const MeasuredTrace trace = read_trace(o->trace, &map);
      if (trace.format == "ess-runner") {
        const auto sha = trace.metadata.find("scenario_sha256");
        if (sha != trace.metadata.end() && sha->is_string() && sha->get<std::string>() != scenario_identity(scenario)) {
          throw TraceError(o->trace, "/otherData/scenario_sha256",
                           "the trace was recorded for a different configuration than " + o->scenario +
                               " (prepare the runner from this scenario with --prepare, or pass the scenario it was "
                               "prepared from)");
        }
      }
      const auto steps = static_cast<std::int64_t>(trace.steps.size());
      naming_trace(o->trace, [&] { check_trace_steps(scenario, steps); });
      const SimulatedRun simulated = simulate_for_validation(scenario, steps);
      ValidationReport report = naming_trace(o->trace, [&] { return compare_profiles(trace.steps, simulated.steps, threshold); });
      if (!trace.ops.empty()) report.ops = naming_trace(o->trace, [&] { return compare_ops(trace.ops, simulated.ops); });
      const std::string json = validation_json(report, trace).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      if (!o->output.empty()) write_file_atomically(o->output, json);
      out << (o->json ? json : format_validation_report(report, trace));
      return report.passed ? kExitOk : kExitValidationFailed;
    };
  });
}

}  // namespace ess
