#include "models/elementwise.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::DType;
using ess::KernelCost;
using ess::test::near;

// hardware.kernels.memory_bound of the test GPU: HBM 5e11 B/s effective, memory ramp 1e5 B, 1 us.

TEST_CASE("elementwise: bytes are elements times tensors times element size", "[elementwise]") {
  // A residual add: two inputs, one output.
  const KernelCost c =
      ess::elementwise({.elements = 1'000'000, .inputs = 2, .outputs = 1, .dtype = DType::bf16},
                       ess::test::test_hardware());
  // bytes = 1e6 * 3 * 2 = 6e6 B; memory = (6e6 + 1e5) / 5e11 = 12.2 us; time = 13.2 us
  CHECK(c.bytes.value() == near(6e6));
  CHECK(c.memory.value() == near(1.22e-5));
  CHECK(c.time.value() == near(1.32e-5));
  CHECK(c.flops.value() == 0.0);
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("elementwise: a fill reads nothing and writes one tensor", "[elementwise]") {
  const KernelCost c =
      ess::elementwise({.elements = 1000, .inputs = 0, .outputs = 1, .dtype = DType::fp32},
                       ess::test::test_hardware());
  // bytes = 1000 * 1 * 4 = 4000 B; memory = (4000 + 1e5) / 5e11 = 0.208 us; time = 1.208 us
  CHECK(c.bytes.value() == near(4000.0));
  CHECK(c.time.value() == near(1.208e-6));
}

TEST_CASE("elementwise rejects invalid shapes", "[elementwise][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(
      ess::elementwise({.elements = 0, .inputs = 1, .outputs = 1, .dtype = DType::bf16}, hw),
      ess::InputError, Catch::Message("elementwise: elements must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(
      ess::elementwise({.elements = 1, .inputs = -1, .outputs = 1, .dtype = DType::bf16}, hw),
      ess::InputError, Catch::Message("elementwise: inputs must be >= 0 (got -1)"));
  CHECK_THROWS_MATCHES(
      ess::elementwise({.elements = 1, .inputs = 1, .outputs = 0, .dtype = DType::bf16}, hw),
      ess::InputError, Catch::Message("elementwise: outputs must be >= 1 (got 0)"));
}

TEST_CASE("elementwise rejects invalid hardware.kernels.memory_bound", "[elementwise][errors]") {
  ess::Hardware hw = ess::test::test_hardware();
  hw.kernels.memory_bound.memory_ramp = ess::Bytes(-5.0);
  CHECK_THROWS_MATCHES(
      ess::elementwise({.elements = 1, .inputs = 1, .outputs = 1, .dtype = DType::bf16}, hw),
      ess::InputError,
      Catch::Message("hardware.kernels.memory_bound.memory_ramp must be >= 0 B (got -5 B)"));
}

TEST_CASE("elementwise: time never decreases with elements", "[elementwise][property]") {
  const ess::Hardware hw = ess::test::test_hardware();
  double previous = 0.0;
  for (std::int64_t n = 1; n <= 1'000'000'000; n += 1 + n / 2) {
    const double t =
        ess::elementwise({.elements = n, .inputs = 1, .outputs = 1, .dtype = DType::bf16}, hw)
            .time.value();
    CHECK(t >= previous);
    previous = t;
  }
}
