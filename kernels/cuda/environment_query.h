// environment (minus method) of the measurements JSON, from the CUDA runtime, cuBLAS, NCCL and
// the kernel driver's /proc file.
#pragma once

#include <ctime>

#include "kernels/bench/measurements.h"

namespace ess::bench {

// `started`: when the run began (environment.date).
[[nodiscard]] Environment query_environment(int device, std::time_t started);

}  // namespace ess::bench
