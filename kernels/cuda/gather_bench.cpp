// Scattered latent-cache rows between pinned host memory and the GPU, three ways (one copy per
// row, one copy per run of adjacent rows, and a UVA kernel reading or writing host memory
// directly), and the UVA gather's effect on a GEMM running beside it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/rows.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_kernels.h"
#include "kernels/cuda/gemm_bench.h"
#include "kernels/cuda/runner.h"

namespace ess::bench {

namespace {

constexpr std::uint64_t kPoolSeed = 0x6c6f6f70ULL;  // any fixed value
constexpr std::uint64_t kRowSeed = 0x73776f72ULL;
constexpr std::int64_t kBf16Bytes = 2;
constexpr std::int64_t kWarpsPerBlock = kRowCopyThreads / 32;
// Rows checked before timing: enough to span many blocks and the pool's whole range.
constexpr std::int64_t kCheckRows = 4096;

// The pinned host pool the rows live in, filled with random data by the GPU through its mapping.
PinnedBuffer make_pool(Runner& r) {
  const std::int64_t bytes = r.sweep.gather_pool_rows * r.sweep.gather_row_bytes;
  r.note("gather: allocating a pinned pool of " + std::to_string(r.sweep.gather_pool_rows) +
         " rows x " + std::to_string(r.sweep.gather_row_bytes) + " B");
  PinnedBuffer pool(bytes);
  launch_fill(pool.device_data(), FillType::bf16, bytes / kBf16Bytes, kPoolSeed, r.stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream));
  return pool;
}

// One 256-thread block (8 warps, one row each at a time) per SM at most: enough loads in flight
// to saturate PCIe (132 SMs x 8 warps x 656 B = 693 KB outstanding against ~100 KB needed at
// 64 GB/s and ~1.5 us), while leaving room on every SM for a GEMM beside it.
int gather_blocks(const Runner& r, std::int64_t rows) {
  const std::int64_t wanted = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, r.prop.multiProcessorCount)));
}

std::vector<std::int64_t> upload_rows(std::int64_t count, std::int64_t pool_rows,
                                      const DeviceBuffer& rows_device) {
  std::vector<std::int64_t> rows = select_rows(count, pool_rows, kRowSeed + static_cast<std::uint64_t>(count));
  std::vector<std::int32_t> narrow(rows.begin(), rows.end());  // pool_rows < 2^31 (checked)
  ESS_CUDA_CHECK(cudaMemcpy(rows_device.data(), narrow.data(), narrow.size() * sizeof(std::int32_t),
                            cudaMemcpyHostToDevice));
  return rows;
}

[[noreturn]] void wrong(const char* what, std::int64_t i, std::int64_t row) {
  std::fprintf(stderr, "ess-bench: the UVA %s kernel is wrong: packed row %lld (pool row %lld) differs\n",
               what, static_cast<long long>(i), static_cast<long long>(row));
  // The suite fails (main() records it and goes on with the next); its samples so far were checked.
  throw std::runtime_error(std::string("the UVA ") + what + " kernel is wrong (packed row " + std::to_string(i) + ")");
}

// The gather must deliver exactly the pool's rows, and the scatter must write exactly them back,
// before either is timed.
void check_row_kernels(Runner& r, const PinnedBuffer& pool, const DeviceBuffer& rows_device) {
  const std::int64_t rb = r.sweep.gather_row_bytes;
  const std::int64_t count = std::min(kCheckRows, r.sweep.gather_pool_rows);
  const std::vector<std::int64_t> rows = upload_rows(count, r.sweep.gather_pool_rows, rows_device);
  const auto* row_index = reinterpret_cast<const std::int32_t*>(rows_device.data());
  const DeviceBuffer packed(count * rb);
  std::vector<std::byte> host(static_cast<std::size_t>(count * rb));

  launch_gather_rows(pool.device_data(), row_index, count, rb, packed.data(), gather_blocks(r, count), 1, r.stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream));
  ESS_CUDA_CHECK(cudaMemcpy(host.data(), packed.data(), host.size(), cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i * rb);
    if (std::memcmp(host.data() + at, pool.data() + rows[static_cast<std::size_t>(i)] * rb,
                    static_cast<std::size_t>(rb)) != 0) {
      wrong("gather", i, rows[static_cast<std::size_t>(i)]);
    }
  }

  // New data for the same rows, scattered back into the pool.
  launch_fill(packed.data(), FillType::bf16, count * rb / kBf16Bytes, kPoolSeed + 1, r.stream);
  launch_scatter_rows(packed.data(), row_index, count, rb, pool.device_data(), gather_blocks(r, count), r.stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream));
  ESS_CUDA_CHECK(cudaMemcpy(host.data(), packed.data(), host.size(), cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i * rb);
    if (std::memcmp(host.data() + at, pool.data() + rows[static_cast<std::size_t>(i)] * rb,
                    static_cast<std::size_t>(rb)) != 0) {
      wrong("scatter", i, rows[static_cast<std::size_t>(i)]);
    }
  }
  r.note("gather: UVA gather and scatter kernels move " + std::to_string(count) +
         " rows exactly");
}

