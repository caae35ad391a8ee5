#include "models/roofline.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::Bytes;
using ess::BytesPerSecond;
using ess::Flops;
using ess::FlopsPerSecond;
using ess::KernelCost;
using ess::RooflineParams;
using ess::Seconds;
using ess::test::near;

namespace {

// peak 100 TFLOP/s x 0.5 = 5e13 FLOP/s effective; 1 TB/s x 0.5 = 5e11 B/s; 2 us overhead.
const FlopsPerSecond kPeak(100e12);
const BytesPerSecond kBw(1e12);

RooflineParams params() {
  return {.compute_efficiency = 0.5,
          .compute_ramp = Flops(0.0),
          .memory_efficiency = 0.5,
          .memory_ramp = Bytes(0.0),
          .kernel_overhead = Seconds(2e-6)};
}

}  // namespace

TEST_CASE("roofline: a kernel with high arithmetic intensity is compute-bound", "[roofline]") {
  // compute = 1e12 / 5e13 = 0.02 s; memory = 1e9 / 5e11 = 0.002 s; time = 0.02 + 2e-6 s
  const KernelCost c = ess::roofline(Flops(1e12), kPeak, Bytes(1e9), kBw, params());
  CHECK(c.compute.value() == near(0.02));
  CHECK(c.memory.value() == near(0.002));
  CHECK(c.overhead.value() == near(2e-6));
  CHECK(c.time.value() == near(0.020002));
  CHECK(c.flops.value() == near(1e12));
  CHECK(c.bytes.value() == near(1e9));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("roofline: a kernel with low arithmetic intensity is memory-bound", "[roofline]") {
  // compute = 1e9 / 5e13 = 2e-5 s; memory = 1e10 / 5e11 = 0.02 s; time = 0.02 + 2e-6 s
  const KernelCost c = ess::roofline(Flops(1e9), kPeak, Bytes(1e10), kBw, params());
  CHECK(c.compute.value() == near(2e-5));
  CHECK(c.memory.value() == near(0.02));
  CHECK(c.time.value() == near(0.020002));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("roofline: equal roofs report memory-bound", "[roofline]") {
  // compute = 1e9 / 5e13 = 2e-5 s; memory = 1e7 / 5e11 = 2e-5 s: not compute > memory
  const KernelCost c = ess::roofline(Flops(1e9), kPeak, Bytes(1e7), kBw, params());
  CHECK(c.time.value() == near(2.2e-5));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("roofline: an empty kernel costs only its overhead", "[roofline]") {
  const KernelCost c = ess::roofline(Flops(0.0), kPeak, Bytes(0.0), kBw, params());
  CHECK(c.compute.value() == 0.0);
  CHECK(c.memory.value() == 0.0);
  CHECK(c.time.value() == near(2e-6));
  CHECK(c.bound == Bound::overhead);
}

TEST_CASE("roofline: zero work on one roof does not pay that roof's ramp", "[roofline]") {
  RooflineParams p = params();
  p.compute_ramp = Flops(1e9);
  p.memory_ramp = Bytes(1e6);
  // flops only: compute = (1e9 + 1e9) / 5e13 = 4e-5 s; memory = 0 (no bytes, no ramp)
  const KernelCost c = ess::roofline(Flops(1e9), kPeak, Bytes(0.0), kBw, p);
  CHECK(c.compute.value() == near(4e-5));
  CHECK(c.memory.value() == 0.0);
  CHECK(c.time.value() == near(4.2e-5));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("roofline: a kernel the size of the ramp runs at half the efficiency", "[roofline]") {
  RooflineParams p = params();
  p.compute_ramp = Flops(1e9);
  p.memory_ramp = Bytes(1e6);
  p.kernel_overhead = Seconds(0.0);
  // compute = (1e9 + 1e9) / 5e13 = 4e-5 s -> 1e9 / 4e-5 = 2.5e13 FLOP/s = half of 5e13
  const KernelCost at_compute_ramp = ess::roofline(Flops(1e9), kPeak, Bytes(0.0), kBw, p);
  CHECK(at_compute_ramp.compute.value() == near(4e-5));
  CHECK(at_compute_ramp.flops.value() / at_compute_ramp.compute.value() == near(2.5e13));
  // memory = (1e6 + 1e6) / 5e11 = 4e-6 s -> 1e6 / 4e-6 = 2.5e11 B/s = half of 5e11
  const KernelCost at_memory_ramp = ess::roofline(Flops(0.0), kPeak, Bytes(1e6), kBw, p);
  CHECK(at_memory_ramp.memory.value() == near(4e-6));
  CHECK(at_memory_ramp.bytes.value() / at_memory_ramp.memory.value() == near(2.5e11));
  // Far above the ramp the efficiency approaches 0.5: (1e15 + 1e9) / 5e13 = 20.00002 s
  const KernelCost large = ess::roofline(Flops(1e15), kPeak, Bytes(0.0), kBw, p);
  CHECK(large.compute.value() == near(20.00002));
}

TEST_CASE("roofline: the kernel overhead is added to the larger roof", "[roofline]") {
  RooflineParams p = params();
  p.kernel_overhead = Seconds(0.0);
  // memory = 1e10 / 5e11 = 0.02 s
  CHECK(ess::roofline(Flops(1e9), kPeak, Bytes(1e10), kBw, p).time.value() == near(0.02));
  p.kernel_overhead = Seconds(5e-6);
  const KernelCost c = ess::roofline(Flops(1e9), kPeak, Bytes(1e10), kBw, p);
  CHECK(c.time.value() == near(0.020005));
  CHECK(c.overhead.value() == near(5e-6));
}

TEST_CASE("memory_bound_kernel counts bytes only and needs no peak", "[roofline]") {
  // memory = 1e9 / 5e11 = 0.002 s; time = 0.002 + 2e-6 s
  const KernelCost c = ess::memory_bound_kernel(Bytes(1e9), kBw, params());
  CHECK(c.flops.value() == 0.0);
  CHECK(c.compute.value() == 0.0);
  CHECK(c.memory.value() == near(0.002));
  CHECK(c.time.value() == near(0.002002));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("roofline rejects invalid parameters", "[roofline][errors]") {
  const auto fails_with = [](const RooflineParams& p, const std::string& message) {
    CHECK_THROWS_MATCHES(ess::roofline(Flops(1.0), kPeak, Bytes(1.0), kBw, p),
                         ess::InputError, Catch::Message(message));
  };
  RooflineParams p = params();
  p.compute_efficiency = 0.0;
  fails_with(p, "RooflineParams.compute_efficiency must be in (0, 1] (got 0)");
  p.compute_efficiency = 1.5;
  fails_with(p, "RooflineParams.compute_efficiency must be in (0, 1] (got 1.5)");
  p.compute_efficiency = std::numeric_limits<double>::quiet_NaN();
  fails_with(p, "RooflineParams.compute_efficiency must be in (0, 1] (got nan)");

  p = params();
  p.memory_efficiency = -0.1;
  fails_with(p, "RooflineParams.memory_efficiency must be in (0, 1] (got -0.1)");

  p = params();
  p.compute_ramp = Flops(-1.0);
  fails_with(p, "RooflineParams.compute_ramp must be >= 0 FLOP (got -1 FLOP)");

  p = params();
  p.memory_ramp = Bytes(-1.0);
  fails_with(p, "RooflineParams.memory_ramp must be >= 0 B (got -1 B)");

  p = params();
  p.kernel_overhead = Seconds(-1e-6);
  fails_with(p, "RooflineParams.kernel_overhead must be >= 0 s (got -1e-06 s)");
}

TEST_CASE("validate_roofline_params names the parameter set", "[roofline][errors]") {
  RooflineParams p = params();
  CHECK_NOTHROW(ess::validate_roofline_params(p, "hardware.kernels.gemm"));
  p.memory_efficiency = 2.0;
  CHECK_THROWS_MATCHES(
      ess::validate_roofline_params(p, "hardware.kernels.gemm"), ess::InputError,
      Catch::Message("hardware.kernels.gemm.memory_efficiency must be in (0, 1] (got 2)"));
}

TEST_CASE("roofline rejects negative work and missing rates", "[roofline][errors]") {
  CHECK_THROWS_MATCHES(ess::roofline(Flops(-1.0), kPeak, Bytes(1.0), kBw, params()),
                       ess::InternalError,
                       Catch::Message("roofline: flops must be >= 0 (got -1)"));
  CHECK_THROWS_MATCHES(ess::roofline(Flops(1.0), kPeak, Bytes(-1.0), kBw, params()),
                       ess::InternalError,
                       Catch::Message("roofline: bytes must be >= 0 (got -1)"));
  CHECK_THROWS_MATCHES(
      ess::roofline(Flops(1e9), FlopsPerSecond(0.0), Bytes(1.0), kBw, params()),
      ess::InputError,
      Catch::Message(
          "roofline: peak compute must be > 0 FLOP/s for a kernel with 1e+09 FLOP (got 0)"));
  CHECK_THROWS_MATCHES(
      ess::memory_bound_kernel(Bytes(1e6), BytesPerSecond(0.0), params()), ess::InputError,
      Catch::Message("roofline: bandwidth must be > 0 B/s for a kernel moving 1e+06 B (got 0)"));
}

TEST_CASE("roofline: time never decreases with flops or bytes", "[roofline][property]") {
  RooflineParams p = params();
  p.compute_ramp = Flops(1e8);
  p.memory_ramp = Bytes(1e6);
  double previous = 0.0;
  for (double x = 0.0; x <= 1e12; x = x * 3.0 + 1000.0) {
    const double t = ess::roofline(Flops(x), kPeak, Bytes(1e6), kBw, p).time.value();
    CHECK(t >= previous);
    previous = t;
  }
  previous = 0.0;
  for (double x = 0.0; x <= 1e12; x = x * 3.0 + 1000.0) {
    const double t = ess::roofline(Flops(1e9), kPeak, Bytes(x), kBw, p).time.value();
    CHECK(t >= previous);
    previous = t;
  }
}

TEST_CASE("a smooth roofline combines the roofs as a p-norm, and transition 0 is the max", "[roofline]") {
  // combine_roofs(3, 4, p): p = 1 adds them (7), p = 2 gives sqrt(9 + 16) = 5, p = 0 the max (4);
  // a zero roof contributes nothing.
  CHECK(ess::combine_roofs(3.0, 4.0, 0.0) == 4.0);
  CHECK(ess::combine_roofs(3.0, 4.0, 1.0) == Approx(7.0).epsilon(1e-15));
  CHECK(ess::combine_roofs(3.0, 4.0, 2.0) == Approx(5.0).epsilon(1e-15));
  CHECK(ess::combine_roofs(0.0, 4.0, 2.0) == 4.0);
  // Large p approaches the max: at equal roofs (1 + 1)^(1/64) = 1.0109.
  CHECK(ess::combine_roofs(4.0, 4.0, 64.0) == Approx(4.0 * std::pow(2.0, 1.0 / 64.0)).epsilon(1e-15));
  // Through roofline(): 3 s of compute and 4 s of memory with p = 2 and 1 s overhead -> 6 s.
  RooflineParams p = params();
  p.compute_efficiency = 1.0;
  p.memory_efficiency = 1.0;
  p.compute_ramp = ess::Flops(0.0);
  p.memory_ramp = ess::Bytes(0.0);
  p.kernel_overhead = ess::Seconds(1.0);
  p.transition = 2.0;
  const auto c = ess::roofline(ess::Flops(3.0), ess::FlopsPerSecond(1.0), ess::Bytes(4.0), ess::BytesPerSecond(1.0), p);
  CHECK(c.time.value() == Approx(6.0).epsilon(1e-15));
  CHECK(c.bound == ess::Bound::memory);
  // Between 0 and 1, or above 64, the transition is invalid.
  p.transition = 0.5;
  CHECK_THROWS_WITH(ess::validate_roofline_params(p, "hw.kernels.gemm"), Catch::Contains("hw.kernels.gemm.transition"));
  p.transition = 65.0;
  CHECK_THROWS_AS(ess::validate_roofline_params(p, "hw.kernels.gemm"), ess::InputError);
}
