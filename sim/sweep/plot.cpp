#include "sim/sweep/plot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"
#include "sim/io/atomic_file.h"
#include "sim/io/child_process.h"
#include "sim/io/read_file.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/pareto.h"
#include "sim/sweep/spec.h"

namespace ess {

namespace {

using Json = nlohmann::json;
using Record = nlohmann::ordered_json;

// Ledger columns the charts read (sim/sweep/spec.cpp known_sweep_metrics()).
constexpr const char* kTokensPerGpu = "tokens_per_s_per_gpu";
constexpr const char* kBatch = "batch_per_gpu";
constexpr const char* kContext = "context_length_tokens";
constexpr const char* kOtps = "otps_per_request_tokens_per_s";
constexpr const char* kStepMean = "step_time_mean_s";
constexpr const char* kHidden = "offload_hidden_s";
constexpr const char* kH2d = "pcie_h2d_utilization";
constexpr const char* kD2h = "pcie_d2h_utilization";
// The axes that set batch and context directly.
constexpr const char* kBatchAxis = "workload.batch_per_gpu";
constexpr const char* kContextAxis = "workload.context_length";

// The compute part of a step: every operator category that runs kernels (results.json
// time_by_category_s); the rest of the step is transfers, collectives and idle.
const std::vector<std::string> kComputeColumns = {"time_gemm_s", "time_attention_s", "time_indexer_s",
                                                  "time_norm_s", "time_elementwise_s", "time_host_s"};
constexpr const char* kTransfers = "time_transfers_s";
constexpr const char* kCollectives = "time_collectives_s";
constexpr const char* kIdle = "time_idle_s";

// Record fields that are not metrics (ledger_record in sim/sweep/ledger.cpp).
const std::set<std::string> kRecordFields = {"point", "axes", "status", "reason", "scenario_sha256", "ess_sim_version",
                                             "wall_s"};

// Image sizes in pixels: wide enough for a legend outside the plot area.
constexpr int kLineWidth = 1280;
constexpr int kLineHeight = 800;
constexpr int kBarPixels = 40;  // per bar slot, so labels under 40 bars stay apart

std::string num(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? sep : "") + parts[i];
  return out;
}

// One line of text: control characters (a newline in a JSON string) become spaces.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

// A gnuplot single-quoted string: nothing is special inside but the quote, written twice.
std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : one_line(s)) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string scalar_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string metric_path(const std::string& column) {
  for (const auto& m : known_sweep_metrics()) {
    if (m.column == column) return m.path;
  }
  return column;
}

// --- The ledger as the charts see it ------------------------------------------------------------

struct Axis {
  std::string path;
  std::string name;  // in labels: the last path component, or the path where two axes share it
  std::size_t dimension = 0;
  std::vector<Json> values;  // distinct values among the ok points, in point order
  bool numeric = false;      // every value a number
  // Object values (a whole section such as "cache") are labelled by the keys that tell them apart;
  // `whole` when no set of keys does (then by their compact JSON).
  std::vector<std::string> keys;
  bool whole = false;

  [[nodiscard]] bool varies() const { return values.size() > 1; }
};

struct Point {
  std::size_t index = 0;
  const Record* record = nullptr;
  std::vector<Json> values;  // per axis (null when the record lacks it)
};

struct View {
  std::vector<Axis> axes;
  std::vector<Point> ok;  // in point order
  std::set<std::string> columns;
};

// The value without the axis name: "offload", "mode=offload pool_ratio=0.2", "32768".
std::string value_text(const Axis& a, const Json& v) {
  if (!v.is_object() || a.whole) return scalar_text(v);
  std::vector<std::string> parts;
  for (const auto& k : a.keys) {
    if (v.contains(k)) parts.push_back(k + "=" + scalar_text(v[k]));
  }
  return parts.empty() ? v.dump() : join(parts, " ");
}

// In a legend or under a bar: "context_length=32768", "mode=offload pool_ratio=0.2".
std::string axis_label(const Axis& a, const Json& v) {
  if (v.is_object() && !a.whole) {
    const std::string text = value_text(a, v);
    if (text.front() != '{') return text;
  }
  return a.name + "=" + scalar_text(v);
}

bool labels_unique(const Axis& a) {
  std::set<std::string> seen;
  for (const auto& v : a.values) {
    if (!seen.insert(value_text(a, v)).second) return false;
  }
  return true;
}

// The keys that tell an object axis's values apart: those taking more than one value among the
// objects that have them; then, while two values still read the same, keys some lack (in key order).
void choose_keys(Axis& a) {
  std::vector<std::string> all;
  for (const auto& v : a.values) {
    if (!v.is_object()) continue;
    for (const auto& [k, unused] : v.items()) {
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
    }
  }
  std::vector<std::string> by_presence;
  for (const auto& k : all) {
    std::set<std::string> seen;
    std::size_t having = 0;
    std::size_t objects = 0;
    for (const auto& v : a.values) {
      if (!v.is_object()) continue;
      ++objects;
      if (v.contains(k)) {
        ++having;
        seen.insert(v[k].dump());
      }
    }
    if (seen.size() > 1) {
      a.keys.push_back(k);
    } else if (having < objects) {
      by_presence.push_back(k);
    }
  }
  for (const auto& k : by_presence) {
    if (labels_unique(a)) break;
    a.keys.push_back(k);
    std::sort(a.keys.begin(), a.keys.end(), [&](const std::string& x, const std::string& y) {
      return std::find(all.begin(), all.end(), x) < std::find(all.begin(), all.end(), y);
    });
  }
  if (!labels_unique(a)) {
    a.keys.clear();
    a.whole = true;
  }
}

void finish_axis(Axis& a) {
  a.numeric = !a.values.empty() && std::all_of(a.values.begin(), a.values.end(), [](const Json& v) { return v.is_number(); });
  a.keys.clear();
  a.whole = false;
  choose_keys(a);
}

