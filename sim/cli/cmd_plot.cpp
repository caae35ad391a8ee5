// `ess-sim plot DIR [-o OUTDIR] [--format png|svg|both] [--x AXIS_PATH] [--where PATH=VALUE]...`: charts of a sweep
// directory's ledger, rendered with gnuplot (sim/sweep/plot.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/sweep/plot.h"

namespace ess {

void add_plot_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string dir;
    std::string out_dir;
    std::string format = "both";
    std::string x_axis;
    std::vector<std::string> y_columns;
    std::vector<std::string> where;
    std::string gnuplot = "gnuplot";
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("plot", "Chart a sweep's ledger with gnuplot: throughput vs batch and context, "
                                         "step-time breakdown, PCIe utilisation, throughput-TPOT Pareto front");
  cmd->add_option("DIR", o->dir, "Sweep directory (ess-sim sweep SPEC -o DIR)")->required();
  cmd->add_option("-o,--output", o->out_dir, "Directory for the charts, their gnuplot scripts and data (default DIR/plots)");
  cmd->add_option("--format", o->format, "Image format: png, svg or both (default both)");
  cmd->add_option("--x", o->x_axis, "Also plot throughput against this sweep axis (its dotted path)");
  cmd->add_option("--y", o->y_columns, "With --x: plot this metric column against it instead of throughput, e.g. "
                                       "serving_ttft_p99_s (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--where", o->where,
                  "Plot only the points whose axis PATH (or key of an object axis: cache.pool_ratio) has VALUE; "
                  "repeatable: any of the values of one path, all of the paths")
      ->type_name("PATH=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--gnuplot", o->gnuplot, "The gnuplot program: a name looked up on PATH or a path (default gnuplot)");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      PlotRequest request;
      request.format = parse_plot_format(o->format, "--format");
      request.x_axis = o->x_axis;
      request.y_columns = o->y_columns;
      request.where = o->where;
      // gnuplot first: without it nothing is read or written.
      const auto gnuplot = find_gnuplot(o->gnuplot);
      const PlotInput input = read_plot_input(o->dir);
      const PlotPlan plan = plan_plots(input, request);
      const std::filesystem::path out_dir = o->out_dir.empty() ? std::filesystem::path(o->dir) / "plots" : std::filesystem::path(o->out_dir);
      const PlotOutput written = render_plots(plan, gnuplot, out_dir);
      for (const auto& w : written.warnings) std::cerr << "warning: " << w << "\n";
      for (const auto& m : plan.messages) out << m << "\n";
      out << "plotted " << plan.charts.size() << " chart" << (plan.charts.size() == 1 ? "" : "s") << " of "
          << (input.name.empty() ? o->dir : "sweep " + input.name) << ", wrote:\n";
      for (const auto& f : written.written) out << "  " << f.string() << "\n";
      return 0;
    };
  });
}

}  // namespace ess
