#include "kernels/cuda/environment_query.h"

#include <cublas_v2.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "kernels/bench/environment_text.h"
#include "kernels/bench/version.h"
#include "kernels/cuda/check.h"

#if defined(ESS_BENCH_HAVE_NCCL)
#include <nccl.h>
#endif

namespace ess::bench {

namespace {

// A device attribute in kHz as whole MHz, or nothing where the runtime does not report it.
std::optional<std::int64_t> clock_mhz(cudaDeviceAttr attribute, int device) {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, attribute, device) != cudaSuccess || khz <= 0) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return (static_cast<std::int64_t>(khz) + 500) / 1000;
}

}  // namespace

Environment query_environment(int device, std::time_t started) {
  Environment env;
  env.tool = "ess-bench " + std::string(kVersion);
  env.date = iso8601_utc(started);
  env.host = host_name();

  cudaDeviceProp prop{};
  ESS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int count = 0;
  ESS_CUDA_CHECK(cudaGetDeviceCount(&count));
  env.gpu = prop.name;
  env.gpu_count = count;
  env.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  env.sm_count = prop.multiProcessorCount;
  env.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  env.l2_bytes = prop.l2CacheSize;
  env.clocks.sm_mhz = clock_mhz(cudaDevAttrClockRate, device);
  env.clocks.memory_mhz = clock_mhz(cudaDevAttrMemoryClockRate, device);
  env.driver = read_driver_version();

  int driver_api = 0;
  int runtime = 0;
  ESS_CUDA_CHECK(cudaDriverGetVersion(&driver_api));
  ESS_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  env.cuda_driver_api = format_cuda_version(driver_api);
  env.cuda_runtime = format_cuda_version(runtime);

  int major = 0;
  int minor = 0;
  int patch = 0;
  ESS_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  ESS_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  ESS_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  env.cublas = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);

#if defined(ESS_BENCH_HAVE_NCCL)
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) env.nccl = format_nccl_version(nccl);
#endif
  return env;
}

}  // namespace ess::bench