View make_view(const PlotInput& input) {
  View view;
  std::map<std::string, std::size_t> dimension_of;
  std::size_t next = 0;
  for (const auto& group : input.zipped) {
    for (const auto& path : group) dimension_of[path] = next;
    ++next;
  }
  for (const auto& path : input.axes) {
    Axis a;
    a.path = path;
    const auto dot = path.rfind('.');
    a.name = dot == std::string::npos ? path : path.substr(dot + 1);
    const auto z = dimension_of.find(path);
    a.dimension = z != dimension_of.end() ? z->second : next++;
    view.axes.push_back(std::move(a));
  }
  for (auto& a : view.axes) {
    const bool shared = std::count_if(view.axes.begin(), view.axes.end(), [&](const Axis& b) { return b.name == a.name; }) > 1;
    if (shared) a.name = a.path;
  }
  for (const auto& r : input.records) {
    for (const auto& [key, unused] : r.items()) {
      if (kRecordFields.count(key) == 0) view.columns.insert(key);
    }
    if (r.value("status", std::string()) != "ok") continue;
    Point p;
    p.index = r.at("point").get<std::size_t>();
    p.record = &r;
    const auto& axes = r.at("axes");
    for (auto& a : view.axes) {
      Json v = axes.contains(a.path) ? Json::parse(axes.at(a.path).dump()) : Json(nullptr);
      if (std::find(a.values.begin(), a.values.end(), v) == a.values.end()) a.values.push_back(v);
      p.values.push_back(std::move(v));
    }
    view.ok.push_back(std::move(p));
  }
  for (auto& a : view.axes) finish_axis(a);
  return view;
}

int axis_index(const View& v, const std::string& path) {
  for (std::size_t i = 0; i < v.axes.size(); ++i) {
    if (v.axes[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

std::optional<double> metric(const Point& p, const std::string& column) {
  const auto it = p.record->find(column);
  if (it == p.record->end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// The axes as the points of one chart see them: each axis's values among those points and the
// keys that tell them apart, so that labels name only what differs between the points shown.
std::vector<Axis> axes_among(const View& v, const std::vector<const Point*>& points) {
  std::vector<Axis> axes = v.axes;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    auto& values = axes[i].values;
    values.clear();
    for (const Point* p : points) {
      if (std::find(values.begin(), values.end(), p->values[i]) == values.end()) values.push_back(p->values[i]);
    }
    finish_axis(axes[i]);
  }
  return axes;
}

bool shown(const Axis& a, const std::set<std::size_t>& excluded) { return a.varies() && excluded.count(a.dimension) == 0; }

// The label of a point from the axes that vary, leaving out the dimensions in `excluded`.
std::string point_label(const std::vector<Axis>& axes, const Point& p, const std::set<std::size_t>& excluded) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (shown(axes[i], excluded)) parts.push_back(axis_label(axes[i], p.values[i]));
  }
  return join(parts, " ");
}

struct Series {
  std::string label;  // empty when no axis tells the series apart
  std::vector<const Point*> points;
};

// The points grouped by their values of the varying axes outside `excluded`, series in the order
// of their first point.
std::vector<Series> group(const std::vector<Axis>& axes, const std::vector<const Point*>& points,
                          const std::set<std::size_t>& excluded) {
  std::vector<Series> series;
  std::map<std::string, std::size_t> by_key;
  for (const Point* p : points) {
    std::string key;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (shown(axes[i], excluded)) key += p->values[i].dump() + '\n';
    }
    const auto [it, added] = by_key.emplace(key, series.size());
    if (added) series.push_back({point_label(axes, *p, excluded), {}});
    series[it->second].points.push_back(p);
  }
  return series;
}

// --- Small multiples ------------------------------------------------------------------------------

// A sweep dimension among a chart's points: the axes that advance together (one unless zipped)
// and vary there, in sweep order.
struct Dim {
  std::size_t dimension = 0;
  std::vector<std::size_t> axes;
};

std::vector<Dim> varying_dims(const std::vector<Axis>& axes) {
  std::vector<Dim> dims;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (!axes[i].varies()) continue;
    const auto it = std::find_if(dims.begin(), dims.end(), [&](const Dim& d) { return d.dimension == axes[i].dimension; });
    if (it != dims.end()) {
      it->axes.push_back(i);
    } else {
      dims.push_back({axes[i].dimension, {i}});
    }
  }
  return dims;
}

// Per point, per axis: the index of the point's value among the axis's values.
std::vector<std::vector<int>> value_ids(const std::vector<Axis>& axes, const std::vector<const Point*>& points) {
  std::vector<std::vector<int>> ids;
  for (const Point* p : points) {
    std::vector<int> row;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const auto& values = axes[i].values;
      row.push_back(static_cast<int>(std::find(values.begin(), values.end(), p->values[i]) - values.begin()));
    }
    ids.push_back(std::move(row));
  }
  return ids;
}

using DimMask = std::uint32_t;
// Splits and colourings are chosen among the 10 outermost varying dimensions (1,024 subsets, each
// a pass over the points); a mask holds 32.
constexpr std::size_t kMaxChoiceDims = 10;
constexpr std::size_t kMaxMaskDims = 32;

std::vector<int> key_of(const std::vector<int>& ids, const std::vector<Dim>& dims, DimMask mask) {
  std::vector<int> key;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if ((mask >> d & 1U) == 0) continue;
    for (const auto a : dims[d].axes) key.push_back(ids[a]);
  }
  return key;
}

// The positions (indices into `members`) grouped by their values of the dimensions in `mask`,
// groups in the order of their first member.
std::vector<std::vector<std::size_t>> group_by(const std::vector<std::vector<int>>& ids, const std::vector<std::size_t>& members,
                                               const std::vector<Dim>& dims, DimMask mask) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::vector<int>, std::size_t> by_key;
  for (const auto m : members) {
    const auto [it, added] = by_key.emplace(key_of(ids[m], dims, mask), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(m);
  }
  return groups;
}

