#include "sim/sweep/pareto.h"

#include <algorithm>
#include <cmath>

namespace ess {

bool pareto_dominates(const ParetoPoint& a, const ParetoPoint& b) {
  return a.latency <= b.latency && a.throughput >= b.throughput &&
         (a.latency < b.latency || a.throughput > b.throughput);
}

std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points) {
  std::erase_if(points, [](const ParetoPoint& p) { return std::isnan(p.latency) || std::isnan(p.throughput); });
  // Lowest latency first; at equal latency the highest throughput first, so that it is the one
  // met first; the index makes the order total, hence the result independent of the input order.
  std::sort(points.begin(), points.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.latency != b.latency) return a.latency < b.latency;
    if (a.throughput != b.throughput) return a.throughput > b.throughput;
    return a.index < b.index;
  });
  // Every point met so far has a latency no higher than the current one, so the current point is
  // dominated exactly when one of them has a higher throughput, or the same throughput at a lower
  // latency. The best throughput so far belongs to the last point kept.
  std::vector<ParetoPoint> front;
  for (const ParetoPoint& p : points) {
    if (front.empty() || p.throughput > front.back().throughput) {
      front.push_back(p);
    } else if (p.throughput == front.back().throughput && p.latency == front.back().latency) {
      front.push_back(p);  // an exact tie of the last point kept: neither dominates
    }
  }
  return front;
}

}  // namespace ess
