// ess-runner: executes DeepSeek-V3.2-Exp-shaped dense decode layers with ESS latent-cache offload
// on one GPU, the misses replayed from an access trace through the simulator's own pool code, and
// writes a Chrome trace of every op (kernels/README.md, section "ess-runner").
//
// Exit status: 0 success; 1 a failure while running (CUDA error, failed self-test, no memory);
// 2 bad input (command line, access trace that does not fit it).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "kernels/runner/access_plan.h"
#include "kernels/runner/cuda/check.h"
#include "kernels/runner/cuda/decode_model.h"
#include "kernels/runner/cuda/self_test.h"
#include "sim/io/atomic_file.h"
#include "kernels/bench/environment_text.h"
#include "kernels/runner/environment.h"
#include "kernels/runner/options.h"
#include "kernels/runner/step_lists.h"
#include "kernels/runner/trace_file.h"
#include "kernels/runner/version.h"

namespace {

using namespace ess::runner;

constexpr double kGB = 1e9;

std::string cublas_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  RUNNER_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  RUNNER_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  RUNNER_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  return format_cublas_version(major * 10000 + minor * 100 + patch);
}

int run(const RunnerOptions& o) {
  int devices = 0;
  RUNNER_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (o.device >= devices) {
    std::fprintf(stderr, "ess-runner: error: --device %d: this machine has %d CUDA device(s)\n", o.device, devices);
    return 2;
  }
  RUNNER_CUDA_CHECK(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  RUNNER_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  int runtime = 0;
  RUNNER_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("ess-runner %s on %s (sm_%d%d), driver %s, CUDA runtime %s, cuBLAS %s\n", kRunnerVersion, prop.name,
              prop.major, prop.minor, ess::bench::read_driver_version().c_str(),
              ess::bench::format_cuda_version(runtime).c_str(),
              cublas_version().c_str());
  if (prop.major < 8) {
    std::fprintf(stderr, "ess-runner: error: needs compute capability 8.0 or later (bf16 tensor cores), %s is %d.%d\n",
                 prop.name, prop.major, prop.minor);
    return 1;
  }
  if (!gpu::run_self_test(stdout)) {
    std::fprintf(stderr, "ess-runner: error: the self-test failed; no trace written\n");
    return 1;
  }
  if (o.self_test) {
    std::printf("self-test passed\n");
    return 0;
  }

  AccessPlanner planner(o, o.access);
  std::printf("access trace %s: %d warm-up windows (the last %lld also run on the GPU), steps 0..%lld\n",
              o.access.c_str(), planner.warmup_windows(), static_cast<long long>(o.warmup_steps),
              static_cast<long long>(o.steps - 1));
  const LatentLayout layout{o.layers, o.batch, o.context + o.steps};
  const auto needed = gpu::DecodeModel::footprint(o, layout);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  RUNNER_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::printf("memory: %.2f GB on the GPU (%.2f GB free), %.2f GB pinned on the host\n",
              static_cast<double>(needed.device) / kGB, static_cast<double>(free_bytes) / kGB,
              static_cast<double>(needed.host) / kGB);
  if (needed.device > free_bytes) {
    std::fprintf(stderr, "ess-runner: error: needs %.2f GB of GPU memory, %.2f GB are free\n",
                 static_cast<double>(needed.device) / kGB, static_cast<double>(free_bytes) / kGB);
    return 1;
  }
  gpu::DecodeModel model(o, layout);

  std::vector<TraceEvent> events;
  std::vector<double> step_us;
  const std::size_t total_steps = planner.gpu_steps().size();
  StepAccess access = planner.next();
  StepLists lists = build_step_lists(access, layout, o.top_k);
  for (std::size_t i = 0; i < total_steps; ++i) {
    const int step = access.step;
    StepTimeline timeline = model.enqueue(step, access.context, lists, step == 0);
    std::int64_t misses = 0;
    for (std::int64_t l = 0; l < o.layers; ++l) misses += access.misses(static_cast<int>(l));
    // The next step's pool bookkeeping runs on the host while the GPU runs this step.
    StepAccess next;
    StepLists next_lists;
    if (i + 1 < total_steps) {
      next = planner.next();
      next_lists = build_step_lists(next, layout, o.top_k);
    }
    const std::vector<double> ms = model.finish(timeline);
    const double per = static_cast<double>(misses) / static_cast<double>(o.layers * o.batch);
    if (step >= 0) {
      std::vector<TraceEvent> resolved = timeline.resolve(ms);
      step_us.push_back(resolved.front().dur_us);
      std::printf("step %d: %.1f us, %lld misses (%.1f per request and layer)\n", step, resolved.front().dur_us,
                  static_cast<long long>(misses), per);
      events.insert(events.end(), resolved.begin(), resolved.end());
    } else {
      std::printf("warm-up step %d: %lld misses (%.1f per request and layer), not recorded\n", step,
                  static_cast<long long>(misses), per);
    }
    access = std::move(next);
    lists = std::move(next_lists);
  }

  TraceInfo info;
  info.tool = std::string("ess-runner ") + kRunnerVersion;
  info.gpu = prop.name;
  info.driver = ess::bench::read_driver_version();
  info.cuda_runtime = ess::bench::format_cuda_version(runtime);
  info.cublas = cublas_version();
  info.date = ess::bench::iso8601_utc(std::time(nullptr));
  info.host = ess::bench::host_name();
  info.scenario_sha256 = o.scenario_sha256;
  info.config = config_fields(o);
  ess::write_file_atomically(o.out, render_trace(events, info));
  double mean = 0.0;
  for (const double us : step_us) mean += us / static_cast<double>(step_us.size());
  std::printf("%zu steps, mean %.1f us (min %.1f, max %.1f); trace %s (%zu events)\n", step_us.size(), mean,
              *std::min_element(step_us.begin(), step_us.end()), *std::max_element(step_us.begin(), step_us.end()),
              o.out.c_str(), events.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  Command command;
  try {
    command = parse_command_line(args);
  } catch (const OptionsError& e) {
    std::fprintf(stderr, "ess-runner: error: %s\n", e.what());
    return 2;
  }
  if (command.action == Command::Action::help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (command.action == Command::Action::version) {
    std::printf("ess-runner %s\n", kRunnerVersion);
    return 0;
  }
  try {
    return run(command.options);
  } catch (const ess::AccessTraceError& e) {
    std::fprintf(stderr, "ess-runner: error: %s\n", e.what());
    return 2;
  } catch (const AccessPlanError& e) {
    std::fprintf(stderr, "ess-runner: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ess-runner: error: %s\n", e.what());
    return 1;
  }
}
