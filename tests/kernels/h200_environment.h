// Test helper: the H200 an ess-bench measurements document describes (kernels/bench/measurements.h),
// shared by the tests that write such documents; each sets its own driver and library versions.
#pragma once

#include "kernels/bench/measurements.h"

namespace ess::test {

inline ess::bench::Environment h200_environment() {
  ess::bench::Environment e;
  e.tool = "ess-bench 0.1.0";
  e.date = "2026-11-30T15:00:00Z";
  e.host = "gpu-host";
  e.gpu = "NVIDIA H200";
  e.gpu_count = 1;
  e.compute_capability = "9.0";
  e.sm_count = 132;
  e.memory_bytes = 150754820096;
  e.l2_bytes = 62914560;
  e.clocks.sm_mhz = 1980;
  return e;
}

}  // namespace ess::test
