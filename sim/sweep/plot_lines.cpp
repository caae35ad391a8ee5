// The line charts: tokens/s per GPU (or a --y metric) against batch, context or a --x axis.
#include <algorithm>
#include <functional>

#include "sim/sweep/plot_charts.h"
#include "sim/sweep/plot_script.h"
#include "sim/sweep/plot_text.h"
#include "sim/sweep/spec.h"

namespace ess::plot {

namespace {

// A line chart of a metric (tokens/s per GPU unless --y names another): one line per series,
// along the `line` dimensions.
struct LineChart {
  std::string name;
  std::string what;      // for the title
  std::string xlabel;
  std::string x_column;  // the .dat header of the x column
  std::set<std::size_t> line_dims;
  std::vector<std::string> categories;  // categorical x: the tic labels at 0, 1, ...
  std::string y_column = sweepcol::tokens_per_gpu;
  std::string y_title = "Throughput per GPU";
  std::string ylabel = "decode throughput (tokens/s per GPU)";
};

// The x axis: categories at 0, 1, ... (upright or slanted labels), else a log axis over a range
// of 16 or more, else a linear one; a tic at each value when there are few.
std::string x_axis_settings(const LineChart& chart, const std::set<double>& xs) {
  std::string out;
  const double lo = *xs.begin();
  const double hi = *xs.rbegin();
  if (!chart.categories.empty()) {
    std::vector<std::string> tics;
    for (std::size_t i = 0; i < chart.categories.size(); ++i) {
      tics.push_back(quote(chart.categories[i]) + " " + std::to_string(i));
    }
    out += "set xrange [-0.5:" + num(static_cast<double>(chart.categories.size()) - 0.5) + "]\n";
    // Upright when each fits its slot of the plot area (about 900 pixels beside the legend), else
    // slanted, with a bottom margin that holds the longest.
    std::size_t longest = 0;
    for (const auto& label : chart.categories) longest = std::max(longest, label.size());
    const int label_pixels = 7 * static_cast<int>(longest);
    if (label_pixels + 16 < 900 / static_cast<int>(chart.categories.size())) {
      out += "set xtics (" + join(tics, ", ") + ")\nset bmargin 6\n";
    } else {
      out += "set xtics rotate by 30 right (" + join(tics, ", ") + ")\n" + "set bmargin at screen " +
             num(static_cast<double>(label_pixels / 2 + 80) / kLineHeight) + "\n";
    }
  } else if (lo > 0 && hi / lo >= 16) {
    // Batches and contexts are usually swept in powers of two: a log axis spaces them evenly.
    out += "set logscale x 2\nset xrange [" + num(lo / 1.15) + ":" + num(hi * 1.15) + "]\n";
  } else {
    out += "set xrange [" + num(lo - (hi - lo) * 0.04) + ":" + num(hi + (hi - lo) * 0.04) + "]\n";
  }
  if (chart.categories.empty() && xs.size() <= 12) {
    // A tic at each value swept, when there are few.
    std::vector<std::string> tics;
    for (const double v : xs) tics.push_back(quote(num(v)) + " " + num(v));
    out += "set xtics (" + join(tics, ", ") + ")\n";
  }
  return out;
}

void add_line_chart(Context& c, const LineChart& chart, const std::function<std::optional<double>(const Point&)>& x) {
  std::vector<const Point*> points;
  std::set<double> xs;
  for (const auto& p : c.view.ok) {
    if (x(p) && metric(p, chart.y_column)) {
      points.push_back(&p);
      xs.insert(*x(p));
    }
  }
  note_left_out(c, chart.name, points.size(), "lack " + chart.x_column + " or " + chart.y_column);
  if (xs.size() < 2) {
    c.plan.messages.push_back("skipped " + chart.name + ": the ok points have " +
                              (xs.empty() ? std::string("no ") + chart.x_column + " value"
                                          : "a single " + chart.x_column + " (" + num(*xs.begin()) + ")") +
                              ", nothing to draw a line along");
    return;
  }
  const Panels panels = make_panels(c.view, c.plan.messages, chart.name, points, chart.line_dims, /*bars=*/false, kPlotMaxSeries);
  const bool split = panels.list.size() > 1;
  // Split charts share their scales, so that they compare at a glance.
  double top = 0.0;
  for (const Point* p : points) top = std::max(top, *metric(*p, chart.y_column));
  const std::string title = title_of(c, chart.y_title + " vs " + chart.what);
  const std::string x_settings = x_axis_settings(chart, xs);
  for (const auto& panel : panels.list) {
    const std::string subtitle = subtitle_of(c, panel);
    const std::string head = heading(title, subtitle);
    auto series = group(axes_among(c.view, panel.points), panel.points, chart.line_dims);
    std::string data = "# " + head + "\n# columns: " + chart.x_column + " " + chart.y_column + " point; one block per "
                       "series (gnuplot index 0, 1, ...), sorted by x\n";
    std::vector<std::string> plots;
    for (std::size_t i = 0; i < series.size(); ++i) {
      auto& s = series[i];
      std::stable_sort(s.points.begin(), s.points.end(), [&](const Point* a, const Point* b) { return *x(*a) < *x(*b); });
      data += (i > 0 ? "\n\n" : "") + std::string("# index ") + std::to_string(i) + ": " +
              one_line(s.label.empty() ? "all points" : s.label) + "\n";
      for (const Point* p : s.points) {
        data += num(*x(*p)) + " " + num(*metric(*p, chart.y_column)) + " " + std::to_string(p->index) + "\n";
      }
      const std::string y_name = chart.y_column == sweepcol::tokens_per_gpu ? "tokens/s per GPU" : chart.y_column;
      plots.push_back("'" + panel.name + ".dat' index " + std::to_string(i) +
                      " using 1:2 with linespoints lw 2 ps 1.3 title " + quote(s.label.empty() ? y_name : s.label));
    }
    std::string settings = common_settings(title, chart.xlabel, chart.ylabel, subtitle);
    settings += split ? "set yrange [0:" + num(top * 1.05) + "]\n" : "set yrange [0:*]\n";
    std::vector<std::string> along;
    for (const auto& a : c.view.axes) {
      if (chart.line_dims.count(a.dimension) > 0 && a.varies()) along.push_back(a.path);
    }
    if (!along.empty() || split) {
      if (chart.categories.empty()) settings += "set bmargin 6\n";
      if (!along.empty()) settings += footnote("Each line joins the points that differ only in " + join(along, " and ") + ".");
      if (split) settings += along.empty() ? footnote(panels.note) : footnote_above(panels.note, kLineHeight);
    }
    settings += x_settings;
    c.plan.charts.push_back({panel.name,
                             make_script(panel.name, head, chart.x_column + " " + chart.y_column + " point", settings,
                                         clauses(plots), c.request.format, {}),
                             data, images_of(panel.name, c.request.format)});
  }
}

std::string file_stem(const std::string& path) {
  std::string out;
  for (const char c : path) out += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  return out;
}

}  // namespace

void throughput_vs_batch(Context& c) {
  const std::string name = "throughput_vs_batch";
  if (!require(c, name, {sweepcol::tokens_per_gpu})) return;
  const auto source = x_source(c, name, sweepcol::batch_per_gpu, kBatchAxis);
  if (!source) return;
  // Lines along the batch axis; when the batch is not swept ("max", the largest that fits), along
  // the context, which sets how large a batch fits.
  auto line = dims_of(c.view, {kBatchAxis});
  if (line.empty()) line = dims_of(c.view, {kContextAxis});
  add_line_chart(c, {name, "batch per GPU", "batch per GPU (requests)", "batch_per_gpu", line, {}},
                 [&](const Point& p) { return x_of(*source, p); });
}

void throughput_vs_context(Context& c) {
  const std::string name = "throughput_vs_context";
  if (!require(c, name, {sweepcol::tokens_per_gpu})) return;
  const auto source = x_source(c, name, sweepcol::context_length, kContextAxis);
  if (!source) return;
  add_line_chart(c, {name, "context length", "context length (tokens)", "context_length_tokens",
                     dims_of(c.view, {kContextAxis}), {}},
                 [&](const Point& p) { return x_of(*source, p); });
}

void metric_vs_axis(Context& c, const std::string& path, const std::string& y) {
  const bool throughput = y == sweepcol::tokens_per_gpu;
  const std::string name = (throughput ? std::string("throughput") : file_stem(y)) + "_vs_" + file_stem(path);
  if (!require(c, name, {y})) return;
  const int a = axis_index(c.view, path);
  const Axis& axis = c.view.axes[static_cast<std::size_t>(a)];
  LineChart chart{name, path, path, file_stem(path), {axis.dimension}, {}};
  if (!throughput) {
    chart.y_column = y;
    chart.y_title = y;
    chart.ylabel = y;
  }
  if (axis.numeric) {
    add_line_chart(c, chart, [&](const Point& p) { return x_of(XSource{"", a}, p); });
    return;
  }
  // Values that are not numbers (presets, sections, sizes with units) are categories in sweep order.
  chart.xlabel = path + " (in sweep order)";
  for (const auto& v : axis.values) chart.categories.push_back(value_text(axis, v));
  add_line_chart(c, chart, [&](const Point& p) -> std::optional<double> {
    const auto& v = p.values[static_cast<std::size_t>(a)];
    return static_cast<double>(std::find(axis.values.begin(), axis.values.end(), v) - axis.values.begin());
  });
}

}  // namespace ess::plot