std::size_t distinct(const std::vector<std::vector<int>>& ids, const std::vector<std::size_t>& members,
                     const std::vector<Dim>& dims, DimMask mask) {
  std::set<std::vector<int>> keys;
  for (const auto m : members) keys.insert(key_of(ids[m], dims, mask));
  return keys.size();
}

std::vector<std::size_t> mask_dims(DimMask mask) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < kMaxMaskDims; ++d) {
    if ((mask >> d & 1U) != 0) out.push_back(d);
  }
  return out;
}

// Prefers the mask whose dimensions are the outermost (the lexicographically smaller list).
bool more_outer(DimMask a, DimMask b) {
  const auto x = mask_dims(a);
  const auto y = mask_dims(b);
  return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
}

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  if (items.size() <= 1) return join(items, "");
  return join(std::vector<std::string>(items.begin(), items.end() - 1), ", ") + " and " + items.back();
}

// The paths naming the dimensions of `mask` (the first varying axis of each).
std::string dims_text(const std::vector<Axis>& axes, const std::vector<Dim>& dims, DimMask mask) {
  std::vector<std::string> paths;
  for (const auto d : mask_dims(mask)) paths.push_back(axes[dims[d].axes.front()].path);
  return and_list(paths);
}

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

// A file name part: letters, digits and . _ + = - kept, anything else '_'.
std::string file_part(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const bool kept = std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' || ch == '+' ||
                      ch == '=' || ch == '-';
    out += kept ? ch : '_';
  }
  return out;
}

// "--preset=h200-sxm-measured", "--mode=offload--pool_ratio=0.2": the value of the first axis of
// a zipped dimension only (its partners advance with it).
std::string name_part(const Axis& a, const Json& v) {
  if (v.is_object() && !a.whole) {
    std::string out;
    for (const auto& k : a.keys) {
      if (v.contains(k)) out += "--" + file_part(k) + "=" + file_part(scalar_text(v[k]));
    }
    if (!out.empty()) return out;
  }
  return "--" + file_part(a.name) + "=" + file_part(v.is_object() ? v.dump() : scalar_text(v));
}

// --- Scripts ----------------------------------------------------------------------------------

struct Layout {
  int width = kLineWidth;
  int height = kLineHeight;
};

// The script: a header, then for each format a terminal, the settings and the plot (the second
// format replots), so that `gnuplot NAME.gp` in the chart's directory re-renders it.
std::string make_script(const std::string& name, const std::string& title, const std::string& data_columns,
                        const std::string& settings, const std::string& plot, PlotFormat format, const Layout& layout) {
  const std::string size = std::to_string(layout.width) + "," + std::to_string(layout.height);
  std::string s = "# ess-sim plot: " + one_line(title) + "\n" +
                  "# Re-render with `gnuplot " + name + ".gp` in this directory. Data: " + name + ".dat, columns " +
                  data_columns + ".\n";
  bool first = true;
  if (format != PlotFormat::svg) {
    s += "# pngcairo where this gnuplot has it (antialiased), else the libgd png terminal.\n"
         "if (strstrt(' '.GPVAL_TERMINALS.' ', ' pngcairo ') > 0) {\n"
         "  set terminal pngcairo size " + size + " noenhanced font 'Sans,10'\n"
         "} else {\n"
         "  set terminal png size " + size + " noenhanced\n"
         "}\n"
         "set output '" + name + ".png'\n" + settings + plot;
    first = false;
  }
  if (format != PlotFormat::png) {
    s += "set terminal svg size " + size + " noenhanced font 'Sans,10' background '#ffffff'\n"
         "set output '" + name + ".svg'\n";
    s += first ? settings + plot : "replot\n";
  }
  return s + "set output\n";
}

std::vector<std::string> images_of(const std::string& name, PlotFormat format) {
  std::vector<std::string> out;
  if (format != PlotFormat::svg) out.push_back(name + ".png");
  if (format != PlotFormat::png) out.push_back(name + ".svg");
  return out;
}

// Series colours: Paul Tol's "bright" scheme, told apart by colour-blind readers too, and a point
// shape each (gnuplot's defaults include a pale yellow).
const std::string kLinetypes =
    "set linetype 1 lc rgb '#4477aa' pt 7\nset linetype 2 lc rgb '#ee6677' pt 5\n"
    "set linetype 3 lc rgb '#228833' pt 9\nset linetype 4 lc rgb '#ccbb44' pt 11\n"
    "set linetype 5 lc rgb '#66ccee' pt 13\nset linetype 6 lc rgb '#aa3377' pt 15\n"
    "set linetype 7 lc rgb '#555555' pt 2\nset linetype 8 lc rgb '#ee7733' pt 3\nset linetype cycle 8\n";

