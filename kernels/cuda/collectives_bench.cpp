// Multi-GPU measurements: NVLink peer copies (cudaMemcpyPeerAsync with peer access enabled) and,
// when built with NCCL, all-reduce and all-to-all over the first 2, 4 or 8 GPUs from one process
// (ncclCommInitAll).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_kernels.h"
#include "kernels/cuda/runner.h"

#if defined(ESS_BENCH_HAVE_NCCL)
#include <nccl.h>

#define ESS_NCCL_CHECK(call)                                                         \
  do {                                                                               \
    const ncclResult_t ess_status_ = (call);                                         \
    if (ess_status_ != ncclSuccess) {                                                \
      ::ess::bench::die(__FILE__, __LINE__, #call, ncclGetErrorString(ess_status_)); \
    }                                                                                \
  } while (0)
#endif

namespace ess::bench {

namespace {

constexpr std::uint64_t kPeerSeed = 0x72656570ULL;  // any fixed value
constexpr std::int64_t kBf16Bytes = 2;

void enable_peer_access(int from, int to) {
  ESS_CUDA_CHECK(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clear the sticky-free error state
  } else {
    ESS_CUDA_CHECK(e);
  }
}

// Random bf16 data on `device`, which is left current. Filled on that device's default stream: a
// kernel cannot go to another device's stream.
DeviceBuffer random_buffer_on(int device, std::int64_t bytes, std::uint64_t seed) {
  ESS_CUDA_CHECK(cudaSetDevice(device));
  DeviceBuffer b(bytes);
  launch_fill(b.data(), FillType::bf16, bytes / kBf16Bytes, seed, nullptr);
  ESS_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  return b;
}

}  // namespace

void run_p2p(Runner& r) {
  const Sweep& s = r.sweep;
  const std::vector<PeerPair> pairs = peer_pairs(r.gpu_count);
  if (pairs.empty()) {
    r.skip("p2p (" + std::to_string(r.gpu_count) + " GPU visible)");
    return;
  }
  if (s.p2p_bytes.empty()) return;
  const std::int64_t region = rotation_region(s.p2p_bytes, r.l2_bytes);
  const auto total = static_cast<std::int64_t>(pairs.size() * s.p2p_bytes.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, false, std::nullopt};
  for (const PeerPair& pair : pairs) {
    int can = 0;
    ESS_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, pair.src, pair.dst));
    if (can == 0) {
      r.skip("p2p " + std::to_string(pair.src) + "->" + std::to_string(pair.dst) +
             " (no peer access between them)");
      index += static_cast<std::int64_t>(s.p2p_bytes.size());
      continue;
    }
    enable_peer_access(pair.dst, pair.src);
    enable_peer_access(pair.src, pair.dst);  // leaves src current, for the stream and the timer
    cudaStream_t stream = nullptr;
    ESS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
      const DeviceBuffer dst = random_buffer_on(pair.dst, region, kPeerSeed);
      const DeviceBuffer src = random_buffer_on(pair.src, region, kPeerSeed + 1);
      Timer timer;  // src is current again: the copies are issued on src's stream
      for (const std::int64_t bytes : s.p2p_bytes) {
        if (!r.time_left()) {
          r.skip("p2p: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          break;
        }
        const RotationPlan plan = rotation_plan(bytes, r.l2_bytes);
        const auto enqueue = [&](std::int64_t i) {
          const std::int64_t offset = i % plan.copies * plan.slot_bytes;
          ESS_CUDA_CHECK(cudaMemcpyPeerAsync(dst.data() + offset, pair.dst, src.data() + offset,
                                             pair.src, static_cast<std::size_t>(bytes), stream));
        };
        const std::vector<double> t = timer.run(stream, enqueue, timing);
        r.add(p2p_sample(pair.src, pair.dst, bytes, compute_stats(t)),
              std::to_string(pair.src) + "->" + std::to_string(pair.dst) + " " +
                  std::to_string(bytes) + " B",
              index, total);
        ++index;
      }
    }
    cudaStreamDestroy(stream);
    if (!r.time_left()) break;
  }
  ESS_CUDA_CHECK(cudaSetDevice(r.device));
}

#if defined(ESS_BENCH_HAVE_NCCL)