void check_pool_size(const Sweep& s) {
  if (s.gather_pool_rows >= (std::int64_t{1} << 31)) {
    die(__FILE__, __LINE__, "gather", "the row pool must have fewer than 2^31 rows (int32 indices)");
  }
}

}  // namespace

void run_gather(Runner& r) {
  const Sweep& s = r.sweep;
  if (s.gather_rows.empty()) return;
  check_pool_size(s);
  const std::int64_t rb = s.gather_row_bytes;
  const std::int64_t most = *std::max_element(s.gather_rows.begin(), s.gather_rows.end());
  const PinnedBuffer pool = make_pool(r);
  const DeviceBuffer rows_device(std::max(most, kCheckRows) * static_cast<std::int64_t>(sizeof(std::int32_t)));
  check_row_kernels(r, pool, rows_device);
  const auto* row_index = reinterpret_cast<const std::int32_t*>(rows_device.data());
  // The device side of the rows (gather destination, scatter source), rotated.
  std::vector<std::int64_t> footprints;
  for (const std::int64_t count : s.gather_rows) footprints.push_back(count * rb);
  const DeviceBuffer packed = r.random_device_buffer(rotation_region(footprints, r.l2_bytes),
                                                     FillType::bf16, kPoolSeed + 2);

  constexpr Direction kDirections[] = {Direction::h2d, Direction::d2h};
  constexpr GatherMethod kMethods[] = {GatherMethod::per_row, GatherMethod::per_run,
                                       GatherMethod::uva_kernel};
  const auto total = static_cast<std::int64_t>(2 * 3 * s.gather_rows.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, false, std::nullopt};
  for (const Direction direction : kDirections) {
    for (const GatherMethod method : kMethods) {
      for (const std::int64_t count : s.gather_rows) {
        if (!r.time_left()) {
          r.skip("gather: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          return;
        }
        const std::vector<std::int64_t> rows = upload_rows(count, s.gather_pool_rows, rows_device);
        const std::vector<RowRun> runs = merge_runs(rows);
        const RotationPlan plan = rotation_plan(count * rb, r.l2_bytes);
        const int blocks = gather_blocks(r, count);
        const bool h2d = direction == Direction::h2d;
        const cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        const auto copy = [&](std::byte* device, std::byte* host, std::int64_t bytes) {
          ESS_CUDA_CHECK(cudaMemcpyAsync(h2d ? device : host, h2d ? host : device,
                                         static_cast<std::size_t>(bytes), kind, r.stream));
        };
        const auto enqueue = [&](std::int64_t i) {
          std::byte* slot = packed.data() + i % plan.copies * plan.slot_bytes;
          switch (method) {
            case GatherMethod::per_row:
              for (std::size_t j = 0; j < rows.size(); ++j) {
                copy(slot + static_cast<std::int64_t>(j) * rb, pool.data() + rows[j] * rb, rb);
              }
              break;
            case GatherMethod::per_run: {
              std::int64_t done = 0;
              for (const RowRun& run : runs) {
                copy(slot + done * rb, pool.data() + run.first * rb, run.count * rb);
                done += run.count;
              }
              break;
            }
            case GatherMethod::uva_kernel:
              if (h2d) {
                launch_gather_rows(pool.device_data(), row_index, count, rb, slot, blocks, 1, r.stream);
              } else {
                launch_scatter_rows(slot, row_index, count, rb, pool.device_data(), blocks, r.stream);
              }
              break;
          }
        };
        const std::int64_t calls = method == GatherMethod::per_row   ? count
                                   : method == GatherMethod::per_run ? static_cast<std::int64_t>(runs.size())
                                                                     : 0;
        const std::vector<double> t = r.timer.run(r.stream, enqueue, timing);
        r.add(gather_sample(direction, method, count, rb, calls, compute_stats(t)),
              std::string(to_string(direction)) + " " + std::string(to_string(method)) + " " +
                  std::to_string(count) + " rows (" + std::to_string(calls) + " calls)",
              index, total);
        ++index;
      }
    }
  }
}

void run_interference(Runner& r) {
  const Sweep& s = r.sweep;
  if (s.interference_rows.empty()) return;
  check_pool_size(s);
  const std::int64_t rb = s.gather_row_bytes;
  const GemmPoint g = s.interference_gemm;
  const auto total = static_cast<std::int64_t>(s.interference_rows.size());
  const GemmCase gemm(r, g.m, g.n, g.k, GemmDtype::bf16);
  if (!gemm.has_algorithm()) {
    r.skip("gather_interference (cuBLASLt heuristic: " + gemm.why_not() + ")");
    return;
  }
  const std::int64_t most = *std::max_element(s.interference_rows.begin(), s.interference_rows.end());
  const PinnedBuffer pool = make_pool(r);
  const DeviceBuffer rows_device(most * static_cast<std::int64_t>(sizeof(std::int32_t)));
  const auto* row_index = reinterpret_cast<const std::int32_t*>(rows_device.data());
  const DeviceBuffer packed(most * rb);

  cudaEvent_t reference = nullptr;
  cudaEvent_t gather_end = nullptr;
  ESS_CUDA_CHECK(cudaEventCreate(&reference));
  ESS_CUDA_CHECK(cudaEventCreate(&gather_end));
  const auto since = [&](cudaEvent_t e) {
    float ms = 0.0f;
    ESS_CUDA_CHECK(cudaEventElapsedTime(&ms, reference, e));
    return static_cast<double>(ms) * 1e-3;
  };
  const auto gemm_on_stream = [&](std::int64_t i) { gemm.enqueue(i, r.stream); };

  for (std::int64_t index = 0; index < total; ++index) {
    const std::int64_t count = s.interference_rows[static_cast<std::size_t>(index)];
    if (!r.time_left()) {
      r.skip("gather_interference: " + std::to_string(total - index) + " of " +
             std::to_string(total) + " samples (" + r.stop_reason() + ")");
      break;
    }
    upload_rows(count, s.gather_pool_rows, rows_device);
    const int blocks = gather_blocks(r, count);

    // One pass of the gather alone, to size the concurrent launch.
    const auto one_pass = [&](std::int64_t) {
      launch_gather_rows(pool.device_data(), row_index, count, rb, packed.data(), blocks, 1, r.stream2);
    };
    const double pass_s = compute_stats(r.timer.run(r.stream2, one_pass, TimingOptions{2, s.repetitions, false, 5})).median_s;

    const std::vector<double> alone_t = r.timer.run(r.stream, gemm_on_stream, TimingOptions{s.warmups, s.repetitions, false, std::nullopt});
    const Stats alone = compute_stats(alone_t);
    const auto reps = static_cast<std::int64_t>(alone_t.size());

    // Cover warm-ups and repetitions with 50% to spare, plus 5 ms for the host to queue them;
    // doubled on each retry if the gather still ended early.
    double window = static_cast<double>(s.warmups + reps) * alone.median_s * 1.5 + 0.005;
    bool covered = false;
    for (int attempt = 0; attempt < 3 && !covered; ++attempt, window *= 2.0) {
      const double wanted = std::ceil(window / std::max(pass_s, 1e-7)) + 1.0;
      const int passes = static_cast<int>(std::min(wanted, 1e6));
      ESS_CUDA_CHECK(cudaEventRecord(reference, r.stream2));
      ESS_CUDA_CHECK(cudaStreamWaitEvent(r.stream, reference, 0));
      launch_gather_rows(pool.device_data(), row_index, count, rb, packed.data(), blocks, passes, r.stream2);
      ESS_CUDA_CHECK(cudaEventRecord(gather_end, r.stream2));
      const std::vector<double> beside_t = r.timer.run(
          r.stream, gemm_on_stream, TimingOptions{s.warmups, s.repetitions, false, reps});
      ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream2));
      // The gather was launched first, so it began before the GEMMs; it must also end after them.
      covered = since(gather_end) >= since(r.timer.last_stop());
      if (covered) {
        r.add(interference_sample(g, count, rb, alone, compute_stats(beside_t)),
              "bf16 m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" +
                  std::to_string(g.k) + " beside " + std::to_string(count) + "-row gathers x " +
                  std::to_string(passes),
              index, total);
      }
    }
    if (!covered) {
      r.skip("gather_interference with " + std::to_string(count) +
             " rows (the concurrent gather ended before the GEMMs in 3 tries)");
    }
  }
  cudaEventDestroy(reference);
  cudaEventDestroy(gather_end);
}

}  // namespace ess::bench
