// Summary statistics of repeated timings, and how many repetitions and buffer copies to use.
#pragma once

#include <cstdint>
#include <span>

namespace ess::bench {

// Statistics of one measured point, all in seconds. Percentiles (median, p10, p90) interpolate
// linearly between the two nearest order statistics: with the n samples sorted as x[0..n-1], the
// q-quantile is x[h] at h = (n-1) q, interpolated when h is fractional (NumPy's default "linear"
// method, Hyndman and Fan type 7). So the median of an even count is the mean of the middle two.
// std_s is the sample standard deviation (divisor n-1; 0 for a single sample): the repetitions
// are a sample of the kernel's time distribution, and n-1 makes its variance estimate unbiased.
struct Stats {
  std::int64_t repetitions = 0;
  double median_s = 0.0;
  double mean_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  double p10_s = 0.0;
  double p90_s = 0.0;
  double std_s = 0.0;
};

// Throws std::invalid_argument for an empty span or a sample that is negative, NaN or infinite.
[[nodiscard]] Stats compute_stats(std::span<const double> samples_s);

// The q-quantile (0 <= q <= 1) of already-sorted samples, as described above. Throws
// std::invalid_argument for an empty span or q outside [0, 1].
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double q);

// How many timed repetitions a sample gets: enough that they add up to about target_s of GPU time,
// within [min, max]. target 25 ms sits in the 20-50 ms the issue asks for; at least 10 so that a
// median and p10/p90 mean something; at most 1000 so a 2 us kernel costs 2 ms, not 25 ms of
// host-side launching.
struct RepetitionPolicy {
  double target_s = 0.025;
  std::int64_t min = 10;
  std::int64_t max = 1000;
};

// ceil(target_s / estimate_s) clamped to [min, max]; max when the estimate is 0 or not finite
// (an event pair cannot resolve the operation, so take as many as allowed). Throws
// std::invalid_argument for a negative estimate or an inconsistent policy (min < 1, max < min,
// target <= 0).
[[nodiscard]] std::int64_t choose_repetitions(double estimate_s, const RepetitionPolicy& policy);

// Rotating buffers so that each repetition touches memory the previous ones have evicted from L2:
// `copies` slots of `slot_bytes` (the footprint rounded up to `alignment`), with
// copies x slot_bytes strictly greater than 2 x l2_bytes (1 copy when one footprint already
// exceeds that, or when l2_bytes is 0). Throws std::invalid_argument for footprint_bytes < 1,
// l2_bytes < 0 or an alignment that is not a power of two.
struct RotationPlan {
  std::int64_t slot_bytes = 0;
  std::int64_t copies = 1;

  [[nodiscard]] std::int64_t total_bytes() const { return slot_bytes * copies; }
};

// 256 B: cudaMalloc's alignment, and enough for 16-byte vector loads and cuBLASLt's alignment.
inline constexpr std::int64_t kDefaultAlignment = 256;

[[nodiscard]] RotationPlan rotation_plan(std::int64_t footprint_bytes, std::int64_t l2_bytes,
                                         std::int64_t alignment = kDefaultAlignment);

// The memory that rotation plans for all of `footprints` fit in: the largest total_bytes(), so one
// buffer serves every size of a sweep. (Not the plan of the largest footprint: a smaller one can
// need more. With 2 x L2 = 1000 B, a 1001 B footprint needs one 1024 B slot, but a 600 B one two
// 768 B slots, 1536 B.) 0 for no footprints.
[[nodiscard]] std::int64_t rotation_region(std::span<const std::int64_t> footprints,
                                           std::int64_t l2_bytes);

// `value` rounded up to a multiple of `alignment` (a power of two, value >= 0).
[[nodiscard]] std::int64_t round_up(std::int64_t value, std::int64_t alignment);

}  // namespace ess::bench
