#include "kernels/bench/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace ess::bench {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of no samples");
  if (!(q >= 0.0 && q <= 1.0)) {
    throw std::invalid_argument("quantile must be in [0, 1] (got " + std::to_string(q) + ")");
  }
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted[lo];
  const double fraction = h - static_cast<double>(lo);
  return sorted[lo] + fraction * (sorted[lo + 1] - sorted[lo]);
}

Stats compute_stats(std::span<const double> samples_s) {
  if (samples_s.empty()) throw std::invalid_argument("statistics of no samples");
  for (const double s : samples_s) {
    if (!std::isfinite(s) || s < 0.0) {
      throw std::invalid_argument("a timing sample must be finite and >= 0 s (got " +
                                  std::to_string(s) + ")");
    }
  }
  std::vector<double> sorted(samples_s.begin(), samples_s.end());
  std::sort(sorted.begin(), sorted.end());

  Stats st;
  st.repetitions = static_cast<std::int64_t>(sorted.size());
  st.min_s = sorted.front();
  st.max_s = sorted.back();
  st.median_s = quantile_sorted(sorted, 0.5);
  st.p10_s = quantile_sorted(sorted, 0.1);
  st.p90_s = quantile_sorted(sorted, 0.9);

  double sum = 0.0;
  for (const double s : sorted) sum += s;
  const double n = static_cast<double>(sorted.size());
  st.mean_s = sum / n;
  if (sorted.size() > 1) {
    double squares = 0.0;
    for (const double s : sorted) squares += (s - st.mean_s) * (s - st.mean_s);
    st.std_s = std::sqrt(squares / (n - 1.0));
  }
  return st;
}

std::int64_t choose_repetitions(double estimate_s, const RepetitionPolicy& policy) {
  if (policy.min < 1 || policy.max < policy.min || !(policy.target_s > 0.0)) {
    throw std::invalid_argument("repetition policy needs 1 <= min <= max and target > 0 s");
  }
  if (estimate_s < 0.0) {
    throw std::invalid_argument("a time estimate must be >= 0 s (got " +
                                std::to_string(estimate_s) + ")");
  }
  if (!(estimate_s > 0.0) || !std::isfinite(estimate_s)) return policy.max;
  const double wanted = std::ceil(policy.target_s / estimate_s);
  if (wanted >= static_cast<double>(policy.max)) return policy.max;
  return std::max(policy.min, static_cast<std::int64_t>(wanted));
}

std::int64_t round_up(std::int64_t value, std::int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

RotationPlan rotation_plan(std::int64_t footprint_bytes, std::int64_t l2_bytes,
                           std::int64_t alignment) {
  if (footprint_bytes < 1) {
    throw std::invalid_argument("rotation_plan: footprint must be >= 1 B (got " +
                                std::to_string(footprint_bytes) + ")");
  }
  if (l2_bytes < 0) {
    throw std::invalid_argument("rotation_plan: L2 size must be >= 0 B (got " +
                                std::to_string(l2_bytes) + ")");
  }
  if (alignment < 1 || (alignment & (alignment - 1)) != 0) {
    throw std::invalid_argument("rotation_plan: alignment must be a power of two (got " +
                                std::to_string(alignment) + ")");
  }
  RotationPlan plan;
  plan.slot_bytes = round_up(footprint_bytes, alignment);
  // floor(2 L2 / slot) + 1 slots are the fewest whose total strictly exceeds 2 L2.
  plan.copies = l2_bytes == 0 ? 1 : 2 * l2_bytes / plan.slot_bytes + 1;
  return plan;
}

std::int64_t rotation_region(std::span<const std::int64_t> footprints, std::int64_t l2_bytes) {
  std::int64_t region = 0;
  for (const std::int64_t f : footprints) {
    region = std::max(region, rotation_plan(f, l2_bytes).total_bytes());
  }
  return region;
}

}  // namespace ess::bench