namespace {

enum class Collective { allreduce, alltoall };

// One communicator over devices 0..gpus-1, with a stream, send and receive buffers and an event
// pair on each.
class Group {
 public:
  Group(int gpus, std::int64_t bytes) : gpus_(gpus) {
    std::vector<int> devices(static_cast<std::size_t>(gpus));
    for (int d = 0; d < gpus; ++d) devices[static_cast<std::size_t>(d)] = d;
    comms_.resize(devices.size());
    ESS_NCCL_CHECK(ncclCommInitAll(comms_.data(), gpus, devices.data()));
    for (int d = 0; d < gpus; ++d) {
      ESS_CUDA_CHECK(cudaSetDevice(d));
      cudaStream_t s = nullptr;
      ESS_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams_.push_back(s);
      cudaEvent_t start = nullptr;
      cudaEvent_t stop = nullptr;
      ESS_CUDA_CHECK(cudaEventCreate(&start));
      ESS_CUDA_CHECK(cudaEventCreate(&stop));
      starts_.push_back(start);
      stops_.push_back(stop);
      send_.push_back(random_buffer_on(d, bytes, kPeerSeed + static_cast<std::uint64_t>(d)));
      recv_.emplace_back(bytes);
    }
  }
  ~Group() {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
    for (std::size_t d = 0; d < streams_.size(); ++d) {
      cudaSetDevice(static_cast<int>(d));
      cudaEventDestroy(starts_[d]);
      cudaEventDestroy(stops_[d]);
      cudaStreamDestroy(streams_[d]);
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  // One collective on every GPU; its time is the slowest GPU's, from when that GPU's stream
  // reached it to when its part finished (a GPU that starts early waits for the others, as an
  // inference step would).
  double time_once(Collective what, std::int64_t bytes) {
    for (int d = 0; d < gpus_; ++d) {
      ESS_CUDA_CHECK(cudaSetDevice(d));
      ESS_CUDA_CHECK(cudaEventRecord(starts_[static_cast<std::size_t>(d)], streams_[static_cast<std::size_t>(d)]));
    }
    ESS_NCCL_CHECK(ncclGroupStart());
    const auto elements = static_cast<std::size_t>(bytes / kBf16Bytes);
    for (std::size_t d = 0; d < comms_.size(); ++d) {
      if (what == Collective::allreduce) {
        ESS_NCCL_CHECK(ncclAllReduce(send_[d].data(), recv_[d].data(), elements, ncclBfloat16,
                                     ncclSum, comms_[d], streams_[d]));
      } else {
        // Equal chunks to every GPU (itself included), as an MoE dispatch with uniform routing.
        const std::size_t chunk = elements / comms_.size();
        const std::int64_t chunk_bytes = static_cast<std::int64_t>(chunk) * kBf16Bytes;
        for (std::size_t p = 0; p < comms_.size(); ++p) {
          const auto peer = static_cast<int>(p);
          const std::int64_t at = static_cast<std::int64_t>(p) * chunk_bytes;
          ESS_NCCL_CHECK(ncclSend(send_[d].data() + at, chunk, ncclBfloat16, peer, comms_[d], streams_[d]));
          ESS_NCCL_CHECK(ncclRecv(recv_[d].data() + at, chunk, ncclBfloat16, peer, comms_[d], streams_[d]));
        }
      }
    }
    ESS_NCCL_CHECK(ncclGroupEnd());
    for (int d = 0; d < gpus_; ++d) {
      ESS_CUDA_CHECK(cudaSetDevice(d));
      ESS_CUDA_CHECK(cudaEventRecord(stops_[static_cast<std::size_t>(d)], streams_[static_cast<std::size_t>(d)]));
    }
    double slowest = 0.0;
    for (int d = 0; d < gpus_; ++d) {
      const auto i = static_cast<std::size_t>(d);
      ESS_CUDA_CHECK(cudaSetDevice(d));
      ESS_CUDA_CHECK(cudaEventSynchronize(stops_[i]));
      float ms = 0.0f;
      ESS_CUDA_CHECK(cudaEventElapsedTime(&ms, starts_[i], stops_[i]));
      slowest = std::max(slowest, static_cast<double>(ms) * 1e-3);
    }
    return slowest;
  }

 private:
  int gpus_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> starts_;
  std::vector<cudaEvent_t> stops_;
  std::vector<DeviceBuffer> send_;
  std::vector<DeviceBuffer> recv_;
};

}  // namespace

void run_collectives(Runner& r) {
  const Sweep& s = r.sweep;
  std::vector<int> sizes;
  for (const int g : s.collective_gpus) {
    if (g <= r.gpu_count) sizes.push_back(g);
  }
  if (sizes.empty() || s.collective_bytes.empty()) {
    r.skip("allreduce and alltoall (" + std::to_string(r.gpu_count) + " GPU visible)");
    return;
  }
  const std::int64_t largest = *std::max_element(s.collective_bytes.begin(), s.collective_bytes.end());
  constexpr Collective kCollectives[] = {Collective::allreduce, Collective::alltoall};
  const auto total = static_cast<std::int64_t>(sizes.size() * 2 * s.collective_bytes.size());
  std::int64_t index = 0;
  for (const int gpus : sizes) {
    Group group(gpus, largest);
    for (const Collective what : kCollectives) {
      for (const std::int64_t bytes : s.collective_bytes) {
        if (!r.time_left()) {
          r.skip("collectives: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          ESS_CUDA_CHECK(cudaSetDevice(r.device));
          return;
        }
        const char* name = what == Collective::allreduce ? "allreduce" : "alltoall";
        if (bytes % (kBf16Bytes * gpus) != 0) {
          r.skip(std::string(name) + " of " + std::to_string(bytes) + " B on " +
                 std::to_string(gpus) + " GPUs (not a whole number of bf16 per GPU)");
          ++index;
          continue;
        }
        std::vector<double> warm;
        for (int w = 0; w < s.warmups; ++w) warm.push_back(group.time_once(what, bytes));
        const std::int64_t reps =
            choose_repetitions(warm.empty() ? 0.0 : compute_stats(warm).median_s, s.repetitions);
        std::vector<double> t;
        for (std::int64_t i = 0; i < reps; ++i) t.push_back(group.time_once(what, bytes));
        const Stats st = compute_stats(t);
        r.add(what == Collective::allreduce ? allreduce_sample(gpus, bytes, st)
                                            : alltoall_sample(gpus, bytes, st),
              std::string(name) + " " + std::to_string(gpus) + " GPUs " + std::to_string(bytes) + " B",
              index, total);
        ++index;
      }
    }
  }
  ESS_CUDA_CHECK(cudaSetDevice(r.device));
}

#else

void run_collectives(Runner& r) {
  r.skip("allreduce and alltoall (ess-bench was built without NCCL)");
}

#endif

}  // namespace ess::bench
