// The counter-based generator behind the random benchmark data and the gathered row indices
// (kernels/bench/hash_rng.h).
#include "kernels/bench/hash_rng.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

#include "kernels/bench/norm_reference.h"

using ess::bench::kGoldenGamma;

TEST_CASE("hash rng: SplitMix64 reproduces its published sequence", "[kernels][rng]") {
  // The reference implementation (Vigna, splitmix64.c) seeded with 0 yields these three values:
  // the state advances by the golden gamma before each output.
  CHECK(ess::bench::splitmix64(0) == 0xE220A8397B1DCDAFULL);
  CHECK(ess::bench::splitmix64(kGoldenGamma) == 0x6E789E6AA1B965F4ULL);
  CHECK(ess::bench::splitmix64(2 * kGoldenGamma) == 0x06C45D188009454FULL);
}

TEST_CASE("hash rng: the stream is a pure function of seed and index", "[kernels][rng]") {
  ess::bench::HashStream s(42);
  CHECK(s.next() == ess::bench::hash_random(42, 0));
  CHECK(s.next() == ess::bench::hash_random(42, 1));
  // hash_random(seed, i) = splitmix64(splitmix64(seed) + i x gamma)
  CHECK(ess::bench::hash_random(42, 2) == ess::bench::splitmix64(ess::bench::splitmix64(42) + 2 * kGoldenGamma));
  CHECK(ess::bench::hash_random(42, 0) != ess::bench::hash_random(43, 0));
}

TEST_CASE("hash rng: unit doubles run from 0 to below 1 in steps of 2^-53", "[kernels][rng]") {
  CHECK(ess::bench::unit_double(0) == 0.0);
  CHECK(ess::bench::unit_double(std::uint64_t{1} << 11) == std::ldexp(1.0, -53));
  CHECK(ess::bench::unit_double(~std::uint64_t{0}) == 1.0 - std::ldexp(1.0, -53));
}

TEST_CASE("hash rng: benchmark values are never zero and their magnitude is at least 0.25 and below 1", "[kernels][rng]") {
  int negative = 0;
  constexpr int kCount = 100000;
  for (int i = 0; i < kCount; ++i) {
    const float v = ess::bench::bench_value(7, static_cast<std::uint64_t>(i));
    const float magnitude = std::fabs(v);
    REQUIRE(magnitude >= 0.25f);
    REQUIRE(magnitude < 1.0f);
    // bf16 keeps them non-zero too (its smallest normal is about 1e-38)
    REQUIRE(ess::bench::bf16_bits_to_float(ess::bench::float_to_bf16_bits(v)) != 0.0f);
    if (v < 0.0f) ++negative;
  }
  // a fair sign: 50,000 expected, standard deviation sqrt(100000 x 0.25) = 158; allow 10 sigma
  CHECK(negative > 48'400);
  CHECK(negative < 51'600);
}
