#include "sim/sweep/plot_panels.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace ess::plot {

namespace {

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

// The paths naming the dimensions of `mask` (the first varying axis of each).
std::string dims_text(const std::vector<Axis>& axes, const std::vector<Dim>& dims, DimMask mask) {
  std::vector<std::string> paths;
  for (const auto d : mask_dims(mask)) paths.push_back(axes[dims[d].axes.front()].path);
  return and_list(paths);
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

// 0, 1, ..., n - 1: every point of a chart, as the members of one group.
std::vector<std::size_t> positions(std::size_t n) {
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

// One panel per group of the split dimensions `split`, named NAME--axis=value--...; numbered
// (NAME--01, ...) instead when a name would be long or two would read the same.
std::vector<Panel> split_panels(const std::string& name, const std::vector<Axis>& axes, const std::vector<Dim>& dims,
                                DimMask split, const std::vector<const Point*>& points,
                                const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<Panel> list;
  std::set<std::string> names;
  bool clean = true;
  for (const auto& members : groups) {
    Panel panel;
    panel.name = name;
    std::vector<std::string> fixed;
    const Point& first = *points[members.front()];
    for (const auto d : mask_dims(split)) {
      panel.name += name_part(axes[dims[d].axes.front()], first.values[dims[d].axes.front()]);
      for (const auto a : dims[d].axes) fixed.push_back(axis_label(axes[a], first.values[a]));
    }
    panel.fixed = join(fixed, " ");
    for (const auto m : members) panel.points.push_back(points[m]);
    if (panel.name.size() > 200 || !names.insert(panel.name).second) clean = false;
    list.push_back(std::move(panel));
  }
  if (!clean) {
    const std::size_t width = std::to_string(list.size()).size();
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string n = std::to_string(i + 1);
      list[i].name = name + "--" + std::string(width - n.size(), '0') + n;
    }
  }
  return list;
}

}  // namespace

Panels make_panels(const View& view, std::vector<std::string>& messages, const std::string& name,
                   const std::vector<const Point*>& points, const std::set<std::size_t>& line_dims, bool bars,
                   std::size_t limit) {
  const auto axes = axes_among(view, points);
  auto dims = varying_dims(axes);
  const auto ids = value_ids(axes, points);
  const auto all = positions(points.size());
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
    messages.push_back("skipped " + name + ": " + std::to_string(whole) + " " + what + " would need " +
                       std::to_string(best_count) + " charts of at most " + std::to_string(limit) + " (one per " + by +
                       "), more than " + std::to_string(kPlotMaxCharts) +
                       "; plot a slice with --where PATH=VALUE (or sweep fewer points)");
    return out;
  }
  out.list = split_panels(name, axes, dims, *best, points, group_by(ids, all, dims, *best));
  out.note = "One of " + std::to_string(out.list.size()) + " charts " + name + "--*, one per " + by + ", each with at most " +
             std::to_string(limit) + " " + what + ".";
  messages.push_back(name + ": " + std::to_string(whole) + " " + what + ", more than " + std::to_string(limit) +
                     " in one chart: split into " + std::to_string(out.list.size()) + " charts, one per " + by + " (" +
                     name + "--*)");
  return out;
}

std::string limit_colours(const std::vector<Axis>& axes, const std::vector<const Point*>& points,
                          std::set<std::size_t>& excluded) {
  auto dims = varying_dims(axes);
  if (dims.size() > kMaxMaskDims) dims.resize(kMaxMaskDims);
  const auto ids = value_ids(axes, points);
  const auto all = positions(points.size());
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
  std::string colours = best == 0 ? "One colour for all points" : "Colours by " + dims_text(axes, dims, best);
  colours += " (at most " + std::to_string(kPlotMaxSeries) + "); a colour's dots differ in " +
             dims_text(axes, dims, dropped) + " too: plot a slice with --where PATH=VALUE to tell them apart.";
  return colours;
}

}  // namespace ess::plot
