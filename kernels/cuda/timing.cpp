#include "kernels/cuda/timing.h"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_kernels.h"

namespace ess::bench {

Timer::Timer() {
  ESS_CUDA_CHECK(cudaGetDevice(&device_));
  void* host = nullptr;
  // Two ints: the release flag and the timed-out flag, both polled or written by the device.
  ESS_CUDA_CHECK(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  auto* ints = static_cast<int*>(host);
  ints[0] = 0;
  ints[1] = 0;
  release_host_ = ints;
  timed_out_host_ = ints + 1;
  void* device = nullptr;
  ESS_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  release_device_ = static_cast<int*>(device);
  timed_out_device_ = static_cast<int*>(device) + 1;
  ESS_CUDA_CHECK(cudaEventCreate(&first_start_));
  ESS_CUDA_CHECK(cudaEventCreate(&last_stop_));
}

Timer::~Timer() {
  for (cudaEvent_t e : starts_) cudaEventDestroy(e);
  for (cudaEvent_t e : stops_) cudaEventDestroy(e);
  cudaEventDestroy(first_start_);
  cudaEventDestroy(last_stop_);
  cudaFreeHost(const_cast<int*>(release_host_));
}

void Timer::ensure_events(std::size_t pairs) {
  while (starts_.size() < pairs) {
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    ESS_CUDA_CHECK(cudaEventCreate(&start));
    ESS_CUDA_CHECK(cudaEventCreate(&stop));
    starts_.push_back(start);
    stops_.push_back(stop);
  }
}

std::vector<double> Timer::time_batch(cudaStream_t stream, const Enqueue& enqueue,
                                      std::int64_t first_index, std::int64_t count, bool block,
                                      bool mark_first, bool mark_last) {
  ensure_events(static_cast<std::size_t>(count));
  if (block) {
    *release_host_ = 0;
    *timed_out_host_ = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    launch_blocker(release_device_, timed_out_device_, kBlockerTimeoutNs, stream);
  }
  if (mark_first) ESS_CUDA_CHECK(cudaEventRecord(first_start_, stream));
  for (std::int64_t r = 0; r < count; ++r) {
    const auto i = static_cast<std::size_t>(r);
    ESS_CUDA_CHECK(cudaEventRecord(starts_[i], stream));
    enqueue(first_index + r);
    ESS_CUDA_CHECK(cudaEventRecord(stops_[i], stream));
  }
  if (mark_last) ESS_CUDA_CHECK(cudaEventRecord(last_stop_, stream));
  if (block) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *release_host_ = 1;
  }
  ESS_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (block && *timed_out_host_ != 0 && !warned_timeout_) {
    std::fprintf(stderr,
                 "ess-bench: warning: the blocking kernel timed out before a batch was queued; "
                 "that batch includes host launch gaps\n");
    warned_timeout_ = true;
  }
  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(count));
  for (std::int64_t r = 0; r < count; ++r) {
    const auto i = static_cast<std::size_t>(r);
    float ms = 0.0f;
    ESS_CUDA_CHECK(cudaEventElapsedTime(&ms, starts_[i], stops_[i]));
    seconds.push_back(static_cast<double>(ms) * 1e-3);
  }
  return seconds;
}

std::vector<double> Timer::run(cudaStream_t stream, const Enqueue& enqueue,
                               const TimingOptions& options) {
  int current = 0;
  ESS_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) die(__FILE__, __LINE__, "Timer::run", "called on another device");

  std::int64_t index = 0;
  std::vector<double> warm;
  if (options.warmups > 0) {
    warm = time_batch(stream, enqueue, index, options.warmups, false, false, false);
    index += options.warmups;
  }
  std::int64_t reps = 0;
  if (options.repetitions) {
    reps = *options.repetitions;
  } else {
    // The warm-ups' median, so one slow first call (lazy loading, page faults) does not count.
    double estimate = 0.0;
    if (!warm.empty()) estimate = compute_stats(warm).median_s;
    reps = choose_repetitions(estimate, options.policy);
  }

  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(reps));
  // Without blocking, all repetitions go in one batch: the host queues ahead while the GPU works.
  const std::int64_t batch = options.block ? kBlockedBatch : reps;
  for (std::int64_t done = 0; done < reps;) {
    const std::int64_t n = std::min(batch, reps - done);
    const std::vector<double> t =
        time_batch(stream, enqueue, index, n, options.block, done == 0, done + n == reps);
    times.insert(times.end(), t.begin(), t.end());
    index += n;
    done += n;
  }
  return times;
}

}  // namespace ess::bench