// A gnuplot double-quoted string of two lines (backslash escapes are read inside).
std::string quote_lines(const std::string& first, const std::string& second) {
  std::string out = "\"";
  for (const char c : one_line(first) + '\n' + one_line(second)) {
    if (c == '\n') {
      out += "\\n";
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

// `subtitle`, when given, is the title's second line (a split chart's fixed values, --where).
std::string common_settings(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                            const std::string& subtitle = "") {
  return "set encoding utf8\n"
         "set title " + (subtitle.empty() ? quote(title) : quote_lines(title, subtitle)) + " font ',12'\n"
         "set xlabel " + quote(xlabel) + "\n"
         "set ylabel " + quote(ylabel) + "\n"
         "set grid\n"
         "set key outside right top Left reverse\n" +
         kLinetypes;
}

// A line of small print at the bottom of the image.
std::string footnote(const std::string& text) {
  return "set label 100 " + quote(text) + " at screen 0.01, screen 0.012 left font ',9'\n";
}

// A second line of small print, above the first, in an image `height` pixels tall.
std::string footnote_above(const std::string& text, int height) {
  return "set label 101 " + quote(text) + " at screen 0.01, screen " + num(28.0 / height) + " left font ',9'\n";
}

// A plot clause continued on the next line.
std::string clauses(const std::vector<std::string>& parts) { return "plot " + join(parts, ", \\\n     ") + "\n"; }

struct Context {
  const PlotInput& input;
  const PlotRequest& request;
  const View& view;
  PlotPlan& plan;
  std::string sweep;  // "sweep NAME" for titles
  std::string where;  // "where PATH=VALUE ..." for titles (--where), or empty
};

std::string title_of(const Context& c, const std::string& what) { return what + (c.sweep.empty() ? "" : " - " + c.sweep); }

// The title's second line: the values a split chart's points share, and the --where filter.
std::string subtitle_of(const Context& c, const Panel& panel) {
  std::vector<std::string> parts;
  if (!panel.fixed.empty()) parts.push_back(panel.fixed);
  if (!c.where.empty()) parts.push_back(c.where);
  return join(parts, "; ");
}

// The title on one line, for comments and data headers.
std::string heading(const std::string& title, const std::string& subtitle) {
  return subtitle.empty() ? title : title + " - " + subtitle;
}

// A chart's points as one chart or, when one would hold more than `limit` series (lines, counted
// over the varying dimensions outside `line_dims`) or bars (points, when `bars`), as small
// multiples: one chart per value of the dimensions S that give the fewest charts each within the
// limit; among as few, the outermost. Skipped, with a message, past kPlotMaxCharts charts.
Panels make_panels(Context& c, const std::string& name, const std::vector<const Point*>& points,
                   const std::set<std::size_t>& line_dims, bool bars, std::size_t limit) {
  const auto axes = axes_among(c.view, points);
  auto dims = varying_dims(axes);
  const auto ids = value_ids(axes, points);
  std::vector<std::size_t> all(points.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  // The dimensions that tell series apart (lines) and may split the chart: not those lines run along.
  if (dims.size() > kMaxMaskDims) dims.resize(kMaxMaskDims);
  DimMask counted = 0;
  DimMask splittable = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const bool along = line_dims.count(dims[d].dimension) > 0;
    if (!along) counted |= DimMask{1} << d;
    if ((bars || !along) && d < kMaxChoiceDims) splittable |= DimMask{1} << d;
  }
  auto largest = [&](const std::vector<std::vector<std::size_t>>& panels, DimMask split) {
    std::size_t most = 0;
    for (const auto& members : panels) {
      most = std::max(most, bars ? members.size() : distinct(ids, members, dims, counted & ~split));
    }
    return most;
  };
  const std::size_t whole = largest({all}, 0);
  Panels out;
  if (whole <= limit) {
    out.list.push_back({name, "", points});
    return out;
  }
  std::optional<DimMask> best;
  std::size_t best_count = 0;
  for (DimMask split = splittable; split != 0; split = (split - 1) & splittable) {
    const auto panels = group_by(ids, all, dims, split);
    if (largest(panels, split) > limit) continue;
    if (!best || panels.size() < best_count || (panels.size() == best_count && more_outer(split, *best))) {
      best = split;
      best_count = panels.size();
    }
  }
  const std::string what = bars ? "bars" : "lines";
  if (!best) {
    // Only points alike on every axis could be more than the limit: one chart holds them.
    out.list.push_back({name, "", points});
    return out;
  }
  const std::string by = dims_text(axes, dims, *best);
  if (best_count > kPlotMaxCharts) {
    c.plan.messages.push_back("skipped " + name + ": " + std::to_string(whole) + " " + what + " would need " +
                              std::to_string(best_count) + " charts of at most " + std::to_string(limit) +
                              " (one per " + by + "), more than " + std::to_string(kPlotMaxCharts) +
                              "; plot a slice with --where PATH=VALUE (or sweep fewer points)");
    return out;
  }
  const auto groups = group_by(ids, all, dims, *best);
  std::set<std::string> names;
  bool clean = true;
  for (const auto& members : groups) {
    Panel panel;
    panel.name = name;
    std::vector<std::string> fixed;
    const Point& first = *points[members.front()];
    for (const auto d : mask_dims(*best)) {
      panel.name += name_part(axes[dims[d].axes.front()], first.values[dims[d].axes.front()]);
      for (const auto a : dims[d].axes) fixed.push_back(axis_label(axes[a], first.values[a]));
    }
    panel.fixed = join(fixed, " ");
    for (const auto m : members) panel.points.push_back(points[m]);
    // File names stay short and tell the parts apart, else the parts are numbered.
    if (panel.name.size() > 200 || !names.insert(panel.name).second) clean = false;
    out.list.push_back(std::move(panel));
  }
  if (!clean) {
    const std::size_t width = std::to_string(out.list.size()).size();
    for (std::size_t i = 0; i < out.list.size(); ++i) {
      std::string n = std::to_string(i + 1);
      out.list[i].name = name + "--" + std::string(width - n.size(), '0') + n;
    }
  }
  out.note = "One of " + std::to_string(out.list.size()) + " charts " + name + "--*, one per " + by + ", each with at most " +
             std::to_string(limit) + " " + what + ".";
  c.plan.messages.push_back(name + ": " + std::to_string(whole) + " " + what + ", more than " + std::to_string(limit) +
                            " in one chart: split into " + std::to_string(out.list.size()) + " charts, one per " + by +
                            " (" + name + "--*)");
  return out;
}

std::string add_to_metrics(const std::vector<std::string>& columns) {
  std::vector<std::string> paths;
  for (const auto& col : columns) paths.push_back("\"" + metric_path(col) + "\"");
  return "list " + join(paths, ", ") + " in the spec's \"metrics\"";
}

// "skipped NAME: needs ..." for the columns the ledger lacks; true when none is missing.
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

// Where an x value comes from: a metric column, else an axis with numeric values.
struct XSource {
  std::string column;
  int axis = -1;
};

std::optional<XSource> x_source(Context& c, const std::string& chart, const std::string& column, const std::string& axis) {
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

// A line chart of a metric (tokens/s per GPU unless --y names another): one line per series,
// along the `line` dimensions.
struct LineChart {
  std::string name;
  std::string what;      // for the title
  std::string xlabel;
  std::string x_column;  // the .dat header of the x column
  std::set<std::size_t> line_dims;
  std::vector<std::string> categories;  // categorical x: the tic labels at 0, 1, ...
  std::string y_column = kTokensPerGpu;
  std::string y_title = "Throughput per GPU";
  std::string ylabel = "decode throughput (tokens/s per GPU)";
};

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
  const Panels panels = make_panels(c, chart.name, points, chart.line_dims, /*bars=*/false, kPlotMaxSeries);
  const bool split = panels.list.size() > 1;
  // Split charts share their scales, so that they compare at a glance.
  double top = 0.0;
  for (const Point* p : points) top = std::max(top, *metric(*p, chart.y_column));
  const std::string title = title_of(c, chart.y_title + " vs " + chart.what);
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
      plots.push_back("'" + panel.name + ".dat' index " + std::to_string(i) + " using 1:2 with linespoints lw 2 ps 1.3 title " +
                      quote(s.label.empty() ? (chart.y_column == kTokensPerGpu ? "tokens/s per GPU" : chart.y_column) : s.label));
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
    const double lo = *xs.begin();
    const double hi = *xs.rbegin();
    if (!chart.categories.empty()) {
      std::vector<std::string> tics;
      for (std::size_t i = 0; i < chart.categories.size(); ++i) tics.push_back(quote(chart.categories[i]) + " " + std::to_string(i));
      settings += "set xrange [-0.5:" + num(static_cast<double>(chart.categories.size()) - 0.5) + "]\n";
      // Upright when each fits its slot of the plot area (about 900 pixels beside the legend), else
      // slanted, with a bottom margin that holds the longest.
      std::size_t longest = 0;
      for (const auto& label : chart.categories) longest = std::max(longest, label.size());
      const int label_pixels = 7 * static_cast<int>(longest);
      if (label_pixels + 16 < 900 / static_cast<int>(chart.categories.size())) {
        settings += "set xtics (" + join(tics, ", ") + ")\nset bmargin 6\n";
      } else {
        settings += "set xtics rotate by 30 right (" + join(tics, ", ") + ")\n" + "set bmargin at screen " +
                    num(static_cast<double>(label_pixels / 2 + 80) / kLineHeight) + "\n";
      }
    } else if (lo > 0 && hi / lo >= 16) {
      // Batches and contexts are usually swept in powers of two: a log axis spaces them evenly.
      settings += "set logscale x 2\nset xrange [" + num(lo / 1.15) + ":" + num(hi * 1.15) + "]\n";
    } else {
      settings += "set xrange [" + num(lo - (hi - lo) * 0.04) + ":" + num(hi + (hi - lo) * 0.04) + "]\n";
    }
    if (chart.categories.empty() && xs.size() <= 12) {
      // A tic at each value swept, when there are few.
      std::vector<std::string> tics;
      for (const double v : xs) tics.push_back(quote(num(v)) + " " + num(v));
      settings += "set xtics (" + join(tics, ", ") + ")\n";
    }
    c.plan.charts.push_back({panel.name,
                             make_script(panel.name, head, chart.x_column + " " + chart.y_column + " point", settings,
                                         clauses(plots), c.request.format, {}),
                             data, images_of(panel.name, c.request.format)});
  }
}

std::set<std::size_t> dims_of(const View& v, std::initializer_list<const char*> paths) {
  std::set<std::size_t> out;
  for (const char* path : paths) {
    const int a = axis_index(v, path);
    if (a >= 0 && v.axes[static_cast<std::size_t>(a)].varies()) out.insert(v.axes[static_cast<std::size_t>(a)].dimension);
  }
  return out;
}

void throughput_vs_batch(Context& c) {
  const std::string name = "throughput_vs_batch";
  if (!require(c, name, {kTokensPerGpu})) return;
  const auto source = x_source(c, name, kBatch, kBatchAxis);
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
  if (!require(c, name, {kTokensPerGpu})) return;
  const auto source = x_source(c, name, kContext, kContextAxis);
  if (!source) return;
  add_line_chart(c, {name, "context length", "context length (tokens)", "context_length_tokens",
                     dims_of(c.view, {kContextAxis}), {}},
                 [&](const Point& p) { return x_of(*source, p); });
}

std::string file_stem(const std::string& path) {
  std::string out;
  for (const char c : path) out += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  return out;
}

// `y` against the axis at `path` (--x, --y): throughput_vs_<axis> for tokens/s per GPU, else
// <y>_vs_<axis>, the metric column named as the ledger has it.
void metric_vs_axis(Context& c, const std::string& path, const std::string& y) {
  const bool throughput = y == kTokensPerGpu;
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
  const Panels panels = make_panels(c, name, points, {}, /*bars=*/true, kPlotMaxBars);
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
    const std::string file = "'" + panel.name + ".dat'";
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
  const Panels panels = make_panels(c, name, points, {}, /*bars=*/true, kPlotMaxBars);
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
  // One chart (the front is over every point); past kPlotMaxSeries colours, coloured by the
  // dimensions that give the most colours within it (among as many, the outermost).
  std::string colours;
  if (group(axes, points, excluded).size() > kPlotMaxSeries) {
    auto dims = varying_dims(axes);
    if (dims.size() > kMaxMaskDims) dims.resize(kMaxMaskDims);
    const auto ids = value_ids(axes, points);
    std::vector<std::size_t> all(points.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    DimMask candidates_mask = 0;
    for (std::size_t d = 0; d < dims.size() && d < kMaxChoiceDims; ++d) {
      if (excluded.count(dims[d].dimension) == 0) candidates_mask |= DimMask{1} << d;
    }
    DimMask best = 0;
    std::size_t best_count = 1;
    for (DimMask keep = candidates_mask; keep != 0; keep = (keep - 1) & candidates_mask) {
      const std::size_t n = distinct(ids, all, dims, keep);
      if (n > kPlotMaxSeries) continue;
      if (n > best_count || (n == best_count && more_outer(keep, best))) {
        best = keep;
        best_count = n;
      }
    }
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if ((best >> d & 1U) == 0 && excluded.count(dims[d].dimension) == 0) excluded.insert(dims[d].dimension);
    }
    const DimMask dropped = candidates_mask & ~best;
    colours = best == 0 ? "One colour for all points" : "Colours by " + dims_text(axes, dims, best);
    colours += " (at most " + std::to_string(kPlotMaxSeries) + "); a colour's dots differ in " +
               dims_text(axes, dims, dropped) + " too: plot a slice with --where PATH=VALUE to tell them apart.";
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

// --- Running gnuplot ------------------------------------------------------------------------------

std::string os_error(int error) { return std::strerror(error); }

bool is_executable_file(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// A private directory removed with its contents at the end.
class StagingDir {
 public:
  StagingDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ess-plot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw OutputError(pattern, "cannot create a temporary directory " + pattern + ": " + os_error(errno));
    }
    path_ = pattern;
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_output(const std::filesystem::path& path) {
  std::string text;
  if (read_whole_file(path, text) != ReadProblem::none) return "";
  return text;
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs `gnuplot script` in `dir` (stdin /dev/null, stdout and stderr to files there); returns what
// it printed on stderr. Throws OutputError when it cannot start or does not exit with status 0.
std::string run_gnuplot(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& script) {
  const auto out_path = dir / ".gnuplot.stdout";
  const auto err_path = dir / ".gnuplot.stderr";
  const std::string program = gnuplot.string();
  const pid_t pid = start_child(program, {script}, dir, out_path, err_path, "cannot execute gnuplot");
  const int status = wait_child(pid, program);
  const std::string stderr_text = trim_end(read_output(err_path));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                              : "was killed by signal " + std::to_string(WTERMSIG(status));
    throw OutputError(gnuplot, program + " " + how + " on " + script +
                                   (stderr_text.empty() ? std::string() : ":\n" + stderr_text) +
                                   " (no chart was written)");
  }
  return stderr_text;
}

// The files a previous output set in `dir` lists (its manifest), or none. A manifest of anything
// but charts (a run's results.json) is refused: its set would lose its manifest.
std::vector<std::string> previous_plot_files(const std::filesystem::path& dir) {
  const auto path = dir / kManifestName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const Json manifest = read_json_file(path);
  std::vector<std::string> names;
  if (manifest.is_object() && manifest.contains("files") && manifest["files"].is_array()) {
    for (const auto& f : manifest["files"]) {
      if (f.is_object() && f.contains("name") && f["name"].is_string()) names.push_back(f["name"].get<std::string>());
    }
  }
  for (const auto& n : names) {
    const auto dot = n.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : n.substr(dot);
    if (n.find('/') != std::string::npos || (ext != ".gp" && ext != ".dat" && ext != ".png" && ext != ".svg")) {
      throw ConfigError(path.string(), "", "this directory holds another output set (it lists \"" + n +
                                               "\"), not charts; choose another -o directory");
    }
  }
  return names;
}

// --- --where ----------------------------------------------------------------------------------

struct WhereClause {
  std::string text;                // PATH=VALUE as given
  std::string path;                // PATH
  std::string axis;                // the axis PATH names or lies in
  std::vector<std::string> keys;   // the keys of PATH below the axis (cache.pool_ratio: pool_ratio)
  std::string raw;                 // VALUE
  std::optional<Json> value;       // VALUE read as JSON, when it parses
};

WhereClause parse_where(const PlotInput& input, const std::string& text) {
  const std::string origin = "--where " + text;
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(origin, "", "expected PATH=VALUE, a sweep axis and one of its values "
                                  "(--where hardware.preset=h200-sxm-measured, --where cache.pool_ratio=0.2)");
  }
  WhereClause w;
  w.text = text;
  w.path = text.substr(0, eq);
  w.raw = text.substr(eq + 1);
  if (Json::accept(w.raw)) w.value = Json::parse(w.raw);
  if (std::find(input.axes.begin(), input.axes.end(), w.path) != input.axes.end()) {
    w.axis = w.path;
  } else {
    // A key inside an object axis: the longest axis that PATH continues with a dot.
    for (const auto& a : input.axes) {
      if (w.path.size() > a.size() + 1 && w.path.compare(0, a.size(), a) == 0 && w.path[a.size()] == '.' &&
          a.size() > w.axis.size()) {
        w.axis = a;
      }
    }
    if (w.axis.empty()) {
      throw ConfigError(origin, "", "\"" + w.path + "\" is not an axis of the sweep" + did_you_mean(w.path, input.axes) +
                                        "; the axes are " + quoted_list(input.axes));
    }
    std::string rest = w.path.substr(w.axis.size() + 1);
    std::size_t start = 0;
    while (true) {
      const auto dot = rest.find('.', start);
      w.keys.push_back(rest.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  return w;
}

// The record's value at the clause's path, or none.
std::optional<Json> where_value(const WhereClause& w, const Record& r) {
  const auto& axes = r.at("axes");
  if (!axes.contains(w.axis)) return std::nullopt;
  Json v = Json::parse(axes.at(w.axis).dump());
  for (const auto& k : w.keys) {
    if (!v.is_object() || !v.contains(k)) return std::nullopt;
    v = Json(v[k]);
  }
  return v;
}

bool where_matches(const WhereClause& w, const Record& r) {
  const auto v = where_value(w, r);
  if (!v) return false;
  return (w.value && *v == *w.value) || (!v->is_object() && !v->is_array() && scalar_text(*v) == w.raw);
}

// The records --where selects, and "where ..." for the titles; a clause no point matches, or
// clauses no point matches together, are errors listing what the sweep has.
std::pair<std::vector<Record>, std::string> apply_where(const PlotInput& input, const std::vector<std::string>& where) {
  std::vector<WhereClause> clauses;
  for (const auto& text : where) clauses.push_back(parse_where(input, text));
  for (const auto& w : clauses) {
    if (std::any_of(input.records.begin(), input.records.end(), [&](const Record& r) { return where_matches(w, r); })) continue;
    std::vector<std::string> values;
    for (const auto& r : input.records) {
      const auto v = where_value(w, r);
      if (!v) continue;
      const std::string t = v->is_string() ? v->get<std::string>() : v->dump();
      if (std::find(values.begin(), values.end(), t) == values.end()) values.push_back(t);
    }
    throw ConfigError("--where " + w.text, "", "no point of the sweep has " + w.path + " = " + w.raw +
                                                   (values.empty() ? std::string("; no point has " + w.path + " at all")
                                                                   : "; its values are " + quoted_list(values)));
  }
  std::vector<Record> kept;
  for (const auto& r : input.records) {
    bool ok = true;
    for (const auto& w : clauses) {
      // Clauses on one path: any of them.
      bool any = false;
      for (const auto& other : clauses) {
        if (other.path == w.path && where_matches(other, r)) any = true;
      }
      ok = ok && any;
    }
    if (ok) kept.push_back(r);
  }
  std::vector<std::string> texts;
  for (const auto& w : clauses) texts.push_back(w.text);
  if (kept.empty()) {
    throw ConfigError("--where " + join(texts, " --where "), "", "no point of the sweep matches all of them together");
  }
  return {std::move(kept), "where " + join(texts, ", ")};
}

}  // namespace

PlotFormat parse_plot_format(const std::string& text, const std::string& option) {
  if (text == "png") return PlotFormat::png;
  if (text == "svg") return PlotFormat::svg;
  if (text == "both") return PlotFormat::both;
  const std::vector<std::string> formats = {"png", "svg", "both"};
  throw ConfigError(option + " " + text, "", "expected png, svg or both" + did_you_mean(text, formats));
}

PlotInput read_plot_input(const std::filesystem::path& sweep_dir) {
  PlotInput in;
  const auto ledger = sweep_dir / kLedgerName;
  in.origin = ledger.string();
  std::error_code ec;
  if (!std::filesystem::is_directory(sweep_dir, ec)) {
    throw ConfigError(sweep_dir.string(), "", "expected a sweep directory (ess-sim sweep SPEC -o DIR)");
  }
  if (!std::filesystem::exists(ledger, ec)) {
    throw ConfigError(in.origin, "", "no ledger: expected the results.jsonl that `ess-sim sweep SPEC -o " +
                                         sweep_dir.string() + "` writes");
  }
  // A point recorded twice (a resumed sweep still running) counts once, by its last record.
  std::map<std::size_t, Record> by_point;
  LedgerContent content = read_ledger(ledger);
  for (auto& r : content.records) {
    const auto index = r.at("point").get<std::size_t>();
    by_point[index] = std::move(r);
  }
  if (by_point.empty()) throw ConfigError(in.origin, "", "the ledger has no points yet");
  for (auto& [index, r] : by_point) {
    const std::string where = "point " + std::to_string(index);
    if (!r.contains("axes") || !r["axes"].is_object()) {
      throw ConfigError(in.origin, "", where + ": expected \"axes\", an object of axis path -> value");
    }
    for (const auto& [key, value] : r.items()) {
      if (kRecordFields.count(key) == 0 && !value.is_number() && !value.is_null()) {
        throw ConfigError(in.origin, "", where + ": metric \"" + key + "\" is " + describe_json(Json::parse(value.dump())) +
                                             ", expected a number or null");
      }
    }
    for (const auto& [path, unused] : r["axes"].items()) {
      if (std::find(in.axes.begin(), in.axes.end(), path) == in.axes.end()) in.axes.push_back(path);
    }
    in.records.push_back(std::move(r));
  }
  const auto copy = sweep_dir / kSweepSpecCopyName;
  if (std::filesystem::exists(copy, ec)) {
    const Json j = read_json_file(copy);
    if (!j.is_object() || j.value("schema", std::string()) != kSweepDirSchema || !j.contains("spec")) {
      throw ConfigError(copy.string(), "", "not a sweep directory's spec.json (expected schema \"" +
                                               std::string(kSweepDirSchema) + "\" and spec)");
    }
    const SweepSpec spec = read_sweep_spec(j["spec"], copy.string() + " (spec)", sweep_dir);
    in.name = spec.name;
    std::vector<std::string> axes;
    for (const auto& a : spec.axes) axes.push_back(a.path);
    for (const auto& a : in.axes) {
      if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
    }
    in.axes = std::move(axes);
    for (const auto& d : spec.dimensions) {
      if (d.size() < 2) continue;
      std::vector<std::string> group;
      for (const auto i : d) group.push_back(spec.axes[i].path);
      in.zipped.push_back(std::move(group));
    }
  }
  return in;
}

PlotPlan plan_plots(const PlotInput& input, const PlotRequest& request) {
  if (!request.y_columns.empty() && request.x_axis.empty()) {
    throw ConfigError("--y " + request.y_columns.front(), "", "--y plots a metric against the axis --x names: give --x AXIS_PATH");
  }
  if (!request.x_axis.empty() && std::find(input.axes.begin(), input.axes.end(), request.x_axis) == input.axes.end()) {
    throw ConfigError("--x " + request.x_axis, "", "\"" + request.x_axis + "\" is not an axis of the sweep" +
                                                       did_you_mean(request.x_axis, input.axes) + "; the axes are " +
                                                       quoted_list(input.axes));
  }
  PlotPlan plan;
  std::string where;
  PlotInput selected;
  const PlotInput* in = &input;
  if (!request.where.empty()) {
    selected.origin = input.origin;
    selected.name = input.name;
    selected.axes = input.axes;
    selected.zipped = input.zipped;
    std::tie(selected.records, where) = apply_where(input, request.where);
    plan.messages.push_back(input.origin + ": " + std::to_string(selected.records.size()) + " of the " +
                            std::to_string(input.records.size()) + " points selected, " + where);
    in = &selected;
  }
  const View view = make_view(*in);
  std::map<std::string, std::size_t> not_ok;
  for (const auto& r : in->records) {
    const std::string status = r.value("status", std::string());
    if (status != "ok") ++not_ok[status];
  }
  std::vector<std::string> counts;
  for (const auto& [status, n] : not_ok) counts.push_back(status + " " + std::to_string(n));
  if (view.ok.empty()) {
    throw ConfigError(input.origin, "", "no point is ok (" + join(counts, ", ") + "): nothing to plot");
  }
  if (!not_ok.empty()) {
    plan.messages.push_back(input.origin + ": " + std::to_string(in->records.size()) + " points" +
                            (where.empty() ? "" : " selected") + ", " + std::to_string(view.ok.size()) +
                            " ok and plotted; not plotted: " + join(counts, ", "));
  }
  Context c{*in, request, view, plan, input.name.empty() ? "" : "sweep " + input.name, where};
  // A serving sweep records serving metrics only: the decode charts do not apply to it.
  const bool serving = !view.columns.empty() && std::all_of(view.columns.begin(), view.columns.end(),
                                   [](const std::string& col) { return col.rfind("serving_", 0) == 0; });
  if (serving) {
    plan.messages.push_back("a serving sweep: the decode charts (throughput, step time, PCIe, Pareto) do not apply; " +
                            std::string(request.y_columns.empty() ? "chart its metrics with --x AXIS --y COLUMN"
                                                                  : "its metrics charted against --x"));
  } else {
    throughput_vs_batch(c);
    throughput_vs_context(c);
  }
  if (!request.x_axis.empty()) {
    if (request.y_columns.empty() && !serving) metric_vs_axis(c, request.x_axis, kTokensPerGpu);
    for (const auto& y : request.y_columns) metric_vs_axis(c, request.x_axis, y);
  }
  if (!serving) {
    step_time_breakdown(c);
    pcie_utilization(c);
    pareto_tpot(c);
  }
  if (plan.charts.empty()) {
    throw ConfigError(input.origin, "", "no chart can be drawn:\n  " + join(plan.messages, "\n  "));
  }
  return plan;
}

std::filesystem::path find_gnuplot(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    throw OutputError(program, "gnuplot not found: " + program +
                                   " is not an executable file (install gnuplot with apt-get install gnuplot-nox)");
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    // An empty entry means the current directory: not a place to pick a program from.
    if (!dir.empty()) {
      const std::filesystem::path candidate = std::filesystem::path(dir) / program;
      if (is_executable_file(candidate)) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  throw OutputError(program, program + " not found on PATH: install it with apt-get install gnuplot-nox");
}

PlotOutput render_plots(const PlotPlan& plan, const std::filesystem::path& gnuplot, const std::filesystem::path& out_dir) {
  PlotOutput result;
  std::error_code ec;
  const auto previous = std::filesystem::is_directory(out_dir, ec) ? previous_plot_files(out_dir) : std::vector<std::string>{};
  const StagingDir staging;
  for (const auto& chart : plan.charts) {
    write_file_atomically(staging.path() / (chart.name + ".gp"), chart.script);
    write_file_atomically(staging.path() / (chart.name + ".dat"), chart.data);
  }
  for (const auto& chart : plan.charts) {
    const std::string script = chart.name + ".gp";
    const std::string printed = run_gnuplot(gnuplot, staging.path(), script);
    if (!printed.empty()) result.warnings.push_back("gnuplot on " + script + ": " + printed);
  }
  // Everything rendered: read the set into memory and write it into out_dir in one go.
  std::vector<std::pair<std::string, std::string>> contents;
  for (const auto& chart : plan.charts) {
    contents.emplace_back(chart.name + ".gp", chart.script);
    contents.emplace_back(chart.name + ".dat", chart.data);
    for (const auto& image : chart.images) {
      std::string bytes;
      const auto problem = read_whole_file(staging.path() / image, bytes);
      if (problem != ReadProblem::none || bytes.empty()) {
        throw OutputError(staging.path() / image, "gnuplot exited with status 0 but did not write " + image +
                                                      (problem != ReadProblem::none ? " (" + describe(problem) + ")"
                                                                                    : " (empty)"));
      }
      contents.emplace_back(image, std::move(bytes));
    }
  }
  std::vector<OutputFile> files;
  for (const auto& [name, content] : contents) files.push_back({name, content});
  ensure_directory(out_dir);
  write_output_set(out_dir, files, std::string("ess-sim ") + ESS_SIM_VERSION + " plot");
  for (const auto& name : previous) {
    const bool kept = std::any_of(contents.begin(), contents.end(), [&](const auto& f) { return f.first == name; });
    if (!kept) ::unlink((out_dir / name).c_str());
  }
  for (const auto& [name, unused] : contents) result.written.push_back(out_dir / name);
  result.written.push_back(out_dir / kManifestName);
  return result;
}

}  // namespace ess
