// The state one ess-bench run shares across its measurement suites: the options and sweep, the
// measured device, streams, the cuBLASLt handle, the timer, the samples collected so far, what was
// skipped and why, and the --max-seconds deadline.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/measurements.h"
#include "kernels/bench/options.h"
#include "kernels/bench/sweep.h"
#include "kernels/cuda/buffers.h"
#include "kernels/cuda/device_kernels.h"
#include "kernels/cuda/timing.h"

namespace ess::bench {

// Set by main()'s SIGTERM/SIGINT handler (coreutils timeout sends SIGTERM first): from then on
// time_left() is false, so every suite stops starting samples and what was measured is written.
extern volatile std::sig_atomic_t g_stop_requested;

// cuBLAS's recommended workspace on Hopper (cuBLAS docs, cublasSetWorkspace: 32 MiB for sm_90);
// more than enough on Ampere too.
inline constexpr std::int64_t kGemmWorkspaceBytes = 32LL << 20;

class Runner {
 public:
  Runner(const Options& options, const Sweep& sweep);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const Options& options;
  const Sweep& sweep;

  // Set current in the constructor (before the timer, whose events belong to it); main() has
  // checked that it exists.
  int device = 0;
  int gpu_count = 0;
  cudaDeviceProp prop{};
  std::int64_t l2_bytes = 0;
  bool fp8 = false;  // compute capability >= 8.9

  cudaStream_t stream = nullptr;   // every single-stream measurement
  cudaStream_t stream2 = nullptr;  // the second direction / the concurrent gather
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;
  Timer timer;

  std::vector<Sample> samples;
  std::vector<std::string> skipped;

  // False once --max-seconds have passed since the start or a stop signal came; the caller then
  // records what it leaves out with skip() and stops its suite.
  [[nodiscard]] bool time_left() const;
  // Why time_left() is false: "--max-seconds reached" or "stopped by a signal".
  [[nodiscard]] std::string stop_reason() const;
  // Elapsed wall-clock seconds since the runner started.
  [[nodiscard]] double elapsed_s() const;

  // Adds a sample and prints one progress line ("[kind n/total] what: median ...") to stderr.
  void add(Sample sample, std::string_view what, std::int64_t index, std::int64_t total);
  // Records something left out, for environment.method, and says so on stderr.
  void skip(const std::string& what);
  // A progress line without a sample (setup steps, checks).
  void note(const std::string& text) const;

  // `bytes` of device memory on the current device filled with bench values of `type`.
  [[nodiscard]] DeviceBuffer random_device_buffer(std::int64_t bytes, FillType type,
                                                  std::uint64_t seed);

 private:
  std::chrono::steady_clock::time_point start_;
};

// Suites (one .cpp each). Each adds its samples to the runner, stops early when time runs out
// (recording what it skipped), and exits through the check macros on a CUDA error.
void run_gemm(Runner& r);
void run_norm(Runner& r);
void run_copy(Runner& r);
void run_gather(Runner& r);
void run_interference(Runner& r);
void run_d2d(Runner& r);
void run_p2p(Runner& r);
void run_collectives(Runner& r);

}  // namespace ess::bench
