// Host<->device copies by size (pinned and pageable host memory; each direction, and both at once
// on two streams) and device-to-device copies: cudaMemcpyAsync as an inference engine issues it.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_kernels.h"
#include "kernels/cuda/runner.h"

namespace ess::bench {

namespace {

constexpr std::uint64_t kCopySeed = 0x79706f63ULL;  // any fixed value
constexpr std::int64_t kBf16Bytes = 2;

// Two events that order stream2 after stream (fork) and stream after stream2 (join), so that a
// repetition timed on `stream` covers work on both.
class ForkJoin {
 public:
  ForkJoin() {
    ESS_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    ESS_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  }
  ~ForkJoin() {
    cudaEventDestroy(fork_);
    cudaEventDestroy(join_);
  }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  void fork(cudaStream_t from, cudaStream_t to) const {
    ESS_CUDA_CHECK(cudaEventRecord(fork_, from));
    ESS_CUDA_CHECK(cudaStreamWaitEvent(to, fork_, 0));
  }
  void join(cudaStream_t from, cudaStream_t to) const {
    ESS_CUDA_CHECK(cudaEventRecord(join_, from));
    ESS_CUDA_CHECK(cudaStreamWaitEvent(to, join_, 0));
  }

 private:
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

}  // namespace

void run_copy(Runner& r) {
  const Sweep& s = r.sweep;
  if (s.copy_bytes.empty()) return;
  const std::int64_t largest = *std::max_element(s.copy_bytes.begin(), s.copy_bytes.end());
  const std::int64_t region = rotation_region(s.copy_bytes, r.l2_bytes);
  r.note("copy: allocating " + std::to_string(largest) + " B x 2 pinned, x 2 pageable, " +
         std::to_string(region) + " B x 2 device");

  // Device side: h2d destinations in `to_device`, d2h sources in `from_device`, rotated.
  const DeviceBuffer to_device = r.random_device_buffer(region, FillType::bf16, kCopySeed);
  const DeviceBuffer from_device = r.random_device_buffer(region, FillType::bf16, kCopySeed + 1);
  // Host side: random data written by the GPU through the mapping (pinned) or copied down
  // (pageable, which also faults every page in before timing).
  const PinnedBuffer pinned_src(largest);
  const PinnedBuffer pinned_dst(largest);
  launch_fill(pinned_src.device_data(), FillType::bf16, largest / kBf16Bytes, kCopySeed + 2, r.stream);
  launch_fill(pinned_dst.device_data(), FillType::bf16, largest / kBf16Bytes, kCopySeed + 3, r.stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream));
  const PageableBuffer pageable_src(largest);
  const PageableBuffer pageable_dst(largest);
  ESS_CUDA_CHECK(cudaMemcpy(pageable_src.data(), pinned_src.data(), static_cast<std::size_t>(largest),
                            cudaMemcpyHostToHost));
  ESS_CUDA_CHECK(cudaMemcpy(pageable_dst.data(), pinned_dst.data(), static_cast<std::size_t>(largest),
                            cudaMemcpyHostToHost));

  const ForkJoin fork_join;
  constexpr HostMemory kMemories[] = {HostMemory::pinned, HostMemory::pageable};
  constexpr CopyDirection kDirections[] = {CopyDirection::h2d, CopyDirection::d2h,
                                           CopyDirection::bidirectional};
  const auto total = static_cast<std::int64_t>(2 * 3 * s.copy_bytes.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, false, std::nullopt};
  for (const HostMemory memory : kMemories) {
    std::byte* host_src = memory == HostMemory::pinned ? pinned_src.data() : pageable_src.data();
    std::byte* host_dst = memory == HostMemory::pinned ? pinned_dst.data() : pageable_dst.data();
    for (const CopyDirection direction : kDirections) {
      for (const std::int64_t bytes : s.copy_bytes) {
        if (!r.time_left()) {
          r.skip("copy: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          return;
        }
        const RotationPlan plan = rotation_plan(bytes, r.l2_bytes);
        const auto size = static_cast<std::size_t>(bytes);
        const auto enqueue = [&](std::int64_t i) {
          const std::int64_t offset = i % plan.copies * plan.slot_bytes;
          if (direction == CopyDirection::h2d) {
            ESS_CUDA_CHECK(cudaMemcpyAsync(to_device.data() + offset, host_src, size,
                                           cudaMemcpyHostToDevice, r.stream));
          } else if (direction == CopyDirection::d2h) {
            ESS_CUDA_CHECK(cudaMemcpyAsync(host_dst, from_device.data() + offset, size,
                                           cudaMemcpyDeviceToHost, r.stream));
          } else {
            fork_join.fork(r.stream, r.stream2);
            ESS_CUDA_CHECK(cudaMemcpyAsync(to_device.data() + offset, host_src, size,
                                           cudaMemcpyHostToDevice, r.stream));
            ESS_CUDA_CHECK(cudaMemcpyAsync(host_dst, from_device.data() + offset, size,
                                           cudaMemcpyDeviceToHost, r.stream2));
            fork_join.join(r.stream2, r.stream);
          }
        };
        const std::vector<double> t = r.timer.run(r.stream, enqueue, timing);
        r.add(copy_sample(direction, memory, bytes, compute_stats(t)),
              std::string(to_string(direction)) + " " + std::string(to_string(memory)) + " " +
                  std::to_string(bytes) + " B",
              index, total);
        ++index;
      }
    }
  }
}

void run_d2d(Runner& r) {
  const Sweep& s = r.sweep;
  const auto total = static_cast<std::int64_t>(s.d2d_bytes.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, true, std::nullopt};
  for (const std::int64_t bytes : s.d2d_bytes) {
    if (!r.time_left()) {
      r.skip("d2d: " + std::to_string(total - index) + " of " + std::to_string(total) +
             " samples (" + r.stop_reason() + ")");
      return;
    }
    // Slot: [source | destination], both rotated.
    const std::int64_t dst_offset = round_up(bytes, kDefaultAlignment);
    const RotationPlan plan = rotation_plan(dst_offset + bytes, r.l2_bytes);
    const DeviceBuffer arena = r.random_device_buffer(plan.total_bytes(), FillType::bf16, kCopySeed);
    const auto enqueue = [&](std::int64_t i) {
      std::byte* slot = arena.data() + i % plan.copies * plan.slot_bytes;
      ESS_CUDA_CHECK(cudaMemcpyAsync(slot + dst_offset, slot, static_cast<std::size_t>(bytes),
                                     cudaMemcpyDeviceToDevice, r.stream));
    };
    const std::vector<double> t = r.timer.run(r.stream, enqueue, timing);
    r.add(d2d_sample(bytes, compute_stats(t)), std::to_string(bytes) + " B", index, total);
    ++index;
  }
}

}  // namespace ess::bench
