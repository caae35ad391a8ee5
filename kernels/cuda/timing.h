// The timing harness shared by every measurement: CUDA events around each repetition, warm-ups
// first, the repetition count chosen from the warm-ups (choose_repetitions), and optionally the
// whole batch queued behind a blocking kernel so that the host's launch gaps do not show.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kernels/bench/stats.h"

namespace ess::bench {

struct TimingOptions {
  int warmups = 5;
  RepetitionPolicy policy;
  // Queue each batch of repetitions behind the blocking kernel (GPU-side work: GEMMs, norms,
  // device copies). Off for work whose host-side issue cost is part of what is measured (copies,
  // per-row gathers) and for host-synchronous work (pageable copies), which would deadlock
  // behind it.
  bool block = false;
  // Use exactly this many repetitions instead of choosing from the warm-ups.
  std::optional<std::int64_t> repetitions;
};

// Enqueues repetition `index` (0, 1, 2, ... across warm-ups and timed repetitions, so rotating
// buffers can use index % copies) on the stream given to Timer::run.
using Enqueue = std::function<void(std::int64_t index)>;

// One timer per device: its events belong to the device current when it was created, and run()
// must be called with that device current and a stream of that device.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // The timed repetitions' durations in seconds (warm-ups are not returned).
  std::vector<double> run(cudaStream_t stream, const Enqueue& enqueue, const TimingOptions& options);

  // Events recorded at the start of the first and the end of the last timed repetition of the
  // latest run(), for checking what else was running at the time (gather_interference).
  [[nodiscard]] cudaEvent_t first_start() const { return first_start_; }
  [[nodiscard]] cudaEvent_t last_stop() const { return last_stop_; }

 private:
  void ensure_events(std::size_t pairs);
  std::vector<double> time_batch(cudaStream_t stream, const Enqueue& enqueue,
                                 std::int64_t first_index, std::int64_t count, bool block,
                                 bool mark_first, bool mark_last);

  int device_ = 0;
  std::vector<cudaEvent_t> starts_;
  std::vector<cudaEvent_t> stops_;
  cudaEvent_t first_start_ = nullptr;
  cudaEvent_t last_stop_ = nullptr;
  volatile int* release_host_ = nullptr;  // mapped pinned memory
  int* release_device_ = nullptr;
  volatile int* timed_out_host_ = nullptr;
  int* timed_out_device_ = nullptr;
  bool warned_timeout_ = false;
};

// Repetitions queued behind one blocking kernel: few enough that the launch queue never fills
// while the kernel holds the stream (up to 32 x (2 events + a GEMM of up to 2 kernels) = 128
// entries, far below the ~1000 the driver queues before blocking the host).
inline constexpr std::int64_t kBlockedBatch = 32;

// The blocking kernel gives up after 2 s of GPU time: the host enqueues a batch in well under a
// millisecond, so reaching this means it was itself blocked (and the batch is timed with gaps).
inline constexpr std::uint64_t kBlockerTimeoutNs = 2'000'000'000;

}  // namespace ess::bench
