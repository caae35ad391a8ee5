// The environment text of the runner's trace: the shared ess-bench helpers it calls
// (kernels/bench/environment_text.h) and its own cuBLAS version format.
#include "kernels/runner/environment.h"

#include <catch2/catch.hpp>

#include <fstream>

#include "kernels/bench/environment_text.h"
#include "tests/scratch_dir.h"

using ess::bench::format_cuda_version;
using ess::bench::host_name;
using ess::bench::parse_driver_version;
using ess::bench::read_driver_version;
using ess::runner::format_cublas_version;

namespace {
std::string utc_iso8601(std::time_t t) { return ess::bench::iso8601_utc(t); }
}  // namespace

TEST_CASE("the driver version is the first dotted number of the first line") {
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                             "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n") == "550.54.15");
  CHECK(parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build") ==
        "570.86.15");
  CHECK(parse_driver_version("NVRM version: something else\nGCC version: 12.2.0") == "unknown");
  CHECK(parse_driver_version("") == "unknown");
  CHECK(parse_driver_version("v 1..2 3. .4 7") == "unknown");
}

TEST_CASE("the driver version file may be missing") {
  CHECK(read_driver_version("/nonexistent/ess-runner/version") == "unknown");
  ess::test::ScratchDir dir("ess-runner-env");
  const auto path = dir.path() / "version";
  std::ofstream(path) << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12\n";
  CHECK(read_driver_version(path) == "535.183.01");
}

TEST_CASE("library versions are formatted from their integers") {
  CHECK(format_cuda_version(13000) == "13.0");
  CHECK(format_cuda_version(12080) == "12.8");
  CHECK(format_cublas_version(130100) == "13.1.0");
  CHECK(format_cublas_version(120902) == "12.9.2");
}

TEST_CASE("dates are UTC ISO 8601") {
  CHECK(utc_iso8601(0) == "1970-01-01T00:00:00Z");
  // 1,700,000,000 s = 19,675 days (2023-11-14) + 80,000 s (22:13:20).
  CHECK(utc_iso8601(1700000000) == "2023-11-14T22:13:20Z");
}

TEST_CASE("the host name is never empty") { CHECK_FALSE(host_name().empty()); }
