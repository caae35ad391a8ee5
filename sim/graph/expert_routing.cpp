#include "sim/graph/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"

namespace ess {

double normal_draw(Rng& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]: the logarithm stays finite
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

// Log-normal weights with sigma `sigma` times `base` (or 1), scaled to mean 1.
std::vector<double> lognormal_weights(std::size_t n, double sigma, Rng& rng, const std::vector<double>* base) {
  std::vector<double> w(n, 1.0);
  double sum = 0.0;
  for (std::size_t e = 0; e < n; ++e) {
    w[e] = (base != nullptr ? (*base)[e] : 1.0) * (sigma > 0 ? std::exp(sigma * normal_draw(rng)) : 1.0);
    sum += w[e];
  }
  for (double& x : w) x *= static_cast<double>(n) / sum;
  return w;
}

}  // namespace

ExpertRouting::ExpertRouting(std::int64_t routed, std::int64_t slots, int ranks, int layers, RoutingParams params,
                             Rng rng)
    : routed_(routed), slots_(slots), ranks_(ranks), params_(params) {
  if (routed < 1 || ranks < 1 || layers < 1 || slots < routed || slots % ranks != 0) {
    throw InternalError("ExpertRouting: need routed >= 1, ranks >= 1, layers >= 1 and slots >= routed, a "
                        "multiple of ranks; got routed " + std::to_string(routed) + ", slots " +
                        std::to_string(slots) + ", ranks " + std::to_string(ranks));
  }
  if (slots > routed && !params.eplb) {
    throw InternalError("ExpertRouting: redundant slots need EPLB to decide what they hold");
  }
  if (!(params.skew >= 0) || !(params.drift >= 0)) throw InternalError("ExpertRouting: negative sigma");
  const auto n = static_cast<std::size_t>(routed);
  const std::int64_t per_rank = slots / ranks;
  popularity_.reserve(static_cast<std::size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    Rng layer_rng = rng.fork(static_cast<std::uint64_t>(l));
    popularity_.push_back(lognormal_weights(n, params.skew, layer_rng, nullptr));
    const std::vector<double>& w = popularity_.back();

    std::vector<std::int64_t> copies(n, 1);
    std::vector<std::int64_t> slot_list(static_cast<std::size_t>(slots));
    std::vector<std::int64_t> first(n + 1, 0);
    if (!params.eplb) {
      for (std::size_t e = 0; e < n; ++e) slot_list[e] = static_cast<std::int64_t>(e);
    } else {
      // Replication: each redundant slot to the expert with the highest load per copy.
      for (std::int64_t r = routed; r < slots; ++r) {
        std::size_t best = 0;
        for (std::size_t e = 1; e < n; ++e) {
          if (w[e] / static_cast<double>(copies[e]) > w[best] / static_cast<double>(copies[best])) best = e;
        }
        ++copies[best];
      }
      // Packing: copies heaviest first, each onto the least loaded rank with a free slot.
      struct Copy {
        double load;
        std::size_t expert;
      };
      std::vector<Copy> items;
      items.reserve(static_cast<std::size_t>(slots));
      for (std::size_t e = 0; e < n; ++e) {
        for (std::int64_t c = 0; c < copies[e]; ++c) items.push_back({w[e] / static_cast<double>(copies[e]), e});
      }
      std::stable_sort(items.begin(), items.end(), [](const Copy& a, const Copy& b) { return a.load > b.load; });
      std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
      std::vector<std::int64_t> used(static_cast<std::size_t>(ranks), 0);
      std::vector<std::vector<std::int64_t>> of_expert(n);
      for (const Copy& c : items) {
        std::size_t rank = static_cast<std::size_t>(ranks);
        for (std::size_t k = 0; k < load.size(); ++k) {
          if (used[k] < per_rank && (rank == load.size() || load[k] < load[rank])) rank = k;
        }
        of_expert[c.expert].push_back(static_cast<std::int64_t>(rank) * per_rank + used[rank]);
        ++used[rank];
        load[rank] += c.load;
      }
      std::size_t at = 0;
      for (std::size_t e = 0; e < n; ++e) {
        for (const std::int64_t s : of_expert[e]) slot_list[at++] = s;
      }
    }
    for (std::size_t e = 0; e < n; ++e) first[e + 1] = first[e] + copies[e];
    first_slot_.push_back(std::move(first));
    replica_slots_.push_back(std::move(slot_list));
  }
}

