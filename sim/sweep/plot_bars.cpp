// The bar charts, a bar per point: where a mean decode step goes, and PCIe utilisation.
#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/sweep/plot_charts.h"
#include "sim/sweep/plot_script.h"
#include "sim/sweep/plot_text.h"
#include "sim/sweep/spec.h"

namespace ess::plot {

namespace {

// The ledger columns these charts read.
constexpr const char* kTransfers = sweepcol::time_transfers;
constexpr const char* kCollectives = sweepcol::time_collectives;
constexpr const char* kIdle = sweepcol::time_idle;
constexpr const char* kHidden = sweepcol::offload_hidden;
constexpr const char* kStepMean = sweepcol::step_time_mean;
constexpr const char* kH2d = sweepcol::pcie_h2d;
constexpr const char* kD2h = sweepcol::pcie_d2h;
// The compute part of a step: every operator category that runs kernels (results.json
// time_by_category_s); the rest of the step is transfers, collectives and idle.
const std::vector<std::string> kComputeColumns = {
    sweepcol::time_gemm, sweepcol::time_attention,   sweepcol::time_indexer,
    sweepcol::time_norm, sweepcol::time_elementwise, sweepcol::time_host};

// Bars per point, in point order, labelled under the axis by the axes that vary among them; a gap
// where the first varying axis (the slowest-changing) takes its next value.
struct Bars {
  std::vector<double> positions;
  std::string settings;  // x tics, x range, bottom margin
  Layout layout;
};

Bars bars_for(const View& v, const std::vector<const Point*>& points) {
  constexpr double kGroupGap = 0.6;   // extra space between groups, in bar slots
  constexpr int kCharPixels = 7;      // a character of the 10-point tic font, rotated upright
  constexpr int kPlotPixels = 560;    // the plot area's height
  constexpr int kBelowLabels = 56;    // room for the footnote under the tic labels
  const auto axes = axes_among(v, points);
  int first = -1;
  for (std::size_t i = 0; i < axes.size() && first < 0; ++i) {
    if (axes[i].varies()) first = static_cast<int>(i);
  }
  Bars bars;
  std::vector<std::string> tics;
  std::size_t longest = 0;
  double at = 0.0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto f = static_cast<std::size_t>(first);
    if (i > 0 && first >= 0 && points[i]->values[f] != points[i - 1]->values[f]) at += kGroupGap;
    bars.positions.push_back(at);
    std::string label = point_label(axes, *points[i], {});
    if (label.empty()) label = "point " + std::to_string(points[i]->index);
    longest = std::max(longest, label.size());
    tics.push_back(quote(label) + " " + num(at));
    at += 1.0;
  }
  const int label_pixels = kCharPixels * static_cast<int>(longest) + 24;
  bars.layout.width = std::max(kLineWidth, 700 + kBarPixels * static_cast<int>(std::ceil(at)));
  bars.layout.height = kPlotPixels + 80 + label_pixels + kBelowLabels;
  bars.settings = "set xtics rotate by 90 right nomirror (" + join(tics, ", ") + ")\n" +
                  "set xrange [-0.7:" + num(at - 0.3) + "]\n" +
                  "set bmargin at screen " + num(static_cast<double>(label_pixels + kBelowLabels) / bars.layout.height) + "\n" +
                  "set grid noxtics\n";
  return bars;
}

// The stacked bars (compute, exposed transfer, exposed collectives, idle), the hidden transfer
// beside them and the mean step time across them, from the data file `file` (quoted).
std::vector<std::string> breakdown_clauses(const std::string& file, bool hidden, bool mean) {
  // The stack on [x - 0.4, x + 0.06], the hidden transfer beside it on [x + 0.1, x + 0.4].
  const std::string stack = file + " using 1:(0):($1-0.4):($1+0.06):";
  std::vector<std::string> plots = {
      stack + "(0):3 with boxxyerror lc rgb '#4477aa' title 'compute (gemm, attention, indexer, norm, elementwise, host)'",
      stack + "3:($3+$4) with boxxyerror lc rgb '#ee6677' title 'exposed transfer (fetch waits, gather slow-down, "
              "write-back drain)'",
      stack + "($3+$4):($3+$4+$5) with boxxyerror lc rgb '#228833' title 'exposed collectives (all-to-all, all-reduce "
              "on the compute stream)'",
      stack + "($3+$4+$5):($3+$4+$5+$6) with boxxyerror lc rgb '#bbbbbb' title 'idle (waiting for other GPUs)'",
  };
  if (hidden) {
    plots.push_back(file + " using 1:(0):($1+0.1):($1+0.4):(0):7 with boxxyerror fs pattern 4 border lc rgb '#ee6677' "
                           "lc rgb '#ee6677' title 'hidden transfer (overlapped with compute, not in the step)'");
  }
  if (mean) {
    plots.push_back(file + " using ($1-0.4):" + std::string(hidden ? "8" : "7") +
                    ":(0.46):(0) with vectors nohead lw 2 lc rgb 'black' title 'mean step time (step_time_mean_s)'");
  }
  return plots;
}

}  // namespace

