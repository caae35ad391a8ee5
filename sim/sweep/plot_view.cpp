#include "sim/sweep/plot_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace ess::plot {

const std::set<std::string> kRecordFields = {"point", "axes", "status", "reason", "scenario_sha256", "ess_sim_version",
                                             "wall_s"};

namespace {

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

bool shown(const Axis& a, const std::set<std::size_t>& excluded) { return a.varies() && excluded.count(a.dimension) == 0; }

}  // namespace

std::string value_text(const Axis& a, const Json& v) {
  if (!v.is_object() || a.whole) return scalar_text(v);
  std::vector<std::string> parts;
  for (const auto& k : a.keys) {
    if (v.contains(k)) parts.push_back(k + "=" + scalar_text(v[k]));
  }
  return parts.empty() ? v.dump() : join(parts, " ");
}

std::string axis_label(const Axis& a, const Json& v) {
  if (v.is_object() && !a.whole) {
    const std::string text = value_text(a, v);
    if (text.front() != '{') return text;
  }
  return a.name + "=" + scalar_text(v);
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

std::string point_label(const std::vector<Axis>& axes, const Point& p, const std::set<std::size_t>& excluded) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (shown(axes[i], excluded)) parts.push_back(axis_label(axes[i], p.values[i]));
  }
  return join(parts, " ");
}

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

}  // namespace ess::plot
