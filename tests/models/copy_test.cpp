#include "models/copy.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bytes;
using ess::BytesPerSecond;
using ess::CopyDirection;
using ess::PcieSpec;
using ess::Seconds;
using ess::test::near;

// Test PCIe: h2d 50 GB/s, d2h 40 GB/s, latency 1 us, call overhead 2 us h2d / 3 us d2h.

TEST_CASE("copy: one 1 MB host-to-device copy", "[copy]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  // 1*2 us + 1 us + 1e6 / 50e9 = 2 + 1 + 20 = 23 us
  CHECK(ess::copy_time(CopyDirection::h2d, Bytes(1e6), 1, pcie).value() == near(23e-6));
}

TEST_CASE("copy: splitting a copy into chunks pays the call overhead per chunk", "[copy]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  // 10*2 us + 1 us + 1e6 / 50e9 = 20 + 1 + 20 = 41 us (vs 23 us as one copy)
  CHECK(ess::copy_time(CopyDirection::h2d, Bytes(1e6), 10, pcie).value() == near(41e-6));
  // d2h: 10*3 us + 1 us + 1e6 / 40e9 = 30 + 1 + 25 = 56 us
  CHECK(ess::copy_time(CopyDirection::d2h, Bytes(1e6), 10, pcie).value() == near(56e-6));
}

TEST_CASE("copy: device-to-host uses its own bandwidth and call overhead", "[copy]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  // 3 us + 1 us + 1e6 / 40e9 = 3 + 1 + 25 = 29 us (h2d: 23 us)
  CHECK(ess::copy_time(CopyDirection::d2h, Bytes(1e6), 1, pcie).value() == near(29e-6));
}

TEST_CASE("copy: an empty copy costs the call overhead and the latency", "[copy]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  CHECK(ess::copy_time(CopyDirection::h2d, Bytes(0.0), 1, pcie).value() == near(3e-6));
  CHECK(ess::effective_bandwidth(CopyDirection::h2d, Bytes(0.0), 1, pcie).value() == 0.0);
}

TEST_CASE("copy: the effective bandwidth grows with size towards the link bandwidth", "[copy]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  // 1e6 B / 23 us = 43,478,260,869.565 B/s
  CHECK(ess::effective_bandwidth(CopyDirection::h2d, Bytes(1e6), 1, pcie).value() ==
        near(43478260869.565216));
  // 1e6 B / 41 us = 24,390,243,902.439 B/s
  CHECK(ess::effective_bandwidth(CopyDirection::h2d, Bytes(1e6), 10, pcie).value() ==
        near(24390243902.439024));
  // 1e10 B / (3 us + 0.2 s) = 49,999,250,011.25 B/s
  CHECK(ess::effective_bandwidth(CopyDirection::h2d, Bytes(1e10), 1, pcie).value() ==
        near(49999250011.249825));
}

TEST_CASE("CopyDirection names parse and print", "[copy]") {
  CHECK(ess::parse_copy_direction("h2d") == CopyDirection::h2d);
  CHECK(ess::parse_copy_direction("d2h") == CopyDirection::d2h);
  CHECK_FALSE(ess::parse_copy_direction("H2D").has_value());
  CHECK_FALSE(ess::parse_copy_direction("d2d").has_value());
  CHECK(ess::to_string(CopyDirection::h2d) == "h2d");
  CHECK(ess::to_string(CopyDirection::d2h) == "d2h");
  REQUIRE(ess::copy_direction_names().size() == 2);
  CHECK(ess::copy_direction_names()[0] == "h2d");
  CHECK(ess::copy_direction_names()[1] == "d2h");
}

