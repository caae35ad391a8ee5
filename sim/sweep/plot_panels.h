// Small multiples (sim/sweep/plot_*.cpp): a chart with more lines or bars than one chart holds is
// split into one chart per value of the sweep dimensions that give the fewest charts (plot.h says
// how they are named and when a chart is skipped instead); a one-chart plot colours by as many
// dimensions as its colours tell apart.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "sim/sweep/plot_view.h"

namespace ess::plot {

// One chart of a chart kind: all its points, or, split, those of one value of the split dimensions.
struct Panel {
  std::string name;   // the file name without extension: NAME, or NAME--axis=value--...
  std::string fixed;  // the values the panel's points share on the split dimensions (empty unsplit)
  std::vector<const Point*> points;
};

struct Panels {
  std::vector<Panel> list;  // empty: the chart is skipped (a message says why)
  std::string note;         // for the footnote of a split chart: "one chart per ..."
};

// A chart's points as one chart or, when one would hold more than `limit` series (lines, counted
// over the varying dimensions outside `line_dims`) or bars (points, when `bars`), as small
// multiples: one chart per value of the dimensions S that give the fewest charts each within the
// limit; among as few, the outermost. Skipped (no panels), with a message in `messages`, past
// kPlotMaxCharts charts; a split chart adds a message saying how it was split.
[[nodiscard]] Panels make_panels(const View& view, std::vector<std::string>& messages, const std::string& name,
                                 const std::vector<const Point*>& points, const std::set<std::size_t>& line_dims, bool bars,
                                 std::size_t limit);

// For one chart whose series outside `excluded` are more than kPlotMaxSeries colours: colours by
// the dimensions that give the most colours within it (among as many, the outermost), adds the
// others to `excluded`, and returns the footnote that says so ("Colours by ...; a colour's dots
// differ in ... too").
[[nodiscard]] std::string limit_colours(const std::vector<Axis>& axes, const std::vector<const Point*>& points,
                                        std::set<std::size_t>& excluded);

}  // namespace ess::plot
