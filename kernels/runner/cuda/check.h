// Every CUDA and cuBLAS call in ess-runner goes through one of these macros: on failure it prints
// file:line, the call and the library's error string to stderr and exits with status 1, so a
// broken run never writes a trace. (ess-runner is a program, not library code: exiting here is its
// documented behaviour.) C++17: kernels.cu includes this header.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace ess::runner::gpu {

[[noreturn]] void die(const char* file, int line, const char* call, const char* error);
[[nodiscard]] const char* cublas_error_string(cublasStatus_t status);

}  // namespace ess::runner::gpu

#define RUNNER_CUDA_CHECK(call)                                                              \
  do {                                                                                       \
    const cudaError_t runner_status_ = (call);                                               \
    if (runner_status_ != cudaSuccess) {                                                     \
      ::ess::runner::gpu::die(__FILE__, __LINE__, #call, cudaGetErrorString(runner_status_)); \
    }                                                                                        \
  } while (0)

#define RUNNER_CUBLAS_CHECK(call)                                                                            \
  do {                                                                                                       \
    const cublasStatus_t runner_status_ = (call);                                                            \
    if (runner_status_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      ::ess::runner::gpu::die(__FILE__, __LINE__, #call, ::ess::runner::gpu::cublas_error_string(runner_status_)); \
    }                                                                                                        \
  } while (0)

// After a kernel launch: configuration errors surface here, execution errors at the next checked
// synchronisation.
#define RUNNER_CHECK_LAUNCH() RUNNER_CUDA_CHECK(cudaGetLastError())
