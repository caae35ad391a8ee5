// A counter-based random generator shared by the host code and the CUDA fill kernels: value i of
// stream `seed` is a pure function of (seed, i), so a device fill needs no generator state and
// the same (seed, i) gives the same number on every machine. std::*_distribution is not portable
// across standard libraries (CONVENTIONS.md), so the mapping to floats is our own too.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ESS_HOST_DEVICE __host__ __device__
#else
#define ESS_HOST_DEVICE
#endif

namespace ess::bench {

// SplitMix64's increment, floor(2^64 / golden ratio) (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014).
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's output for state `x` (state advanced by kGoldenGamma first): the published
// sequence from state 0 is 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F.
ESS_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + kGoldenGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The i-th 64-bit value of stream `seed`: the SplitMix64 output at state seed' + i x gamma, where
// seed' = splitmix64(seed) so that nearby seeds give unrelated streams.
ESS_HOST_DEVICE constexpr std::uint64_t hash_random(std::uint64_t seed, std::uint64_t i) {
  return splitmix64(splitmix64(seed) + i * kGoldenGamma);
}

// A uniform double in [0, 1) from the top 53 bits (every value a multiple of 2^-53).
ESS_HOST_DEVICE constexpr double unit_double(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// The benchmark data value for element i of stream `seed`: magnitude uniform in [0.25, 1) and a
// random sign, so never zero (zeros would let the GPU save power in the multipliers and flatter
// the GEMM times) and exactly representable range-wise in bf16, fp16 and fp8 e4m3 (max 448), so
// no conversion overflows and no product of K of them overflows an fp32 accumulator.
ESS_HOST_DEVICE constexpr float bench_value(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t bits = hash_random(seed, i);
  const double magnitude = 0.25 + 0.75 * unit_double(bits);
  return static_cast<float>((bits & 1U) != 0 ? -magnitude : magnitude);
}

// A sequential generator over the same function, for host-side choices (row indices).
class HashStream {
 public:
  explicit constexpr HashStream(std::uint64_t seed) : seed_(seed) {}
  constexpr std::uint64_t next() { return hash_random(seed_, counter_++); }
  constexpr double next_unit() { return unit_double(next()); }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
};

}  // namespace ess::bench
