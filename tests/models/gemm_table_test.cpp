// MeasuredGemmTable (models/gemm_table.h) and its use by gemm() (models/gemm.cpp): log-log
// interpolation in m inside the measured range, the roofline's shape anchored at the nearest
// measured m outside it, the roofline for shapes the table does not cover.
#include "models/gemm_table.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>

#include "models/gemm.h"
#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::DType;
using ess::GemmShape;
using ess::GemmTable;
using ess::KernelCost;
using ess::test::near;
using Catch::Matchers::Contains;

// Roofline of the test GPU (tests/models/test_hardware.h) for fp16 n = k = 4096, as the
// out-of-range anchoring needs it: peak 100 TFLOP/s x 0.5 = 5e13 FLOP/s, HBM 1 TB/s x 0.5 = 5e11 B/s,
// ramps 1e8 FLOP and 1e6 B, overhead 2 us; flops = 2 m 4096^2, bytes = (4096 m + 4096^2) 2 + 4096 m 2.
//   m = 4:    compute (134,217,728 + 1e8)/5e13 = 4.684 us; bytes 33,619,968 -> memory 34,619,968/5e11
//             = 69.239936 us; time 71.239936 us (memory-bound)
//   m = 16:   bytes 33,816,576 -> memory 69.633152 us > compute 12.737 us; time 71.633152 us
//   m = 256:  compute (8,589,934,592 + 1e8)/5e13 = 173.79869184 us > memory 77.497472 us;
//             time 175.79869184 us
//   m = 4096: compute (137,438,953,472 + 1e8)/5e13 = 2750.77906944 us; time 2752.77906944 us

namespace {

// The test GPU with measurements of the fp16 weight 4096 x 4096 at m = 16, 64, 256:
// 10 us, 40 us, 80 us.
ess::Hardware measured_hardware() {
  ess::Hardware hw = ess::test::test_hardware();
  auto table = std::make_shared<GemmTable>();
  table->add(64, 4096, 4096, DType::fp16, 40e-6);  // out of order on purpose: add() keeps m sorted
  table->add(16, 4096, 4096, DType::fp16, 10e-6);
  table->add(256, 4096, 4096, DType::fp16, 80e-6);
  hw.kernels.gemm_measured = table;
  return hw;
}

KernelCost at(std::int64_t m, const ess::Hardware& hw, std::int64_t n = 4096, std::int64_t k = 4096,
              DType dtype = DType::fp16) {
  return ess::gemm(GemmShape{m, n, k, dtype}, hw);
}

}  // namespace

TEST_CASE("gemm table: a measured m returns the measured time exactly", "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  for (const auto& [m, t] : {std::pair<std::int64_t, double>{16, 10e-6}, {64, 40e-6}, {256, 80e-6}}) {
    INFO("m " << m);
    const KernelCost c = at(m, hw);
    CHECK(c.time.value() == t);
    CHECK(c.measured);
  }
}

TEST_CASE("gemm table: between two measured m, log t is linear in log m", "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  // Between m 16 (10 us) and 64 (40 us): f = log(m/16)/log(4); t = 10 us x 4^f = 10 us x m/16.
  //   m = 32: f = 1/2 -> 10 x 2 = 20 us;  m = 24: 10 x 1.5 = 15 us;  m = 48: 30 us.
  CHECK(at(32, hw).time.value() == near(20e-6));
  CHECK(at(24, hw).time.value() == near(15e-6));
  CHECK(at(48, hw).time.value() == near(30e-6));
  // Between m 64 (40 us) and 256 (80 us): t = 40 us x 2^f with f = log(m/64)/log(4) (t ~ sqrt(m)):
  //   m = 128: f = 1/2 -> 40 sqrt(2) = 56.5685424949 us (a straight line in m would give 53.33 us)
  CHECK(at(128, hw).time.value() == near(40e-6 * std::sqrt(2.0)));
  CHECK(at(128, hw).measured);
}

