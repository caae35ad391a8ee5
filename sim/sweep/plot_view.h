// The ledger as the sweep charts see it (sim/sweep/plot_*.cpp): the sweep's axes with their values
// among the ok points, each point's values per axis, and the labels that tell points apart.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/sweep/plot.h"
#include "sim/sweep/plot_text.h"

namespace ess::plot {

// Record fields that are not metrics (ledger_record in sim/sweep/ledger.cpp).
extern const std::set<std::string> kRecordFields;

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

// The axes (in the input's order, zipped axes sharing a dimension), the ok points and the metric
// columns any record has.
[[nodiscard]] View make_view(const PlotInput& input);
// The index of the axis at `path`, or -1.
[[nodiscard]] int axis_index(const View& v, const std::string& path);
// The point's finite number in `column`, or none.
[[nodiscard]] std::optional<double> metric(const Point& p, const std::string& column);

// The value without the axis name: "offload", "mode=offload pool_ratio=0.2", "32768".
[[nodiscard]] std::string value_text(const Axis& a, const Json& v);
// In a legend or under a bar: "context_length=32768", "mode=offload pool_ratio=0.2".
[[nodiscard]] std::string axis_label(const Axis& a, const Json& v);

// The axes as the points of one chart see them: each axis's values among those points and the
// keys that tell them apart, so that labels name only what differs between the points shown.
[[nodiscard]] std::vector<Axis> axes_among(const View& v, const std::vector<const Point*>& points);
// The label of a point from the axes that vary, leaving out the dimensions in `excluded`.
[[nodiscard]] std::string point_label(const std::vector<Axis>& axes, const Point& p, const std::set<std::size_t>& excluded);

struct Series {
  std::string label;  // empty when no axis tells the series apart
  std::vector<const Point*> points;
};

// The points grouped by their values of the varying axes outside `excluded`, series in the order
// of their first point.
[[nodiscard]] std::vector<Series> group(const std::vector<Axis>& axes, const std::vector<const Point*>& points,
                                        const std::set<std::size_t>& excluded);

}  // namespace ess::plot
