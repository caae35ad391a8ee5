#include "sim/cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/quantity.h"
#include "sim/config/utf8.h"
#include "sim/engine/preflight.h"

namespace ess {

std::string version_string() {
  return std::string("ess-sim ") + ESS_SIM_VERSION + " (SimGrid " + ESS_SIMGRID_VERSION + ")";
}

void add_set_option(CLI::App& command, std::vector<std::string>& sets, const std::string& scope) {
  command.add_option("--set", sets, "Override a scenario field" + (scope.empty() ? "" : " " + scope) +
                                        ": dotted.path=value (repeatable), e.g. --set workload.context_length=131072");
}

void add_allow_large_flag(CLI::App& command, bool& allow_large) {
  const ResourceLimits defaults;
  command.add_flag("--allow-large", allow_large,
                   "Run even when the run is estimated to need more than " +
                       std::to_string(static_cast<long long>(defaults.memory_bytes / 1073741824.0)) + " GiB of memory or " +
                       std::to_string(static_cast<long long>(defaults.wall_seconds / 60.0)) + " minutes of wall time");
}

ResourceLimits resource_limits(bool allow_large) {
  ResourceLimits limits;
  limits.enforce = !allow_large;
  return limits;
}

double positive_duration(const std::string& text, const std::string& option, const std::string& example) {
  const ParsedQuantity q = parse_quantity(text, Dimension::seconds);
  if (!q.value || !(*q.value > 0) || !std::isfinite(*q.value)) {
    throw ConfigError(option + " " + text, "",
                      "expected a positive duration such as " + example + (q.error.empty() ? "" : " (" + q.error + ")"));
  }
  return *q.value;
}

int report_error(const std::exception& e, std::ostream& err) {
  const auto* error = dynamic_cast<const Error*>(&e);
  const int code = error != nullptr ? error->exit_code() : kExitInternal;
  err << (code == kExitInternal ? "internal error (please report): " : "error: ") << e.what() << "\n";
  return code;
}

namespace {

// Every floating-point option of every subcommand takes finite numbers only: CLI11 reads "nan" and
// "inf" as doubles, and a NaN passes CLI::Range (both comparisons are false).
void require_finite_numbers(CLI::App& app) {
  const CLI::Validator finite(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && !std::isfinite(v)) return "expected a finite number, got " + text;
        return {};
      },
      "", "finite");
  for (CLI::Option* o : app.get_options()) {
    if (o->get_type_name().find("FLOAT") != std::string::npos) o->check(finite);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_finite_numbers(*sub);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"ess-sim: simulates LLM decode steps with ESS latent-cache offload on multi-GPU nodes.\n"
               "Scenarios are JSON files (see scenarios/README.md); presets are listed by `ess-sim presets`.",
               "ess-sim"};
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  app.fallthrough(false);

  CommandAction action;
  add_run_command(app, action);
  add_check_command(app, action);
  add_presets_command(app, action);
  add_policies_command(app, action);
  add_cost_command(app, action);
  add_bench_command(app, action);
  add_calibrate_command(app, action);
  add_validate_command(app, action);
  add_sweep_command(app, action);
  add_plot_command(app, action);
  add_search_command(app, action);
  add_compare_command(app, action);
  add_launch_command(app, action);
  add_train_predictor_command(app, action);
  require_finite_numbers(app);

  // The first word that is not an option names the subcommand. CLI11 would answer an unknown one
  // followed by --help with the main help and exit 0; say it is unknown instead.
  for (const auto& a : args) {
    if (!a.empty() && a[0] == '-') continue;
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), a) == names.end()) {
      err << "error: unknown subcommand \"" << printable(a) << "\"" << did_you_mean(printable(a), names)
          << "; the subcommands are " << quoted_list(names) << " (ess-sim --help)\n";
      return kExitBadInput;
    }
    break;
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --version
    std::ostringstream ignored;
    app.exit(e, out, ignored);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::ostringstream ignored;
    app.exit(e, ignored, err);
    return kExitBadInput;
  }

  try {
    return action(out);
  } catch (const std::exception& e) {  // an ess::Error with its exit code, anything else a bug
    return report_error(e, err);
  }
}

}  // namespace ess