void step_time_breakdown(Context& c) {
  const std::string name = "step_time_breakdown";
  std::vector<std::string> needed = kComputeColumns;
  needed.insert(needed.end(), {kTransfers, kCollectives, kIdle});
  if (!require(c, name, needed)) return;
  const bool hidden = c.view.columns.count(kHidden) > 0;
  const bool mean = c.view.columns.count(kStepMean) > 0;
  if (!hidden) {
    c.plan.messages.push_back(name + ": drawn without the hidden transfer, " + c.input.origin + " has no " + kHidden +
                              " column (" + add_to_metrics({kHidden}) + ")");
  }
  std::vector<const Point*> points;
  for (const auto& p : c.view.ok) {
    if (std::all_of(needed.begin(), needed.end(), [&](const std::string& col) { return metric(p, col).has_value(); })) {
      points.push_back(&p);
    }
  }
  note_left_out(c, name, points.size(), "lack a time_*_s value");
  if (points.empty()) {
    c.plan.messages.push_back("skipped " + name + ": no ok point has every time_*_s value");
    return;
  }
  const Panels panels = make_panels(c.view, c.plan.messages, name, points, {}, /*bars=*/true, kPlotMaxBars);
  const bool split = panels.list.size() > 1;
  double top = 0.0;  // split charts share their scale
  for (const Point* p : points) {
    double stack = 0.0;
    for (const auto& col : needed) stack += *metric(*p, col);
    top = std::max({top, stack, metric(*p, kHidden).value_or(0.0), metric(*p, kStepMean).value_or(0.0)});
  }
  const std::string title = title_of(c, "Where a decode step goes, per GPU (mean over steps and GPUs)");
  std::string columns = "position point compute_ms exposed_transfer_ms exposed_collectives_ms idle_ms";
  if (hidden) columns += " hidden_transfer_ms";
  if (mean) columns += " step_time_mean_ms";
  for (const auto& panel : panels.list) {
    const Bars bars = bars_for(c.view, panel.points);
    const std::string subtitle = subtitle_of(c, panel);
    const std::string head = heading(title, subtitle);
    std::string data = "# " + head + "\n# columns: " + columns +
                       "\n# compute = time_gemm_s + time_attention_s + time_indexer_s + time_norm_s + time_elementwise_s"
                       " + time_host_s; exposed_transfer = time_transfers_s; exposed_collectives = time_collectives_s;"
                       " idle = time_idle_s; hidden_transfer = offload_hidden_s (0 without offload); all x 1000\n";
    for (std::size_t i = 0; i < panel.points.size(); ++i) {
      const Point& p = *panel.points[i];
      double compute = 0.0;
      for (const auto& col : kComputeColumns) compute += *metric(p, col);
      data += num(bars.positions[i]) + " " + std::to_string(p.index) + " " + num(compute * 1e3) + " " +
              num(*metric(p, kTransfers) * 1e3) + " " + num(*metric(p, kCollectives) * 1e3) + " " +
              num(*metric(p, kIdle) * 1e3);
      if (hidden) data += " " + num(metric(p, kHidden).value_or(0.0) * 1e3);
      if (mean) data += " " + (metric(p, kStepMean) ? num(*metric(p, kStepMean) * 1e3) : std::string("NaN"));
      data += "\n";
    }
    const auto plots = breakdown_clauses("'" + panel.name + ".dat'", hidden, mean);
    std::string settings = common_settings(title, "", "time per decode step (ms)", subtitle);
    settings += "set style fill solid 0.9 border lc rgb '#404040'\n" +
                (split ? "set yrange [0:" + num(top * 1e3 * 1.05) + "]\n" : std::string("set yrange [0:*]\n")) +
                bars.settings +
                footnote("The stack adds up to the mean step time: time_*_s are per step, mean over steps and GPUs. "
                         "Hidden transfer ran under compute; it is not part of the step.") +
                (split ? footnote_above(panels.note, bars.layout.height) : std::string());
    c.plan.charts.push_back({panel.name,
                             make_script(panel.name, head, columns, settings, clauses(plots), c.request.format, bars.layout),
                             data, images_of(panel.name, c.request.format)});
  }
}

