#include "models/gemm.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::DType;
using ess::GemmShape;
using ess::KernelCost;
using ess::test::near;

// hardware.kernels.gemm of the test GPU: bf16 5e13 FLOP/s, fp8 1e14, fp32 2.5e13 effective;
// HBM 5e11 B/s effective; ramps 1e8 FLOP and 1e6 B; overhead 2 us.

TEST_CASE("gemm: a small bf16 GEMM is memory-bound", "[gemm]") {
  const KernelCost c =
      ess::gemm({.m = 64, .n = 128, .k = 256, .dtype = DType::bf16}, ess::test::test_hardware());
  // flops = 2*64*128*256 = 4,194,304 FLOP; compute = (4,194,304 + 1e8) / 5e13 = 2.08388608 us
  CHECK(c.flops.value() == near(4194304.0));
  CHECK(c.compute.value() == near(2.08388608e-6));
  // bytes = (64*256 + 256*128)*2 + 64*128*2 = 98,304 + 16,384 = 114,688 B
  // memory = (114,688 + 1e6) / 5e11 = 2.229376 us; time = 2.229376 + 2 = 4.229376 us
  CHECK(c.bytes.value() == near(114688.0));
  CHECK(c.memory.value() == near(2.229376e-6));
  CHECK(c.time.value() == near(4.229376e-6));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("gemm: a large bf16 GEMM is compute-bound", "[gemm]") {
  const KernelCost c = ess::gemm({.m = 4096, .n = 4096, .k = 4096, .dtype = DType::bf16},
                                 ess::test::test_hardware());
  // flops = 2*4096^3 = 137,438,953,472; compute = (137,438,953,472 + 1e8) / 5e13 = 2.75077906944 ms
  CHECK(c.flops.value() == near(137438953472.0));
  CHECK(c.compute.value() == near(2.75077906944e-3));
  // bytes = 3 * 4096*4096*2 = 100,663,296 B; memory = (100,663,296 + 1e6) / 5e11 = 203.326592 us
  CHECK(c.bytes.value() == near(100663296.0));
  CHECK(c.memory.value() == near(2.03326592e-4));
  // time = 2.75077906944 ms + 2 us
  CHECK(c.time.value() == near(2.75277906944e-3));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("gemm: fp8 reads 1-byte operands, writes bf16 and reads block scales", "[gemm]") {
  const KernelCost c =
      ess::gemm({.m = 64, .n = 200, .k = 300, .dtype = DType::fp8}, ess::test::test_hardware());
  // flops = 2*64*200*300 = 7,680,000; compute = (7,680,000 + 1e8) / 1e14 (fp8 peak) = 1.0768 us
  CHECK(c.flops.value() == near(7680000.0));
  CHECK(c.compute.value() == near(1.0768e-6));
  // operands: (64*300 + 300*200)*1 = 79,200 B; output bf16: 64*200*2 = 25,600 B
  // weight scales: 4 * ceil(300/128)=3 * ceil(200/128)=2 = 24 B
  // activation scales: 4 * 64 * ceil(300/128)=3 = 768 B
  // bytes = 79,200 + 25,600 + 24 + 768 = 105,592 B
  CHECK(c.bytes.value() == near(105592.0));
  // memory = (105,592 + 1e6) / 5e11 = 2.211184 us; time = 4.211184 us
  CHECK(c.memory.value() == near(2.211184e-6));
  CHECK(c.time.value() == near(4.211184e-6));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("gemm: fp32 reads 4-byte elements and uses the fp32 peak", "[gemm]") {
  const KernelCost c =
      ess::gemm({.m = 1, .n = 1024, .k = 1024, .dtype = DType::fp32}, ess::test::test_hardware());
  // flops = 2*1*1024*1024 = 2,097,152; compute = (2,097,152 + 1e8) / 2.5e13 = 4.08388608 us
  CHECK(c.compute.value() == near(4.08388608e-6));
  // bytes = (1024 + 1024*1024)*4 + 1024*4 = 4,202,496 B; memory = 5,202,496 / 5e11 = 10.404992 us
  CHECK(c.bytes.value() == near(4202496.0));
  CHECK(c.memory.value() == near(1.0404992e-5));
  CHECK(c.time.value() == near(1.2404992e-5));
}

TEST_CASE("gemm: fp8 on a GPU without fp8 tensor cores is unsupported", "[gemm][errors]") {
  CHECK_THROWS_MATCHES(
      ess::gemm({.m = 64, .n = 128, .k = 256, .dtype = DType::fp8},
                ess::test::test_hardware_without_fp8()),
      ess::UnsupportedError,
      Catch::Message(
          "NoFp8GPU has no fp8 peak compute (hardware.gpu.peak_compute.fp8 is not set)"));
  // bf16 still works on that GPU
  CHECK_NOTHROW(ess::gemm({.m = 64, .n = 128, .k = 256, .dtype = DType::bf16},
                          ess::test::test_hardware_without_fp8()));
}

TEST_CASE("gemm rejects non-positive sizes", "[gemm][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(ess::gemm({.m = 0, .n = 1, .k = 1, .dtype = DType::bf16}, hw),
                       ess::InputError, Catch::Message("gemm: m must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::gemm({.m = 1, .n = -1, .k = 1, .dtype = DType::bf16}, hw),
                       ess::InputError, Catch::Message("gemm: n must be >= 1 (got -1)"));
  CHECK_THROWS_MATCHES(ess::gemm({.m = 1, .n = 1, .k = 0, .dtype = DType::bf16}, hw),
                       ess::InputError, Catch::Message("gemm: k must be >= 1 (got 0)"));
}

TEST_CASE("gemm rejects invalid hardware.kernels.gemm parameters", "[gemm][errors]") {
  ess::Hardware hw = ess::test::test_hardware();
  hw.kernels.gemm.compute_efficiency = 0.0;
  CHECK_THROWS_MATCHES(
      ess::gemm({.m = 1, .n = 1, .k = 1, .dtype = DType::bf16}, hw), ess::InputError,
      Catch::Message("hardware.kernels.gemm.compute_efficiency must be in (0, 1] (got 0)"));
}

TEST_CASE("gemm: time never decreases with m, n or k", "[gemm][property]") {
  const ess::Hardware hw = ess::test::test_hardware();
  for (const DType t : {DType::bf16, DType::fp8}) {
    double previous = 0.0;
    for (std::int64_t m = 1; m <= 16384; m += 1 + m / 4) {
      const double time = ess::gemm({.m = m, .n = 2112, .k = 7168, .dtype = t}, hw).time.value();
      CHECK(time >= previous);
      previous = time;
    }
    previous = 0.0;
    for (std::int64_t n = 1; n <= 32768; n += 1 + n / 4) {
      const double time = ess::gemm({.m = 64, .n = n, .k = 7168, .dtype = t}, hw).time.value();
      CHECK(time >= previous);
      previous = time;
    }
    previous = 0.0;
    for (std::int64_t k = 1; k <= 32768; k += 1 + k / 4) {
      const double time = ess::gemm({.m = 64, .n = 7168, .k = k, .dtype = t}, hw).time.value();
      CHECK(time >= previous);
      previous = time;
    }
  }
}

TEST_CASE("grouped_gemm: reads every group's weight once and computes whole 64-row tiles per group", "[gemm]") {
  const KernelCost c = ess::grouped_gemm({.groups = 4, .m_total = 32, .n = 256, .k = 128, .dtype = DType::fp8},
                                         ess::test::test_hardware());
  // 8 rows per group, padded to the 64-row tile (kGroupedGemmBlockM): 4 x 64 = 256 rows computed.
  // flops = 2*256*256*128 = 16,777,216; compute = (16,777,216 + 1e8) / 1e14 = 1.16777216 us
  CHECK(c.flops.value() == near(16777216.0));
  CHECK(c.compute.value() == near(1.16777216e-6));
  // bytes = (256*128 + 4*128*256)*1 + 256*256*2 (bf16 out) = 32,768 + 131,072 + 131,072 = 294,912
  //       + weight scales 4*4*ceil(128/128)*ceil(256/128) = 32 + row scales 4*256*1 = 1,024 -> 295,968 B
  // memory = (295,968 + 1e6) / 5e11 = 2.591936 us; time = 2.591936 + 2 = 4.591936 us
  CHECK(c.bytes.value() == near(295968.0));
  CHECK(c.memory.value() == near(2.591936e-6));
  CHECK(c.time.value() == near(4.591936e-6));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("grouped_gemm pads each group's rows to the 64-row tile of DeepGEMM's masked kernel", "[gemm]") {
  CHECK(ess::kGroupedGemmBlockM == 64);
  CHECK(ess::grouped_gemm_padded_rows(0) == 0);
  CHECK(ess::grouped_gemm_padded_rows(1) == 64);
  CHECK(ess::grouped_gemm_padded_rows(64) == 64);
  CHECK(ess::grouped_gemm_padded_rows(65) == 128);
  CHECK_THROWS_AS(ess::grouped_gemm_padded_rows(-1), ess::InternalError);
  const auto hw = ess::test::test_hardware();
  const ess::GroupedGemmShape w{.groups = 0, .m_total = 0, .n = 4096, .k = 7168, .dtype = DType::fp8};
  // 1 row or 64 rows in one expert compute the same tile: the same FLOP.
  const std::int64_t one[] = {1};
  const std::int64_t full[] = {64};
  CHECK(ess::grouped_gemm(w, one, hw).flops.value() == near(2.0 * 64 * 4096 * 7168));
  CHECK(ess::grouped_gemm(w, full, hw).flops.value() == near(2.0 * 64 * 4096 * 7168));
  // 65 rows need a second tile: twice the FLOP of 64.
  const std::int64_t over[] = {65};
  CHECK(ess::grouped_gemm(w, over, hw).flops.value() == near(2.0 * 128 * 4096 * 7168));
  // An expert with no rows reads no weight: {3, 0, 5} reads two experts' weights (2 x 4096 x 7168 B)
  // and computes 2 tiles.
  const std::int64_t skewed[] = {3, 0, 5};
  const KernelCost c = ess::grouped_gemm(w, skewed, hw);
  CHECK(c.flops.value() == near(2.0 * 128 * 4096 * 7168));
  const double k_blocks = 7168.0 / 128;
  const double n_blocks = 4096.0 / 128;
  CHECK(c.bytes.value() == near(2.0 * 4096 * 7168 + 128.0 * (7168 + 4096 * 2) + 4.0 * 2 * k_blocks * n_blocks +
                                4.0 * 128 * k_blocks));
  // The even split of 8 rows over the same 2 groups is the same kernel.
  CHECK(ess::grouped_gemm({.groups = 2, .m_total = 8, .n = 4096, .k = 7168, .dtype = DType::fp8}, hw).time.value() ==
        near(c.time.value()));
  const std::int64_t none[] = {0, 0};
  CHECK_THROWS_AS(ess::grouped_gemm(w, none, hw), ess::InternalError);
  CHECK_THROWS_AS(ess::grouped_gemm({.groups = 4, .m_total = 3, .n = 1, .k = 1, .dtype = DType::fp8}, hw),
                  ess::InputError);
}

TEST_CASE("grouped_gemm is priced with kernels.grouped_gemm, not kernels.gemm", "[gemm]") {
  auto hw = ess::test::test_hardware();
  const ess::GroupedGemmShape s{.groups = 1, .m_total = 64, .n = 128, .k = 256, .dtype = DType::bf16};
  const double before = ess::grouped_gemm(s, hw).time.value();
  hw.kernels.gemm.kernel_overhead = ess::Seconds(1e-3);  // the dense class does not matter
  CHECK(ess::grouped_gemm(s, hw).time.value() == near(before));
  hw.kernels.grouped_gemm.kernel_overhead = ess::Seconds(12e-6);  // 2 us -> 12 us
  CHECK(ess::grouped_gemm(s, hw).time.value() == near(before + 10e-6));
  hw.kernels.grouped_gemm.memory_efficiency = 0.0;
  CHECK_THROWS_WITH(ess::grouped_gemm(s, hw), Catch::Contains("hardware.kernels.grouped_gemm.memory_efficiency"));
}

TEST_CASE("grouped_gemm: one group equals gemm, and empty shapes are rejected", "[gemm]") {
  const auto hw = ess::test::test_hardware();
  const KernelCost one = ess::grouped_gemm({.groups = 1, .m_total = 64, .n = 128, .k = 256, .dtype = DType::bf16}, hw);
  CHECK(one.time.value() == near(4.229376e-6));  // the first gemm test's shape
  CHECK_THROWS_AS(ess::grouped_gemm({.groups = 0, .m_total = 1, .n = 1, .k = 1, .dtype = DType::bf16}, hw),
                  ess::InputError);
  CHECK_THROWS_AS(ess::grouped_gemm({.groups = 1, .m_total = 0, .n = 1, .k = 1, .dtype = DType::bf16}, hw),
                  ess::InputError);
}
