#include "sim/serving/link_sharing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "sim/base/error.h"

namespace ess {

namespace {

void check_flows(const std::vector<double>& capacities, const std::vector<LinkFlow>& flows) {
  for (std::size_t l = 0; l < capacities.size(); ++l) {
    if (!(capacities[l] > 0.0)) throw InternalError("share_links: link " + std::to_string(l) + " has no capacity");
  }
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const LinkFlow& flow = flows[f];
    if (!(flow.bytes >= 0.0)) throw InternalError("share_links: flow " + std::to_string(f) + " has negative bytes");
    if (flow.bytes > 0.0 && flow.links.empty()) throw InternalError("share_links: flow " + std::to_string(f) + " crosses no link");
    for (std::size_t k = 0; k < flow.links.size(); ++k) {
      if (flow.links[k] >= capacities.size()) throw InternalError("share_links: flow " + std::to_string(f) + " names a missing link");
      if (std::find(flow.links.begin(), flow.links.begin() + static_cast<std::ptrdiff_t>(k), flow.links[k]) !=
          flow.links.begin() + static_cast<std::ptrdiff_t>(k)) {
        throw InternalError("share_links: flow " + std::to_string(f) + " crosses a link twice");
      }
    }
  }
}

// Max-min fair rates of the flows in flight (progressive filling), into rate[flow].
void fair_rates(const std::vector<double>& capacities, const std::vector<LinkFlow>& flows, const std::vector<std::size_t>& active,
                std::vector<double>& rate) {
  std::vector<double> left = capacities;
  std::vector<std::size_t> sharing(capacities.size(), 0);
  for (const std::size_t f : active) {
    for (const std::size_t l : flows[f].links) ++sharing[l];
  }
  std::vector<bool> fixed(active.size(), false);
  std::size_t unfixed = active.size();
  while (unfixed > 0) {
    std::size_t tightest = capacities.size();
    double share = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < capacities.size(); ++l) {
      if (sharing[l] == 0) continue;
      const double s = std::max(0.0, left[l]) / static_cast<double>(sharing[l]);
      if (s < share) {
        share = s;
        tightest = l;
      }
    }
    if (tightest == capacities.size() || !(share > 0.0)) throw InternalError("share_links: a flow in flight got no rate");
    for (std::size_t a = 0; a < active.size(); ++a) {
      const LinkFlow& flow = flows[active[a]];
      if (fixed[a] || std::find(flow.links.begin(), flow.links.end(), tightest) == flow.links.end()) continue;
      fixed[a] = true;
      --unfixed;
      rate[active[a]] = share;
      for (const std::size_t l : flow.links) {
        left[l] -= share;
        --sharing[l];
      }
    }
  }
}

}  // namespace

std::vector<double> share_links(const std::vector<double>& capacities, const std::vector<LinkFlow>& flows) {
  check_flows(capacities, flows);
  std::vector<std::size_t> order(flows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return flows[a].start < flows[b].start; });

  std::vector<double> finish(flows.size(), -1.0);
  std::vector<double> left(flows.size(), 0.0);
  std::vector<double> rate(flows.size(), 0.0);
  std::vector<std::size_t> active;
  std::size_t next = 0;
  double t = flows.empty() ? 0.0 : flows[order[0]].start;
  while (next < order.size() || !active.empty()) {
    if (active.empty()) t = std::max(t, flows[order[next]].start);
    while (next < order.size() && flows[order[next]].start <= t) {
      const std::size_t f = order[next++];
      if (flows[f].bytes > 0.0) {
        left[f] = flows[f].bytes;
        active.push_back(f);
      } else {
        finish[f] = flows[f].start;
      }
    }
    if (active.empty()) continue;
    fair_rates(capacities, flows, active, rate);
    double done_in = std::numeric_limits<double>::infinity();
    for (const std::size_t f : active) done_in = std::min(done_in, left[f] / rate[f]);
    const bool arrival_first = next < order.size() && flows[order[next]].start - t < done_in;
    const double dt = arrival_first ? flows[order[next]].start - t : done_in;
    t = arrival_first ? flows[order[next]].start : t + done_in;
    std::vector<std::size_t> still;
    still.reserve(active.size());
    for (const std::size_t f : active) {
      // The flow(s) the event was computed for finish exactly; rounding never leaves a tail.
      const bool done = !arrival_first && left[f] / rate[f] <= done_in;
      left[f] -= rate[f] * dt;
      if (done || left[f] <= 1e-12 * flows[f].bytes) {
        finish[f] = t;
      } else {
        still.push_back(f);
      }
    }
    active = std::move(still);
  }
  return finish;
}

}  // namespace ess
