// `ess-sim plot --where PATH=VALUE`: the ledger records a chart set is drawn from.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/plot.h"
#include "sim/sweep/plot_text.h"

namespace ess::plot {

// The records the --where clauses select (plot.h: PlotRequest::where), and "where ..." for the
// titles. A clause no point matches, or clauses no point matches together, are ConfigErrors listing
// what the sweep has; a PATH that is no axis (nor a key inside an object axis) names the axes.
[[nodiscard]] std::pair<std::vector<Record>, std::string> apply_where(const PlotInput& input,
                                                                      const std::vector<std::string>& where);

}  // namespace ess::plot
