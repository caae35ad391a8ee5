// Formatting of the measurements' environment fields (kernels/bench/environment_text.h).
#include "kernels/bench/environment_text.h"

#include <catch2/catch.hpp>
#include <stdexcept>

using ess::bench::format_cuda_version;
using ess::bench::format_nccl_version;
using ess::bench::iso8601_utc;
using ess::bench::parse_driver_version;

TEST_CASE("environment: CUDA versions are 1000 x major + 10 x minor", "[kernels][environment]") {
  CHECK(format_cuda_version(12080) == "12.8");
  CHECK(format_cuda_version(13000) == "13.0");
  CHECK(format_cuda_version(12040) == "12.4");
  CHECK(format_cuda_version(11080) == "11.8");
  CHECK_THROWS_AS(format_cuda_version(0), std::invalid_argument);
}

TEST_CASE("environment: NCCL versions in both of NCCL's encodings", "[kernels][environment]") {
  // 2.9 onwards: 10000 x major + 100 x minor + patch
  CHECK(format_nccl_version(22809) == "2.28.9");
  CHECK(format_nccl_version(22105) == "2.21.5");
  CHECK(format_nccl_version(21903) == "2.19.3");
  // before 2.9: 1000 x major + 100 x minor + patch
  CHECK(format_nccl_version(2708) == "2.7.8");
  CHECK_THROWS_AS(format_nccl_version(-1), std::invalid_argument);
}

TEST_CASE("environment: the driver version from /proc/driver/nvidia/version", "[kernels][environment]") {
  // The proprietary module's first line
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Dec "
                             "11 02:59:24 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian "
                             "12.2.0-14)\n") == "570.86.15");
  // The open module's
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                             "575.57.08  Release Build  (dvs-builder@U16-I3-B03-4-3)  Sat May 24 "
                             "07:21:16 UTC 2025\n") == "575.57.08");
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  Tue Mar "
                             " 5 22:15:33 UTC 2024") == "550.54.15");
  // No version on the first line: the GCC version on the second must not be taken for it
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX Kernel Module\nGCC version:  gcc "
                             "version 12.2.0\n") == "unknown");
  CHECK(parse_driver_version("") == "unknown");
  CHECK(parse_driver_version("something else entirely 1.2.3") == "unknown");
}

TEST_CASE("environment: dates are UTC ISO 8601", "[kernels][environment]") {
  CHECK(iso8601_utc(0) == "1970-01-01T00:00:00Z");
  CHECK(iso8601_utc(-1) == "1969-12-31T23:59:59Z");
  // 2000-02-29 (a leap day of a year divisible by 400): 1970..1999 is 30 x 365 + 7 leap days =
  // 10957 days, + 31 (January) + 28 (February 1-28) = 11016 days = 951,782,400 s
  CHECK(iso8601_utc(951782400) == "2000-02-29T00:00:00Z");
  // 2026-11-30 15:00: 1970..2025 is 56 x 365 + 14 leap days (1972..2024) = 20454 days, + 304
  // (January-October 2026) + 29 = 20787 days = 1,795,996,800 s, + 15 h = 1,796,050,800 s
  CHECK(iso8601_utc(1796050800) == "2026-11-30T15:00:00Z");
  // one second before a new year: 2025-12-31T23:59:59Z = 20454 days - 1 s
  CHECK(iso8601_utc(20454LL * 86400 - 1) == "2025-12-31T23:59:59Z");
}