ExpertRouting::Pass ExpertRouting::pass(int layer, Rng& rng) const {
  Pass p;
  p.routing_ = this;
  p.layer_ = layer % static_cast<int>(popularity_.size());
  p.uniform_ = params_.skew == 0 && params_.drift == 0;
  if (p.uniform_) return p;
  const auto n = static_cast<std::size_t>(routed_);
  const std::vector<double> w = lognormal_weights(n, params_.drift, rng, &popularity_[static_cast<std::size_t>(p.layer_)]);
  // Vose's alias method: O(1) draws from the pass's popularity.
  std::vector<double> prob(n, 0.0);
  std::vector<std::uint32_t> alias(n, 0);
  std::vector<std::uint32_t> small;
  std::vector<std::uint32_t> large;
  std::vector<double> scaled(w);  // mean 1 already: scaled[e] = n x probability
  for (std::uint32_t e = 0; e < n; ++e) (scaled[e] < 1.0 ? small : large).push_back(e);
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back();
    small.pop_back();
    const std::uint32_t l = large.back();
    prob[s] = scaled[s];
    alias[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (const std::uint32_t e : large) prob[e] = 1.0;
  for (const std::uint32_t e : small) prob[e] = 1.0;  // rounding leftovers
  p.columns_.resize(n);
  for (std::size_t e = 0; e < n; ++e) {
    p.columns_[e] = {static_cast<std::uint64_t>(std::ceil(std::ldexp(prob[e], 53))), alias[e]};
  }
  return p;
}

std::int64_t ExpertRouting::Pass::draw_expert(Rng& rng) const {
  const auto n = static_cast<std::uint64_t>(routing_->routed_);
  const auto e = rng.below(n);
  if (uniform_) return static_cast<std::int64_t>(e);
  const Column& c = columns_[e];
  // Branch-free: which way a draw goes is a coin toss the branch predictor cannot learn.
  const auto keep = static_cast<std::uint64_t>((rng.next() >> 11) < c.keep);
  return static_cast<std::int64_t>((e & (0 - keep)) | (c.alias & (keep - 1)));
}

void ExpertRouting::Pass::route(Rng& rng, std::span<std::int64_t> picked) const {
  const auto& first = routing_->first_slot_[static_cast<std::size_t>(layer_)];
  const auto& slots = routing_->replica_slots_[static_cast<std::size_t>(layer_)];
  // The experts drawn so far sit in picked as experts first; they become slots at the end.
  for (std::size_t k = 0; k < picked.size(); ++k) {
    std::int64_t e = 0;
    bool again = false;
    do {
      e = draw_expert(rng);
      again = false;
      for (std::size_t j = 0; j < k; ++j) again |= picked[j] == e;
    } while (again);
    picked[k] = e;
  }
  if (!routing_->params_.eplb) return;  // routed expert e sits in slot e
  for (std::int64_t& e : picked) {
    const auto at = static_cast<std::size_t>(e);
    const std::int64_t copies = first[at + 1] - first[at];
    const std::int64_t replica = copies == 1 ? 0 : static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(copies)));
    e = slots[static_cast<std::size_t>(first[at] + replica)];
  }
}

}  // namespace ess

namespace ess {

namespace {

struct Moments {
  double mean, std, imbalance;
};

Moments moments(const std::vector<double>& v) {
  double sum = 0.0;
  double max = 0.0;
  for (const double x : v) {
    sum += x;
    max = std::max(max, x);
  }
  const double n = static_cast<double>(v.size());
  const double mean = sum / n;
  double sq = 0.0;
  for (const double x : v) sq += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(sq / (n - 1.0)) : 0.0, mean > 0 ? (max - mean) / mean : 0.0};
}

}  // namespace

ExpertLoadStats expert_load_stats(const ExpertLoadLayout& layout, RoutingParams params, int layers, int passes,
                                  std::uint64_t seed) {
  if (layout.top_k < 1 || layout.top_k > layout.routed || layout.tokens < 1 || passes < 1) {
    throw InternalError("expert_load_stats: need 1 <= top_k <= routed experts, tokens >= 1 and passes >= 1");
  }
  const Rng root(seed);
  const ExpertRouting routing(layout.routed, layout.slots, layout.ranks, layers, params, root.fork(1));
  Rng rng = root.fork(2);
  std::vector<std::int64_t> picked(static_cast<std::size_t>(layout.top_k));
  std::vector<double> slot(static_cast<std::size_t>(layout.slots));
  std::vector<double> rank(static_cast<std::size_t>(layout.ranks));
  const std::int64_t per_rank = routing.slots_per_rank();
  ExpertLoadStats s;
  for (int l = 0; l < layers; ++l) {
    for (int p = 0; p < passes; ++p) {
      const ExpertRouting::Pass pass = routing.pass(l, rng);
      std::fill(slot.begin(), slot.end(), 0.0);
      for (std::int64_t t = 0; t < layout.tokens; ++t) {
        pass.route(rng, picked);
        for (const std::int64_t e : picked) slot[static_cast<std::size_t>(e)] += 1.0;
      }
      std::fill(rank.begin(), rank.end(), 0.0);
      for (std::size_t e = 0; e < slot.size(); ++e) rank[e / static_cast<std::size_t>(per_rank)] += slot[e];
      const Moments r = moments(rank);
      const Moments e = moments(slot);
      s.rank_mean += r.mean;
      s.rank_std += r.std;
      s.rank_imbalance += r.imbalance;
      s.slot_mean += e.mean;
      s.slot_std += e.std;
      s.slot_imbalance += e.imbalance;
    }
  }
  const double n = static_cast<double>(layers) * passes;
  for (double* x : {&s.rank_mean, &s.rank_std, &s.rank_imbalance, &s.slot_mean, &s.slot_std, &s.slot_imbalance}) *x /= n;
  return s;
}

}  // namespace ess
