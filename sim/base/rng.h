// Our own seeded random generator: portable and identical on every platform and standard
// library (std::*_distribution is not), so the same seed gives byte-identical results.
#pragma once

#include <bit>
#include <cstdint>

namespace ess {

// xoshiro256** (Blackman and Vigna, 2018), seeded through SplitMix64 as its authors recommend.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : state_) s = splitmix64(x);
  }

  // A child stream for one component, so that adding draws to one does not shift another.
  [[nodiscard]] Rng fork(std::uint64_t stream) const {
    std::uint64_t x = state_[0] ^ (stream * 0x9E3779B97F4A7C15ULL);
    return Rng(splitmix64(x));
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform integer in [0, n), n >= 1, without modulo bias: draws below 2^64 mod n are rejected
  // so that every residue is equally likely.
  std::uint64_t below(std::uint64_t n) {
    if ((n & (n - 1)) == 0) return n == 1 ? 0 : next() >> (64 - std::countr_zero(n));  // a power of two: exact
    const std::uint64_t threshold = (0 - n) % n;
    while (true) {
      const std::uint64_t x = next();
      if (x >= threshold) return x % n;
    }
  }

  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4]{};
};

}  // namespace ess
