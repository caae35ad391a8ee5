#include "kernels/runner/cuda/check.h"

#include <cstdio>
#include <cstdlib>

namespace ess::runner::gpu {

void die(const char* file, int line, const char* call, const char* error) {
  std::fprintf(stderr, "ess-runner: %s:%d: %s failed: %s\n", file, line, call, error);
  std::fflush(stderr);
  std::exit(1);
}

const char* cublas_error_string(cublasStatus_t status) {
  // cublasGetStatusString exists since cuBLAS 11.4; CUDA 13 has it.
  return cublasGetStatusString(status);
}

}  // namespace ess::runner::gpu
