// The Pareto chart: tokens/s per GPU against TPOT, every ok point and the front no point beats on both.
#include <algorithm>
#include <map>

#include "sim/sweep/pareto.h"
#include "sim/sweep/plot_charts.h"
#include "sim/sweep/plot_script.h"
#include "sim/sweep/plot_text.h"
#include "sim/sweep/spec.h"

namespace ess::plot {

namespace {

// The ledger columns this chart reads.
constexpr const char* kTokensPerGpu = sweepcol::tokens_per_gpu;
constexpr const char* kOtps = sweepcol::otps_per_request;

}  // namespace

void pareto_tpot(Context& c) {
  const std::string name = "pareto_tpot";
  if (!require(c, name, {kTokensPerGpu, kOtps})) return;
  std::vector<const Point*> points;
  std::vector<ParetoPoint> candidates;
  std::map<std::size_t, const Point*> by_index;
  double max_tpot = 0.0;
  double max_tp = 0.0;
  for (const auto& p : c.view.ok) {
    const auto tp = metric(p, kTokensPerGpu);
    const auto otps = metric(p, kOtps);
    if (!tp || !otps || *otps <= 0) continue;
    points.push_back(&p);
    candidates.push_back({1000.0 / *otps, *tp, p.index});
    by_index[p.index] = &p;
    max_tpot = std::max(max_tpot, 1000.0 / *otps);
    max_tp = std::max(max_tp, *tp);
  }
  note_left_out(c, name, points.size(), "lack tokens_per_s_per_gpu or a positive otps_per_request");
  if (points.empty()) {
    c.plan.messages.push_back("skipped " + name + ": no ok point has both tokens_per_s_per_gpu and otps_per_request");
    return;
  }
  // Dots grouped by what is neither batch nor context: the configurations being compared.
  const auto axes = axes_among(c.view, points);
  auto excluded = dims_of(c.view, {kBatchAxis, kContextAxis});
  // One chart (the front is over every point); past kPlotMaxSeries colours, coloured by fewer
  // dimensions.
  std::string colours;
  if (group(axes, points, excluded).size() > kPlotMaxSeries) {
    colours = limit_colours(axes, points, excluded);
    c.plan.messages.push_back(name + ": " + colours);
  }
  const auto series = group(axes, points, excluded);
  const auto front = pareto_front(candidates);
  const std::string title = title_of(c, "Throughput vs latency, and the Pareto front");
  const std::string subtitle = subtitle_of(c, Panel{});
  const std::string head = heading(title, subtitle);
  std::string data = "# " + head + "\n# columns: tpot_ms tokens_per_s_per_gpu point; TPOT = 1000 / "
                     "otps_per_request_tokens_per_s; one block per series (gnuplot index 0, 1, ...), the last the "
                     "Pareto front sorted by TPOT\n";
  std::vector<std::string> plots;
  const std::string file = "'" + name + ".dat'";
  auto row = [&](const Point& p) {
    return num(1000.0 / *metric(p, kOtps)) + " " + num(*metric(p, kTokensPerGpu)) + " " + std::to_string(p.index) + "\n";
  };
  for (std::size_t i = 0; i < series.size(); ++i) {
    data += (i > 0 ? "\n\n" : "") + std::string("# index ") + std::to_string(i) + ": " +
            one_line(series[i].label.empty() ? "all points" : series[i].label) + "\n";
    for (const Point* p : series[i].points) data += row(*p);
    plots.push_back(file + " index " + std::to_string(i) + " using 1:2 with points ps 1.4 title " +
                    quote(series[i].label.empty() ? "ok points" : series[i].label));
  }
  data += "\n\n# index " + std::to_string(series.size()) + ": Pareto front\n";
  for (const auto& f : front) {
    const Point& p = *by_index.at(f.index);
    data += "# point " + std::to_string(p.index) + ": " + one_line(point_label(axes, p, {})) + "\n" + row(p);
  }
  plots.push_back(file + " index " + std::to_string(series.size()) +
                  " using 1:2 with linespoints lw 2 lc rgb 'black' pt 6 ps 2.2 title 'Pareto front'");
  std::string settings = common_settings(title, "TPOT: time per output token of a request (ms)",
                                         "decode throughput (tokens/s per GPU)", subtitle);
  settings += "set xrange [0:" + num(max_tpot * 1.06) + "]\nset yrange [0:" + num(max_tp * 1.08) + "]\nset bmargin 6\n" +
              footnote("TPOT = 1000 / otps_per_request. Pareto front: the points that no other point beats on both "
                       "TPOT (lower) and throughput (higher).");
  if (!colours.empty()) settings += footnote_above(colours, kLineHeight);
  c.plan.charts.push_back({name, make_script(name, head, "tpot_ms tokens_per_s_per_gpu point", settings, clauses(plots),
                                             c.request.format, {}),
                           data, images_of(name, c.request.format)});
}

}  // namespace ess::plot
