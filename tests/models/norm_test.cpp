#include "models/norm.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::DType;
using ess::KernelCost;
using ess::NormKind;
using ess::test::near;

// hardware.kernels.memory_bound of the test GPU: HBM 5e11 B/s effective, memory ramp 1e5 B, 1 us.

TEST_CASE("norm: RMSNorm reads x and one weight vector and writes y", "[norm]") {
  const KernelCost c =
      ess::norm({.tokens = 64, .hidden = 7168, .dtype = DType::bf16, .kind = NormKind::rms},
                ess::test::test_hardware());
  // bytes = 2*64*7168*2 + 1*7168*2 = 1,835,008 + 14,336 = 1,849,344 B
  // memory = (1,849,344 + 1e5) / 5e11 = 3.898688 us; time = 4.898688 us
  CHECK(c.bytes.value() == near(1849344.0));
  CHECK(c.memory.value() == near(3.898688e-6));
  CHECK(c.time.value() == near(4.898688e-6));
  CHECK(c.flops.value() == 0.0);
  CHECK(c.compute.value() == 0.0);
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("norm: LayerNorm also reads a bias vector", "[norm]") {
  const KernelCost c =
      ess::norm({.tokens = 64, .hidden = 7168, .dtype = DType::bf16, .kind = NormKind::layer},
                ess::test::test_hardware());
  // bytes = 2*64*7168*2 + 2*7168*2 = 1,835,008 + 28,672 = 1,863,680 B
  // memory = (1,863,680 + 1e5) / 5e11 = 3.92736 us; time = 4.92736 us
  CHECK(c.bytes.value() == near(1863680.0));
  CHECK(c.time.value() == near(4.92736e-6));
}

TEST_CASE("norm: fp32 doubles the bytes of bf16", "[norm]") {
  const KernelCost c =
      ess::norm({.tokens = 64, .hidden = 7168, .dtype = DType::fp32, .kind = NormKind::rms},
                ess::test::test_hardware());
  // bytes = 2*64*7168*4 + 7168*4 = 3,670,016 + 28,672 = 3,698,688 B
  CHECK(c.bytes.value() == near(3698688.0));
}

TEST_CASE("NormKind names parse and print", "[norm]") {
  CHECK(ess::parse_norm_kind("rms") == NormKind::rms);
  CHECK(ess::parse_norm_kind("layer") == NormKind::layer);
  CHECK_FALSE(ess::parse_norm_kind("RMS").has_value());
  CHECK_FALSE(ess::parse_norm_kind("rmsnorm").has_value());
  CHECK(ess::to_string(NormKind::rms) == "rms");
  CHECK(ess::to_string(NormKind::layer) == "layer");
  REQUIRE(ess::norm_kind_names().size() == 2);
  CHECK(ess::norm_kind_names()[0] == "rms");
  CHECK(ess::norm_kind_names()[1] == "layer");
}

TEST_CASE("norm rejects non-positive sizes and invalid parameters", "[norm][errors]") {
  ess::Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(
      ess::norm({.tokens = 0, .hidden = 7168, .dtype = DType::bf16, .kind = NormKind::rms}, hw),
      ess::InputError, Catch::Message("norm: tokens must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(
      ess::norm({.tokens = 1, .hidden = -1, .dtype = DType::bf16, .kind = NormKind::rms}, hw),
      ess::InputError, Catch::Message("norm: hidden must be >= 1 (got -1)"));
  hw.kernels.memory_bound.kernel_overhead = ess::Seconds(-1.0);
  CHECK_THROWS_MATCHES(
      ess::norm({.tokens = 1, .hidden = 1, .dtype = DType::bf16, .kind = NormKind::rms}, hw),
      ess::InputError,
      Catch::Message("hardware.kernels.memory_bound.kernel_overhead must be >= 0 s (got -1 s)"));
}

TEST_CASE("norm: time never decreases with tokens or hidden", "[norm][property]") {
  const ess::Hardware hw = ess::test::test_hardware();
  for (const NormKind kind : {NormKind::rms, NormKind::layer}) {
    double previous = 0.0;
    for (std::int64_t tokens = 1; tokens <= 65536; tokens += 1 + tokens / 3) {
      const double t =
          ess::norm({.tokens = tokens, .hidden = 7168, .dtype = DType::bf16, .kind = kind}, hw)
              .time.value();
      CHECK(t >= previous);
      previous = t;
    }
    previous = 0.0;
    for (std::int64_t hidden = 1; hidden <= 65536; hidden += 1 + hidden / 3) {
      const double t =
          ess::norm({.tokens = 64, .hidden = hidden, .dtype = DType::bf16, .kind = kind}, hw)
              .time.value();
      CHECK(t >= previous);
      previous = t;
    }
  }
}
