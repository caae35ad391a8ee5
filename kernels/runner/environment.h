// Where a trace was measured, as text for otherData. The driver version, CUDA version, date and
// host name come from the ess-bench host library (kernels/bench/environment_text.h), shared by
// both programs; only the cuBLAS version format is the runner's own.
#pragma once

#include <string>

namespace ess::runner {

// cublasGetVersion's 10000 x major + 100 x minor + patch: 130100 -> "13.1.0".
[[nodiscard]] std::string format_cublas_version(int version);

}  // namespace ess::runner
