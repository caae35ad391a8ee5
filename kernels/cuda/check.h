// Every CUDA, cuBLAS and NCCL call in ess-bench goes through one of these macros: on failure it
// prints file:line, the call and the library's error string to stderr and exits with status 1, so
// a broken measurement never reaches the JSON. (ess-bench is a program, not library code: exiting
// here is its documented behaviour.)
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace ess::bench {

[[noreturn]] void die(const char* file, int line, const char* call, const char* error);

// Called once by die(), with the error line, before it exits: main() uses it to write the samples
// measured so far (host memory only; the CUDA context may be unusable by then). nullptr: none.
using FatalHook = void (*)(const char* message);
void set_fatal_hook(FatalHook hook);

}  // namespace ess::bench

#define ESS_CUDA_CHECK(call)                                                          \
  do {                                                                                \
    const cudaError_t ess_status_ = (call);                                           \
    if (ess_status_ != cudaSuccess) {                                                 \
      ::ess::bench::die(__FILE__, __LINE__, #call, cudaGetErrorString(ess_status_));  \
    }                                                                                 \
  } while (0)

#define ESS_CUBLAS_CHECK(call)                                                            \
  do {                                                                                    \
    const cublasStatus_t ess_status_ = (call);                                            \
    if (ess_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::ess::bench::die(__FILE__, __LINE__, #call, cublasLtGetStatusString(ess_status_)); \
    }                                                                                     \
  } while (0)

// A kernel launch: checks the launch itself (configuration errors); execution errors surface at
// the next checked synchronisation.
#define ESS_CUDA_CHECK_LAUNCH() ESS_CUDA_CHECK(cudaGetLastError())
