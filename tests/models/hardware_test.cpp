#include "models/hardware.h"

#include <catch2/catch.hpp>

#include "tests/models/test_hardware.h"

using ess::DType;
using ess::test::near;

TEST_CASE("PeakCompute::at returns the peak of each dtype the GPU has", "[hardware]") {
  const ess::Hardware hw = ess::test::test_hardware();
  const ess::PeakCompute& p = hw.gpu.peak_compute;
  CHECK(p.at(DType::fp32, hw.gpu.kind).value() == near(50e12));
  CHECK(p.at(DType::bf16, hw.gpu.kind).value() == near(100e12));
  CHECK(p.at(DType::fp16, hw.gpu.kind).value() == near(100e12));
  CHECK(p.at(DType::fp8, hw.gpu.kind).value() == near(200e12));
}

TEST_CASE("PeakCompute::at names the GPU and the JSON key when the dtype is missing",
          "[hardware]") {
  const ess::Hardware hw = ess::test::test_hardware_without_fp8();
  CHECK_THROWS_MATCHES(
      hw.gpu.peak_compute.at(DType::fp8, hw.gpu.kind), ess::UnsupportedError,
      Catch::Message(
          "NoFp8GPU has no fp8 peak compute (hardware.gpu.peak_compute.fp8 is not set)"));
  ess::PeakCompute empty;
  CHECK_THROWS_MATCHES(
      empty.at(DType::fp32, "H100-SXM"), ess::UnsupportedError,
      Catch::Message(
          "H100-SXM has no fp32 peak compute (hardware.gpu.peak_compute.fp32 is not set)"));
}

TEST_CASE("Hardware::total_gpus is nodes times GPUs per node", "[hardware]") {
  CHECK(ess::test::test_hardware().total_gpus() == 32);  // 4 nodes x 8
}
