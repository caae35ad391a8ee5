// ess-bench: measures what ess-sim's cost models need on the GPU it runs on and writes it as
// ess-sim/measurements/v1 JSON (kernels/README.md), again after every suite and on a fatal CUDA
// error, so that a crash keeps what was measured. Exit status: 0 on success, 1 on a CUDA error, a
// failed suite or correctness check, a stop signal or an output write, 2 on bad input.
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/bench/atomic_file.h"
#include "sim/io/atomic_file.h"
#include "kernels/bench/gemm_shapes.h"
#include "kernels/bench/measurements.h"
#include "kernels/bench/options.h"
#include "kernels/bench/progress.h"
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

// What a checkpoint writes: the run's state, reachable from the fatal-error hook (die() knows
// nothing of it).
struct Checkpoint {
  const Options& options;
  const Sweep& sweep;
  const Environment& env;
  const Runner& runner;
  SuiteProgress& progress;
};
Checkpoint* g_checkpoint = nullptr;

// The measurements so far, written atomically: a valid document whose environment.method says
// which suites completed, failed or did not run. False (with a message) if it cannot be written.
bool write_checkpoint(const Checkpoint& c) {
  Environment env = c.env;
  env.method = method_text(c.sweep, env.l2_bytes, c.runner.skipped) + c.progress.text();
  try {
    ess::write_file_atomically(c.options.out, measurements_json(env, c.runner.samples));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ess-bench: cannot write %s: %s\n", c.options.out.c_str(), e.what());
    return false;
  }
  return true;
}

// die()'s hook: the running suite failed; keep what the others (and it, so far) measured.
void on_fatal(const char* message) {
  if (g_checkpoint == nullptr) return;
  g_checkpoint->progress.fail(message);
  if (write_checkpoint(*g_checkpoint)) {
    std::fprintf(stderr, "ess-bench: wrote the %zu samples measured before the error to %s\n",
                 g_checkpoint->runner.samples.size(), g_checkpoint->options.out.c_str());
  }
}

extern "C" void on_stop_signal(int) { g_stop_requested = 1; }

int run(const Options& options) {
  // Find out now, not after minutes of measuring, whether the output can be written.
  try {
    check_writable(options.out);
  } catch (const std::exception& e) {
    return fail_usage(std::string("--out: ") + e.what());
  }
  Sweep sweep = options.quick ? quick_sweep() : default_sweep();
  std::vector<std::string> left_out;
  if (!options.gemm_shapes.empty()) {
    try {
      GemmShapesFile file = read_gemm_shapes(options.gemm_shapes);
      sweep.gemm_shapes = shapes_first(file.shapes, sweep.gemm_shapes);
      left_out = std::move(file.left_out);
    } catch (const GemmShapesError& e) {
      return fail_usage(std::string("--gemm-shapes: ") + e.what());
    }
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
  Runner r(options, sweep);
  Environment env = query_environment(r.device, started);
  std::fprintf(stderr, "ess-bench %.*s on %s (compute capability %s, %lld SMs, L2 %lld B), %s sweep, %zu GEMM shapes\n",
               static_cast<int>(kVersion.size()), kVersion.data(), env.gpu.c_str(),
               env.compute_capability.c_str(), static_cast<long long>(env.sm_count),
               static_cast<long long>(env.l2_bytes), options.quick ? "quick" : "default",
               sweep.gemm_shapes.size());
  for (const std::string& what : left_out) {
    if (options.runs(Suite::gemm)) r.skip("gemm " + what + ": a batched GEMM, not measured");
  }

  SuiteProgress progress(options.suites);
  Checkpoint checkpoint{options, sweep, env, r, progress};
  g_checkpoint = &checkpoint;
  set_fatal_hook(on_fatal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);

  bool written = true;
  for (const Suite suite : options.suites) {
    if (!r.time_left()) {
      // Not even its set-up (the copy suite pins 2 GiB): after a stop signal the grace period
      // before SIGKILL is short.
      r.skip(std::string(to_string(suite)) + ": not started (" + r.stop_reason() + ")");
      continue;
    }
    progress.start(suite);
    const std::size_t before = r.samples.size();
    try {
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
      progress.complete();
    } catch (const std::exception& ex) {
      // A host-side failure (allocation, a bug caught by a check): the next suite can still run.
      std::fprintf(stderr, "ess-bench: suite %.*s failed: %s\n", static_cast<int>(to_string(suite).size()),
                   to_string(suite).data(), ex.what());
      progress.fail(ex.what());
    }
    written = write_checkpoint(checkpoint);
    std::fprintf(stderr, "ess-bench: checkpoint after %.*s: %zu samples (+%zu) %s %s\n",
                 static_cast<int>(to_string(suite).size()), to_string(suite).data(), r.samples.size(),
                 r.samples.size() - before, written ? "written to" : "NOT written to", options.out.c_str());
  }
  // Once more, with what was not started.
  written = write_checkpoint(checkpoint);
  g_checkpoint = nullptr;
  set_fatal_hook(nullptr);

  if (!written) return 1;
  std::fprintf(stderr, "ess-bench: wrote %zu samples to %s in %.1f s\n", r.samples.size(),
               options.out.c_str(), r.elapsed_s());
  std::fputs(summary_table(r.samples).c_str(), stdout);
  if (g_stop_requested != 0) {
    std::fprintf(stderr, "ess-bench: stopped by a signal; the samples measured are written\n");
    return 1;
  }
  return progress.failed().empty() ? 0 : 1;
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
