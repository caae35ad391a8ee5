// The Pareto front of a throughput-latency trade-off: the points no other point beats on both
// counts. A pure function, with no knowledge of ledgers or charts: `ess-sim plot` draws the front
// of a sweep (tokens/s per GPU against TPOT) and a ranked table can list it.
#pragma once

#include <cstddef>
#include <vector>

namespace ess {

// One candidate. Units are the caller's (plot passes TPOT in ms and tokens/s per GPU); only the
// order of the values matters.
struct ParetoPoint {
  double latency = 0.0;     // lower is better
  double throughput = 0.0;  // higher is better
  std::size_t index = 0;    // the caller's identifier (a ledger point), carried through unchanged

  friend bool operator==(const ParetoPoint&, const ParetoPoint&) = default;
};

// True when `a` dominates `b`: no worse on both counts (a.latency <= b.latency and a.throughput >=
// b.throughput) and better on at least one. A point never dominates itself or an exact copy.
[[nodiscard]] bool pareto_dominates(const ParetoPoint& a, const ParetoPoint& b);

// The Pareto-optimal points of `points`: those that no other point dominates.
//
// Sorted by latency, lowest first; along the front latency and throughput then both rise strictly,
// except for exact ties: points with the same latency and the same throughput do not dominate one
// another, so all of them are kept, next to each other, in increasing `index` order. A point that
// ties another on one coordinate and loses on the other is dominated and left out. Points with a
// NaN coordinate cannot be ordered and are left out; infinities are ordinary values (a latency of
// +inf is on the front only when nothing has a higher throughput). The result does not depend on
// the order of `points`. O(n log n).
[[nodiscard]] std::vector<ParetoPoint> pareto_front(std::vector<ParetoPoint> points);

}  // namespace ess
