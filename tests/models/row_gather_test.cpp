#include "models/row_gather.h"

#include <catch2/catch.hpp>

#include "sim/base/error.h"
#include "tests/models/test_hardware.h"

using ess::Bound;
using ess::KernelCost;
using ess::test::near;

// hardware.kernels.memory_bound of the test GPU: HBM 5e11 B/s effective, memory ramp 1e5 B, 1 us.

TEST_CASE("row_gather: bytes are the rows read and the rows written, each at its own width", "[row_gather]") {
  // 1000 fp8 rows of 7,168 values and 56 fp32 scales in, 1,200 expert rows of the same out.
  const KernelCost c = ess::row_gather({.rows_in = 1000, .rows_out = 1200, .row_bytes_in = 7392.0, .row_bytes_out = 7392.0},
                                       ess::test::test_hardware());
  // bytes = 2200 * 7392 = 16,262,400 B; memory = (16,262,400 + 1e5) / 5e11 = 32.7248 us; time = 33.7248 us
  CHECK(c.bytes.value() == near(16'262'400.0));
  CHECK(c.time.value() == near(3.37248e-5));
  CHECK(c.flops.value() == 0.0);
  CHECK(c.bound == Bound::memory);
  // The way back: 1,200 bf16 expert rows summed into 1,000 token rows.
  const KernelCost back = ess::row_gather({.rows_in = 1200, .rows_out = 1000, .row_bytes_in = 14336.0, .row_bytes_out = 14336.0},
                                          ess::test::test_hardware());
  CHECK(back.bytes.value() == near(2200.0 * 14336.0));
}

TEST_CASE("row_gather of no rows costs the kernel's fixed time", "[row_gather]") {
  const KernelCost c = ess::row_gather({.rows_in = 0, .rows_out = 0, .row_bytes_in = 1.0, .row_bytes_out = 1.0},
                                       ess::test::test_hardware());
  CHECK(c.bytes.value() == 0.0);
  // Nothing to move: the kernel's overhead alone, 1 us.
  CHECK(c.time.value() == near(1e-6));
}

TEST_CASE("row_gather rejects invalid shapes", "[row_gather][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_AS(ess::row_gather({.rows_in = -1, .rows_out = 1, .row_bytes_in = 1.0, .row_bytes_out = 1.0}, hw), ess::InputError);
  CHECK_THROWS_AS(ess::row_gather({.rows_in = 1, .rows_out = -1, .row_bytes_in = 1.0, .row_bytes_out = 1.0}, hw), ess::InputError);
  CHECK_THROWS_AS(ess::row_gather({.rows_in = 1, .rows_out = 1, .row_bytes_in = 0.0, .row_bytes_out = 1.0}, hw), ess::InputError);
  CHECK_THROWS_AS(ess::row_gather({.rows_in = 1, .rows_out = 1, .row_bytes_in = 1.0, .row_bytes_out = -2.0}, hw), ess::InputError);
}
