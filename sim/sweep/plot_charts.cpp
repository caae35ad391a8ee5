#include "sim/sweep/plot_charts.h"

#include "sim/sweep/plot_text.h"
#include "sim/sweep/spec.h"

namespace ess::plot {

namespace {

std::string metric_path(const std::string& column) {
  for (const auto& m : known_sweep_metrics()) {
    if (m.column == column) return m.path;
  }
  return column;
}

}  // namespace

std::string title_of(const Context& c, const std::string& what) { return what + (c.sweep.empty() ? "" : " - " + c.sweep); }

std::string subtitle_of(const Context& c, const Panel& panel) {
  std::vector<std::string> parts;
  if (!panel.fixed.empty()) parts.push_back(panel.fixed);
  if (!c.where.empty()) parts.push_back(c.where);
  return join(parts, "; ");
}

std::string heading(const std::string& title, const std::string& subtitle) {
  return subtitle.empty() ? title : title + " - " + subtitle;
}

std::string add_to_metrics(const std::vector<std::string>& columns) {
  std::vector<std::string> paths;
  for (const auto& col : columns) paths.push_back("\"" + metric_path(col) + "\"");
  return "list " + join(paths, ", ") + " in the spec's \"metrics\"";
}

bool require(Context& c, const std::string& chart, const std::vector<std::string>& columns) {
  std::vector<std::string> missing;
  for (const auto& col : columns) {
    if (c.view.columns.count(col) == 0) missing.push_back(col);
  }
  if (missing.empty()) return true;
  c.plan.messages.push_back("skipped " + chart + ": needs the metric column" + (missing.size() > 1 ? "s " : " ") +
                            join(missing, ", ") + ", which " + c.input.origin + " does not have; " +
                            add_to_metrics(missing) + " and run the sweep again (into a new directory)");
  return false;
}

void note_left_out(Context& c, const std::string& chart, std::size_t plotted, const std::string& why) {
  const std::size_t total = c.view.ok.size();
  if (plotted < total) {
    c.plan.messages.push_back(chart + ": " + std::to_string(plotted) + " of the " + std::to_string(total) +
                              " ok points plotted, " + std::to_string(total - plotted) + " " + why);
  }
}

std::optional<XSource> x_source(Context& c, const std::string& chart, const std::string& column,
                                const std::string& axis) {
  if (c.view.columns.count(column) > 0) return XSource{column, -1};
  const int a = axis_index(c.view, axis);
  if (a >= 0 && c.view.axes[static_cast<std::size_t>(a)].numeric) return XSource{"", a};
  c.plan.messages.push_back("skipped " + chart + ": needs the metric column " + column + " (or a numeric " + axis +
                            " axis), which " + c.input.origin + " does not have; " + add_to_metrics({column}) +
                            " and run the sweep again (into a new directory)");
  return std::nullopt;
}

std::optional<double> x_of(const XSource& s, const Point& p) {
  if (s.axis < 0) return metric(p, s.column);
  const Json& v = p.values[static_cast<std::size_t>(s.axis)];
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

std::set<std::size_t> dims_of(const View& v, std::initializer_list<const char*> paths) {
  std::set<std::size_t> out;
  for (const char* path : paths) {
    const int a = axis_index(v, path);
    if (a >= 0 && v.axes[static_cast<std::size_t>(a)].varies()) out.insert(v.axes[static_cast<std::size_t>(a)].dimension);
  }
  return out;
}

}  // namespace ess::plot
