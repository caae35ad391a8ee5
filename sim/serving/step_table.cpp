#include "sim/serving/step_table.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/base/error.h"

namespace ess {

namespace {

// Index i and weight w with value = (1 - w) axis[i] + w axis[i + 1], clamped to the axis.
std::pair<std::size_t, double> locate(const std::vector<std::int64_t>& axis, double x) {
  if (axis.size() == 1 || x <= static_cast<double>(axis.front())) return {0, 0.0};
  if (x >= static_cast<double>(axis.back())) return {axis.size() - 2, 1.0};
  const auto it = std::upper_bound(axis.begin(), axis.end(), x, [](double v, std::int64_t a) { return v < static_cast<double>(a); });
  const auto i = static_cast<std::size_t>(it - axis.begin()) - 1;
  const double lo = static_cast<double>(axis[i]);
  const double hi = static_cast<double>(axis[i + 1]);
  return {i, (x - lo) / (hi - lo)};
}

void check_axis(const std::vector<std::int64_t>& axis, const char* name) {
  if (axis.empty()) throw InternalError(std::string("StepTable: no ") + name);
  for (std::size_t i = 1; i < axis.size(); ++i) {
    if (axis[i] <= axis[i - 1]) throw InternalError(std::string("StepTable: ") + name + " must increase");
  }
}

}  // namespace

StepTable::StepTable(std::vector<std::int64_t> batches, std::vector<std::int64_t> contexts, std::vector<StepPoint> points)
    : batches_(std::move(batches)), contexts_(std::move(contexts)), points_(std::move(points)) {
  check_axis(batches_, "batches");
  check_axis(contexts_, "contexts");
  if (points_.size() != batches_.size() * contexts_.size()) throw InternalError("StepTable: points do not match the grid");
}

StepPoint StepTable::at(double batch, double context) const {
  const auto [i, wb] = locate(batches_, batch);
  const auto [j, wc] = locate(contexts_, context);
  const std::size_t nc = contexts_.size();
  const auto p = [&](std::size_t a, std::size_t b) {
    return points_[std::min(a, batches_.size() - 1) * nc + std::min(b, nc - 1)];
  };
  const auto mix = [&](double StepPoint::*f) {
    const double low = (1 - wc) * (p(i, j).*f) + wc * (p(i, j + 1).*f);
    const double high = (1 - wc) * (p(i + 1, j).*f) + wc * (p(i + 1, j + 1).*f);
    return (1 - wb) * low + wb * high;
  };
  return {mix(&StepPoint::time), mix(&StepPoint::utilization), mix(&StepPoint::sigma)};
}

StepPoint StepTable::at_quadratic(double batch, double context) const {
  if (batches_.size() < 3 || batch <= static_cast<double>(batches_.front()) || batch >= static_cast<double>(batches_.back())) {
    return at(batch, context);
  }
  const std::size_t i = locate(batches_, batch).first;  // the cell; the parabolas weigh its rows
  const auto [j, wc] = locate(contexts_, context);
  const std::size_t nc = contexts_.size();
  // Three batch rows f .. f + 2 spaced as a geometric grid (each ratio within 10% of the other).
  // Elsewhere (a grid's last point after a short step, the two sides of the largest captured CUDA
  // graph, where the time jumps) a parabola would bend through what is not smooth.
  const auto regular = [&](std::size_t f) {
    if (f + 2 >= batches_.size()) return false;
    const double r0 = static_cast<double>(batches_[f + 1]) / static_cast<double>(batches_[f]);
    const double r1 = static_cast<double>(batches_[f + 2]) / static_cast<double>(batches_[f + 1]);
    return r0 > 1.0 && r1 > 1.0 && std::abs(std::log(r1 / r0)) < std::log(1.1);
  };
  const auto row = [&](std::size_t r, double StepPoint::*f) {
    const StepPoint& a = points_[r * nc + j];
    const StepPoint& b = points_[r * nc + std::min(j + 1, nc - 1)];
    return (1 - wc) * (a.*f) + wc * (b.*f);
  };
  // The parabola through rows f .. f + 2 at `batch` (Lagrange's form).
  const auto parabola = [&](std::size_t f, double StepPoint::*field) {
    const double x[3] = {static_cast<double>(batches_[f]), static_cast<double>(batches_[f + 1]),
                         static_cast<double>(batches_[f + 2])};
    double v = 0.0;
    for (std::size_t k = 0; k < 3; ++k) {
      double w = 1.0;
      for (std::size_t m = 0; m < 3; ++m) {
        if (m != k) w *= (batch - x[m]) / (x[k] - x[m]);
      }
      v += w * row(f + k, field);
    }
    return v;
  };
  // The cell's parabolas through the row below it and through the row above it, averaged where
  // both exist (a cubic-like blend: the one bends too far where the other bends too little).
  const bool below = i > 0 && regular(i - 1);
  const bool above = regular(i);
  if (!below && !above) return at(batch, context);
  const auto mix = [&](double StepPoint::*f) {
    if (below && above) return 0.5 * (parabola(i - 1, f) + parabola(i, f));
    return parabola(below ? i - 1 : i, f);
  };
  return {mix(&StepPoint::time), mix(&StepPoint::utilization), mix(&StepPoint::sigma)};
}

StepPoint StepModel::at(double batch, double context, double offloaded_share) const {
  if (!offload) return gpu.at_quadratic(batch, context);
  const StepPoint o = offload->at_quadratic(batch, context);
  if (offloaded_share >= 1.0) return o;
  if (gpu.empty()) throw InternalError("StepModel: GPU-only requests in a batch, but no GPU-only table was built");
  const StepPoint g = gpu.at_quadratic(batch, context);
  const double f = std::max(0.0, offloaded_share);
  return {g.time + f * (o.time - g.time), g.utilization + f * (o.utilization - g.utilization), g.sigma + f * (o.sigma - g.sigma)};
}

StepPoint StepModel::at_graph(double batch, double graph, double context, double offloaded_share,
                              double host_per_request) const {
  StepPoint p = at(graph, context, offloaded_share);
  const double padding = std::max(0.0, graph - batch) * host_per_request;
  if (padding > 0.0 && padding < p.time) {
    p.utilization *= p.time / (p.time - padding);  // the same busy compute over a shorter step
    p.time -= padding;
  }
  return p;
}

ChunkCost ChunkModel::added(double batch, double tokens, double cached) const {
  if (slices.empty()) throw InternalError("ChunkModel: no slices");
  if (tokens <= 0.0) return {};
  const auto added_at = [&](const ChunkSlice& sl, double t, double c) {
    const auto& cs = sl.table.contexts();
    double time = 0.0;
    double busy = 0.0;
    if (c < static_cast<double>(cs.front()) && cs.size() > 1) {
      // Fewer key pairs than one causal chunk (several prompts): linear in the pairs along the
      // cached axis, from its first two points.
      const StepPoint a = sl.table.at_quadratic(t, static_cast<double>(cs[0]));
      const StepPoint b = sl.table.at_quadratic(t, static_cast<double>(cs[1]));
      const double w = (c - static_cast<double>(cs[0])) / static_cast<double>(cs[1] - cs[0]);
      time = a.time + w * (b.time - a.time);
      busy = a.utilization * a.time + w * (b.utilization * b.time - a.utilization * a.time);
    } else {
      const StepPoint m = sl.table.at_quadratic(t, c);
      time = m.time;
      busy = m.utilization * m.time;
    }
    return ChunkCost{std::max(0.0, time - sl.reference.time),
                     std::max(0.0, busy - sl.reference.utilization * sl.reference.time)};
  };
  const ChunkSlice& first = slices.front();
  const double smallest = static_cast<double>(first.table.batches().front());
  const double share = std::min(1.0, tokens / smallest);  // below the grid: in proportion
  const double t = std::max(tokens, smallest);
  ChunkCost out = added_at(first, t, cached);
  // The change with the batch, at the slices' common cached point.
  std::size_t k = 0;
  while (k + 1 < slices.size() && batch > static_cast<double>(slices[k + 1].batch)) ++k;
  if (k + 1 < slices.size() && batch > static_cast<double>(first.batch)) {
    const double mid = static_cast<double>(slices[k + 1].table.contexts().front());
    const ChunkCost base = added_at(first, t, mid);
    const ChunkCost a = added_at(slices[k], t, mid);
    const ChunkCost b = added_at(slices[k + 1], t, mid);
    const double w = std::clamp((batch - static_cast<double>(slices[k].batch)) /
                                    static_cast<double>(slices[k + 1].batch - slices[k].batch),
                                0.0, 1.0);
    out.time += a.time + w * (b.time - a.time) - base.time;
    out.busy += a.busy + w * (b.busy - a.busy) - base.busy;
  } else if (slices.size() > 1 && batch > static_cast<double>(first.batch)) {
    // At or above the last slice's batch: its change.
    const ChunkSlice& last = slices.back();
    const double mid = static_cast<double>(last.table.contexts().front());
    const ChunkCost base = added_at(first, t, mid);
    const ChunkCost b = added_at(last, t, mid);
    out.time += b.time - base.time;
    out.busy += b.busy - base.busy;
  }
  return {share * out.time, share * out.busy};
}

}  // namespace ess