TEST_CASE("gemm table: outside the measured range, the roofline's shape anchored at the nearest point",
          "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  // Below: m = 4 anchored at m = 16: 10 us x 71.239936 / 71.633152 = 9.94510698063 us
  const KernelCost below = at(4, hw);
  CHECK(below.time.value() == near(10e-6 * 71.239936 / 71.633152));
  CHECK(below.measured);
  // Above: m = 4096 anchored at m = 256: 80 us x 2752.77906944 / 175.79869184 = 1252.69604256 us
  const KernelCost above = at(4096, hw);
  CHECK(above.time.value() == near(80e-6 * 2752.77906944 / 175.79869184));
  CHECK(above.measured);
  // The anchor agrees with gemm() on the same GPU without the table: t(m_edge) x roofline ratio.
  ess::Hardware plain = ess::test::test_hardware();
  CHECK(above.time.value() == near(80e-6 * at(4096, plain).time.value() / at(256, plain).time.value()));
}

TEST_CASE("gemm table: flops, bytes and bound stay the roofline's when the time is measured", "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  const ess::Hardware plain = ess::test::test_hardware();
  for (const std::int64_t m : {4, 32, 64, 4096}) {
    INFO("m " << m);
    const KernelCost t = at(m, hw);
    const KernelCost r = at(m, plain);
    CHECK(t.flops.value() == r.flops.value());
    CHECK(t.bytes.value() == r.bytes.value());
    CHECK(t.compute.value() == r.compute.value());
    CHECK(t.memory.value() == r.memory.value());
    CHECK(t.bound == r.bound);
    CHECK_FALSE(r.measured);
  }
  CHECK(at(4096, hw).bound == Bound::compute);  // 2750.8 us compute vs 203.3 us memory
}

TEST_CASE("gemm table: another weight shape or dtype falls back to the roofline", "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  const ess::Hardware plain = ess::test::test_hardware();
  // Another n, another k, n and k swapped (a 4096 x 4096 weight is its own transpose, so use
  // 4096 x 1024), and the same shape in bf16: none is covered.
  const KernelCost other_n = at(32, hw, 1024, 4096);
  const KernelCost other_k = at(32, hw, 4096, 1024);
  const KernelCost other_dtype = at(32, hw, 4096, 4096, DType::bf16);
  for (const KernelCost* c : {&other_n, &other_k, &other_dtype}) {
    CHECK_FALSE(c->measured);
  }
  CHECK(other_n.time.value() == at(32, plain, 1024, 4096).time.value());
  CHECK(other_k.time.value() == at(32, plain, 4096, 1024).time.value());
  CHECK(other_dtype.time.value() == at(32, plain, 4096, 4096, DType::bf16).time.value());
  // m = 32, n = 1024, k = 4096, fp16 by hand: flops 268,435,456 -> compute 368,435,456/5e13 = 7.36870912 us;
  // bytes (32 x 4096 + 4096 x 1024) 2 + 32 x 1024 x 2 = 8,650,752 + 65,536 = 8,716,288
  // -> memory 9,716,288/5e11 = 19.432576 us; time 21.432576 us
  CHECK(other_n.time.value() == near(21.432576e-6));
  // Without any table (null), gemm() is the roofline.
  CHECK_FALSE(at(32, plain).measured);
}

TEST_CASE("gemm table: grouped GEMMs never use the table", "[gemm_table]") {
  const ess::Hardware hw = measured_hardware();
  const ess::Hardware plain = ess::test::test_hardware();
  const ess::GroupedGemmShape g{.groups = 1, .m_total = 16, .n = 4096, .k = 4096, .dtype = DType::fp16};
  CHECK_FALSE(ess::grouped_gemm(g, hw).measured);
  CHECK(ess::grouped_gemm(g, hw).time.value() == ess::grouped_gemm(g, plain).time.value());
}

