// ess-bench: measures what ess-sim's cost models need on the GPU it runs on and writes it as
// ess-sim/measurements/v1 JSON (kernels/README.md). Exit status: 0 on success, 1 on a CUDA error
// or a failed correctness check or output write, 2 on bad command-line input.
#include <cuda_runtime.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/atomic_file.h"
#include "kernels/bench/measurements.h"
#include "kernels/bench/options.h"
#include "kernels/bench/sweep.h"
#include "kernels/bench/version.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/environment_query.h"
#include "kernels/cuda/runner.h"

namespace {

using namespace ess::bench;

int fail_usage(const std::string& message) {
  std::fprintf(stderr, "ess-bench: error: %s\n", message.c_str());
  return 2;
}

int run(const Options& options) {
  // Find out now, not after minutes of measuring, whether the output can be written.
  try {
    check_writable(options.out);
  } catch (const std::exception& e) {
    return fail_usage(std::string("--out: ") + e.what());
  }

  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "ess-bench: no CUDA device: %s\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    return 1;
  }
  if (options.device >= count) {
    return fail_usage("--device " + std::to_string(options.device) + ": only " +
                      std::to_string(count) + " CUDA device(s) are visible (0.." +
                      std::to_string(count - 1) + ")");
  }

  const std::time_t started = std::time(nullptr);
  const Sweep sweep = options.quick ? quick_sweep() : default_sweep();
  Runner r(options, sweep);
  Environment env = query_environment(r.device, started);
  std::fprintf(stderr, "ess-bench %.*s on %s (compute capability %s, %lld SMs, L2 %lld B), %s sweep\n",
               static_cast<int>(kVersion.size()), kVersion.data(), env.gpu.c_str(),
               env.compute_capability.c_str(), static_cast<long long>(env.sm_count),
               static_cast<long long>(env.l2_bytes), options.quick ? "quick" : "default");

  for (const Suite suite : options.suites) {
    switch (suite) {
      case Suite::gemm: run_gemm(r); break;
      case Suite::norm: run_norm(r); break;
      case Suite::copy: run_copy(r); break;
      case Suite::gather: run_gather(r); break;
      case Suite::interference: run_interference(r); break;
      case Suite::d2d: run_d2d(r); break;
      case Suite::p2p: run_p2p(r); break;
      case Suite::collectives: run_collectives(r); break;
    }
  }

  env.method = method_text(sweep, env.l2_bytes, r.skipped);
  try {
    write_file_atomically(options.out, measurements_json(env, r.samples));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "ess-bench: %s\n", ex.what());
    return 1;
  }
  std::fprintf(stderr, "ess-bench: wrote %zu samples to %s in %.1f s\n", r.samples.size(),
               options.out.c_str(), r.elapsed_s());
  std::fputs(summary_table(r.samples).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  Command command;
  try {
    command = parse_command_line(args);
  } catch (const OptionError& e) {
    return fail_usage(e.what());
  }
  switch (command.action) {
    case Action::help: std::fputs(usage().c_str(), stdout); return 0;
    case Action::version:
      std::printf("ess-bench %.*s\n", static_cast<int>(kVersion.size()), kVersion.data());
      return 0;
    case Action::run: break;
  }
  return run(command.options);
}
