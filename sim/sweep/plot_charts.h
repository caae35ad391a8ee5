// What every sweep chart shares (sim/sweep/plot_lines.cpp, plot_bars.cpp, plot_pareto.cpp): the
// context a chart is planned in, its titles, the checks that skip a chart with a message naming
// the metric columns it lacks, and the charts themselves.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/sweep/plot.h"
#include "sim/sweep/plot_panels.h"
#include "sim/sweep/plot_view.h"

namespace ess::plot {

// The axes that set batch and context directly.
inline constexpr const char* kBatchAxis = "workload.batch_per_gpu";
inline constexpr const char* kContextAxis = "workload.context_length";

struct Context {
  const PlotInput& input;
  const PlotRequest& request;
  const View& view;
  PlotPlan& plan;
  std::string sweep;  // "sweep NAME" for titles
  std::string where;  // "where PATH=VALUE ..." for titles (--where), or empty
};

// WHAT, then " - sweep NAME" when the sweep has a name.
[[nodiscard]] std::string title_of(const Context& c, const std::string& what);
// The title's second line: the values a split chart's points share, and the --where filter.
[[nodiscard]] std::string subtitle_of(const Context& c, const Panel& panel);
// The title on one line, for comments and data headers.
[[nodiscard]] std::string heading(const std::string& title, const std::string& subtitle);

// "list "PATH", ... in the spec's "metrics"": what to do about missing columns.
[[nodiscard]] std::string add_to_metrics(const std::vector<std::string>& columns);
// "skipped NAME: needs ..." for the columns the ledger lacks; true when none is missing.
bool require(Context& c, const std::string& chart, const std::vector<std::string>& columns);
// "CHART: N of the M ok points plotted, K WHY" when some were left out.
void note_left_out(Context& c, const std::string& chart, std::size_t plotted, const std::string& why);

// Where an x value comes from: a metric column, else an axis with numeric values.
struct XSource {
  std::string column;
  int axis = -1;
};

// The metric column when the ledger has it, else the axis when its values are numbers; else none,
// and a message that the chart is skipped.
[[nodiscard]] std::optional<XSource> x_source(Context& c, const std::string& chart, const std::string& column,
                                              const std::string& axis);
// The point's x from `s`, or none.
[[nodiscard]] std::optional<double> x_of(const XSource& s, const Point& p);
// The sweep dimensions of the axes at `paths` that vary.
[[nodiscard]] std::set<std::size_t> dims_of(const View& v, std::initializer_list<const char*> paths);

// The charts (plot.h lists them); each adds its files to c.plan, or a message saying why not.
void throughput_vs_batch(Context& c);
void throughput_vs_context(Context& c);
// `y` against the axis at `path` (--x, --y): throughput_vs_<axis> for tokens/s per GPU, else
// <y>_vs_<axis>, the metric column named as the ledger has it.
void metric_vs_axis(Context& c, const std::string& path, const std::string& y);
void step_time_breakdown(Context& c);
void pcie_utilization(Context& c);
void pareto_tpot(Context& c);

}  // namespace ess::plot