void pcie_utilization(Context& c) {
  const std::string name = "pcie_utilization";
  const bool h2d = c.view.columns.count(kH2d) > 0;
  const bool d2h = c.view.columns.count(kD2h) > 0;
  if (!h2d && !d2h) {
    require(c, name, {kH2d, kD2h});
    return;
  }
  if (!h2d || !d2h) {
    const std::string lacking = h2d ? kD2h : kH2d;
    c.plan.messages.push_back(name + ": drawn with " + (h2d ? "h2d" : "d2h") + " only, " + c.input.origin + " has no " +
                              lacking + " column (" + add_to_metrics({lacking}) + ")");
  }
  std::vector<const Point*> points;
  for (const auto& p : c.view.ok) {
    if ((h2d && metric(p, kH2d)) || (d2h && metric(p, kD2h))) points.push_back(&p);
  }
  note_left_out(c, name, points.size(), "do not offload (no PCIe traffic)");
  if (points.empty()) {
    c.plan.messages.push_back("skipped " + name + ": no ok point offloads its cache (pcie_*_utilization is null)");
    return;
  }
  const Panels panels = make_panels(c.view, c.plan.messages, name, points, {}, /*bars=*/true, kPlotMaxBars);
  const bool split = panels.list.size() > 1;
  double top = 0.0;  // split charts share their scale
  for (const Point* p : points) {
    top = std::max({top, metric(*p, kH2d).value_or(0.0), metric(*p, kD2h).value_or(0.0)});
  }
  const std::string title = title_of(c, "PCIe utilisation of each GPU's link, offload points");
  std::string columns = "position point";
  if (h2d) columns += " h2d_percent";
  if (d2h) columns += " d2h_percent";
  for (const auto& panel : panels.list) {
    const Bars bars = bars_for(c.view, panel.points);
    const std::string subtitle = subtitle_of(c, panel);
    const std::string head = heading(title, subtitle);
    std::string data = "# " + head + "\n# columns: " + columns +
                       " (percent of the link's bandwidth in that direction over the run: pcie_*_utilization x 100)\n";
    for (std::size_t i = 0; i < panel.points.size(); ++i) {
      const Point& p = *panel.points[i];
      data += num(bars.positions[i]) + " " + std::to_string(p.index);
      for (const auto& [on, col] : {std::pair{h2d, kH2d}, std::pair{d2h, kD2h}}) {
        if (on) data += " " + (metric(p, col) ? num(*metric(p, col) * 100.0) : std::string("NaN"));
      }
      data += "\n";
    }
    const std::string file = "'" + panel.name + ".dat'";
    std::vector<std::string> plots;
    const bool both = h2d && d2h;
    if (h2d) {
      plots.push_back(file + " using " + (both ? "($1-0.19)" : "1") +
                      ":3 with boxes lc rgb '#4477aa' title 'host to GPU (h2d): cache misses fetched'");
    }
    if (d2h) {
      plots.push_back(file + " using " + (both ? "($1+0.19)" : "1") + ":" + (h2d ? "4" : "3") +
                      " with boxes lc rgb '#ee6677' title 'GPU to host (d2h): entries written back'");
    }
    std::string settings = common_settings(title, "", "utilisation (% of the link's bandwidth in that direction)", subtitle);
    settings += "set style fill solid 0.9 border lc rgb '#404040'\nset boxwidth " + std::string(both ? "0.36" : "0.6") +
                " absolute\n" +
                (split ? "set yrange [0:" + num(top * 100.0 * 1.05) + "]\n" : std::string("set yrange [0:*]\n")) +
                bars.settings +
                footnote("Bytes moved over the run / (run time x bandwidth), per GPU link; points without offload are "
                         "left out.") +
                (split ? footnote_above(panels.note, bars.layout.height) : std::string());
    c.plan.charts.push_back({panel.name,
                             make_script(panel.name, head, columns, settings, clauses(plots), c.request.format, bars.layout),
                             data, images_of(panel.name, c.request.format)});
  }
}

}  // namespace ess::plot