TEST_CASE("copy rejects invalid sizes, chunks and PCIe parameters", "[copy][errors]") {
  const PcieSpec good = ess::test::test_hardware().pcie;
  CHECK_THROWS_MATCHES(ess::copy_time(CopyDirection::h2d, Bytes(1e6), 0, good),
                       ess::InputError,
                       Catch::Message("copy_time: chunks must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::copy_time(CopyDirection::h2d, Bytes(-1.0), 1, good),
                       ess::InputError,
                       Catch::Message("copy_time: total must be >= 0 B (got -1 B)"));
  CHECK_THROWS_MATCHES(ess::effective_bandwidth(CopyDirection::d2h, Bytes(1e6), -2, good),
                       ess::InputError,
                       Catch::Message("copy_time: chunks must be >= 1 (got -2)"));

  PcieSpec pcie = good;
  pcie.h2d_bandwidth = BytesPerSecond(0.0);
  CHECK_THROWS_MATCHES(ess::copy_time(CopyDirection::h2d, Bytes(1e6), 1, pcie),
                       ess::InputError,
                       Catch::Message("hardware.pcie.h2d_bandwidth must be > 0 B/s (got 0 B/s)"));
  // The d2h path does not read the h2d bandwidth.
  CHECK_NOTHROW(ess::copy_time(CopyDirection::d2h, Bytes(1e6), 1, pcie));

  pcie = good;
  pcie.d2h_call_overhead = Seconds(-1e-6);
  CHECK_THROWS_MATCHES(
      ess::copy_time(CopyDirection::d2h, Bytes(1e6), 1, pcie), ess::InputError,
      Catch::Message("hardware.pcie.d2h_call_overhead must be >= 0 s (got -1e-06 s)"));

  pcie = good;
  pcie.latency = Seconds(-1e-6);
  CHECK_THROWS_MATCHES(ess::copy_time(CopyDirection::h2d, Bytes(1e6), 1, pcie),
                       ess::InputError,
                       Catch::Message("hardware.pcie.latency must be >= 0 s (got -1e-06 s)"));
}

TEST_CASE("copy: time never decreases with bytes or chunks", "[copy][property]") {
  const PcieSpec pcie = ess::test::test_hardware().pcie;
  for (const CopyDirection dir : {CopyDirection::h2d, CopyDirection::d2h}) {
    double previous = 0.0;
    for (double bytes = 0.0; bytes <= 1e11; bytes = bytes * 2.0 + 656.0) {
      const double t = ess::copy_time(dir, Bytes(bytes), 1, pcie).value();
      CHECK(t >= previous);
      previous = t;
    }
    previous = 0.0;
    for (std::int64_t chunks = 1; chunks <= 100000; chunks += 1 + chunks / 2) {
      const double t = ess::copy_time(dir, Bytes(1e8), chunks, pcie).value();
      CHECK(t >= previous);
      previous = t;
    }
  }
}

TEST_CASE("gather: one launch, no per-row overhead, a fraction of the link per direction", "[copy]") {
  const auto pcie = ess::test::test_hardware().pcie;
  // 1,000 rows of 656 B = 656,000 B. h2d: 1 us + 656,000 / (50e9 x 0.5 = 25e9) = 1 + 26.24 = 27.24 us.
  CHECK(ess::gather_time(ess::CopyDirection::h2d, ess::Bytes(656000.0), pcie).value() == ess::test::near(27.24e-6));
  // d2h: 1 us + 656,000 / (40e9 x 0.75 = 30e9) = 1 + 21.8666... = 22.8666... us.
  CHECK(ess::gather_time(ess::CopyDirection::d2h, ess::Bytes(656000.0), pcie).value() ==
        ess::test::near(22.866666666666667e-6));
  // The same rows copied one call each: 1,000 x 2 us + 1 us + 656,000 / 50e9 = 2,014.12 us.
  CHECK(ess::copy_time(ess::CopyDirection::h2d, ess::Bytes(656000.0), 1000, pcie).value() ==
        ess::test::near(2014.12e-6));
  CHECK(ess::gather_rate(ess::CopyDirection::h2d, pcie).value() == ess::test::near(25e9));
  CHECK_THROWS_AS(ess::gather_time(ess::CopyDirection::h2d, ess::Bytes(-1.0), pcie), ess::InputError);
  auto bad = pcie;
  bad.gather_h2d_efficiency = 0.0;
  CHECK_THROWS_AS(ess::gather_time(ess::CopyDirection::h2d, ess::Bytes(1.0), bad), ess::InputError);
}