TEST_CASE("gemm_table_lookup brackets m with the nearest measured points", "[gemm_table]") {
  GemmTable t;
  t.add(16, 8, 8, DType::bf16, 1e-6);
  t.add(64, 8, 8, DType::bf16, 2e-6);
  t.add(256, 8, 8, DType::bf16, 3e-6);
  CHECK(t.points() == 3);
  CHECK_FALSE(t.empty());
  const auto mid = ess::gemm_table_lookup(t, 100, 8, 8, DType::bf16);
  REQUIRE(mid.has_value());
  CHECK(mid->lower == std::pair<std::int64_t, double>{64, 2e-6});
  CHECK(mid->upper == std::pair<std::int64_t, double>{256, 3e-6});
  const auto exact = ess::gemm_table_lookup(t, 64, 8, 8, DType::bf16);
  REQUIRE(exact.has_value());
  CHECK(exact->lower.first == 64);
  CHECK(exact->upper.first == 64);
  const auto low = ess::gemm_table_lookup(t, 1, 8, 8, DType::bf16);
  REQUIRE(low.has_value());
  CHECK(low->lower.first == 16);
  CHECK(low->upper.first == 16);
  const auto high = ess::gemm_table_lookup(t, 100000, 8, 8, DType::bf16);
  REQUIRE(high.has_value());
  CHECK(high->lower.first == 256);
  CHECK(high->upper.first == 256);
  CHECK_FALSE(ess::gemm_table_lookup(t, 64, 8, 8, DType::fp16).has_value());
  CHECK_FALSE(ess::gemm_table_lookup(t, 64, 8, 9, DType::bf16).has_value());
  CHECK_FALSE(ess::gemm_table_lookup(GemmTable{}, 64, 8, 8, DType::bf16).has_value());
  CHECK(GemmTable{}.empty());
}

TEST_CASE("gemm table: a single measured m scales every other m by the roofline", "[gemm_table]") {
  ess::Hardware hw = ess::test::test_hardware();
  auto table = std::make_shared<GemmTable>();
  table->add(16, 4096, 4096, DType::fp16, 10e-6);
  hw.kernels.gemm_measured = table;
  // m = 4 below and m = 4096 above the one point, both anchored at m = 16.
  CHECK(at(4, hw).time.value() == near(10e-6 * 71.239936 / 71.633152));
  CHECK(at(4096, hw).time.value() == near(10e-6 * 2752.77906944 / 71.633152));
}

TEST_CASE("GemmTable::add rejects a repeated m, non-positive sizes and non-positive times", "[gemm_table][errors]") {
  GemmTable t;
  t.add(16, 4096, 4096, DType::fp16, 10e-6);
  CHECK_THROWS_AS(t.add(16, 4096, 4096, DType::fp16, 11e-6), ess::InputError);
  CHECK_THROWS_WITH(t.add(16, 4096, 4096, DType::fp16, 11e-6), Contains("measured twice"));
  // The same m for another dtype or shape is a different entry.
  CHECK_NOTHROW(t.add(16, 4096, 4096, DType::bf16, 11e-6));
  CHECK_NOTHROW(t.add(16, 4096, 1024, DType::fp16, 11e-6));
  CHECK_THROWS_AS(t.add(0, 4096, 4096, DType::fp16, 1e-6), ess::InputError);
  CHECK_THROWS_AS(t.add(8, 0, 4096, DType::fp16, 1e-6), ess::InputError);
  CHECK_THROWS_AS(t.add(8, 4096, -1, DType::fp16, 1e-6), ess::InputError);
  CHECK_THROWS_AS(t.add(8, 4096, 4096, DType::fp16, 0.0), ess::InputError);
  CHECK_THROWS_AS(t.add(8, 4096, 4096, DType::fp16, -1e-6), ess::InputError);
  CHECK_THROWS_AS(t.add(8, 4096, 4096, DType::fp16, std::numeric_limits<double>::quiet_NaN()), ess::InputError);
  // Rejected additions left the table unchanged: 3 points in 3 shapes, the first still 10 us.
  CHECK(t.points() == 3);
  CHECK(t.shapes.size() == 3);
  CHECK(t.shapes.at(GemmTable::Key{4096, 4096, DType::fp16}).front() == std::pair<std::int64_t, double>{16, 10e-6});
}
