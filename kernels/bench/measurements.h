// The measurements JSON (schema "ess-sim/measurements/v1"; every field is explained in
// kernels/README.md). The fitter in calibration/ reads exactly this layout, so samples are built
// only through the typed constructors below, which fix each kind's keys and their order.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/bench/norm_reference.h"
#include "kernels/bench/stats.h"
#include "kernels/bench/sweep.h"

namespace ess::bench {

inline constexpr std::string_view kSchema = "ess-sim/measurements/v1";

struct Clocks {
  std::optional<std::int64_t> sm_mhz;      // peak SM clock (cudaDevAttrClockRate)
  std::optional<std::int64_t> memory_mhz;  // peak memory clock (cudaDevAttrMemoryClockRate)
};

struct Environment {
  std::string tool;                 // "ess-bench <version>"
  std::string date;                 // UTC ISO 8601, when the run started
  std::string host;                 // hostname
  std::string gpu;                  // cudaDeviceProp.name of the measured device
  std::int64_t gpu_count = 0;       // visible CUDA devices
  std::string compute_capability;   // "9.0"
  std::int64_t sm_count = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  Clocks clocks;
  std::string driver;               // kernel driver version, or "unknown"
  std::string cuda_driver_api;      // cudaDriverGetVersion, "12.8"
  std::string cuda_runtime;         // cudaRuntimeGetVersion, "13.0"
  std::string cublas;               // "13.0.0"
  std::optional<std::string> nccl;  // null when built without NCCL
  std::string method;
};

using FieldValue = std::variant<std::int64_t, std::string>;

// One measured point: "kind", its fields in schema order, then its statistics objects ("stats"
// last; gather_interference has "alone" before it).
struct Sample {
  std::string kind;
  std::vector<std::pair<std::string, FieldValue>> fields;
  std::vector<std::pair<std::string, Stats>> stats;

  // The integer field `name`; throws std::out_of_range when there is none.
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  // The string field `name`; throws std::out_of_range when there is none.
  [[nodiscard]] const std::string& text(std::string_view name) const;
  // The statistics `name` ("stats" or "alone"); throws std::out_of_range when there are none.
  [[nodiscard]] const Stats& statistics(std::string_view name = "stats") const;
};

enum class Direction { h2d, d2h };
enum class CopyDirection { h2d, d2h, bidirectional };
enum class HostMemory { pinned, pageable };

[[nodiscard]] std::string_view to_string(Direction d);
[[nodiscard]] std::string_view to_string(CopyDirection d);
[[nodiscard]] std::string_view to_string(HostMemory h);

[[nodiscard]] Sample gemm_sample(std::int64_t m, std::int64_t n, std::int64_t k, GemmDtype dtype,
                                 const Stats& stats);
// dtype is always bf16.
[[nodiscard]] Sample norm_sample(NormKind norm, std::int64_t tokens, std::int64_t hidden,
                                 const Stats& stats);
// bidirectional: `bytes` per direction.
[[nodiscard]] Sample copy_sample(CopyDirection direction, HostMemory memory, std::int64_t bytes,
                                 const Stats& stats);
// calls: cudaMemcpyAsync calls per repetition (rows for per_row, runs for per_run, 0 for
// uva_kernel).
[[nodiscard]] Sample gather_sample(Direction direction, GatherMethod method, std::int64_t rows,
                                   std::int64_t row_bytes, std::int64_t calls, const Stats& stats);
// dtype is always bf16; rows per gather launch; `beside` is the GEMM's time with the gather running.
[[nodiscard]] Sample interference_sample(const GemmPoint& gemm, std::int64_t rows,
                                         std::int64_t row_bytes, const Stats& alone,
                                         const Stats& beside);
[[nodiscard]] Sample d2d_sample(std::int64_t bytes, const Stats& stats);
[[nodiscard]] Sample p2p_sample(int src, int dst, std::int64_t bytes, const Stats& stats);
// bytes: per-GPU buffer (all-reduce) or per-GPU send buffer (all-to-all); dtype always bf16.
[[nodiscard]] Sample allreduce_sample(int gpus, std::int64_t bytes, const Stats& stats);
[[nodiscard]] Sample alltoall_sample(int gpus, std::int64_t bytes, const Stats& stats);

// The whole document. Throws std::invalid_argument if a statistic is NaN or infinite.
[[nodiscard]] std::string measurements_json(const Environment& env,
                                            std::span<const Sample> samples);

// environment.method: one sentence on how every sample was timed, then, when anything was left
// out, "Skipped: <what> (<why>); ...".
[[nodiscard]] std::string method_text(const Sweep& sweep, std::int64_t l2_bytes,
                                      std::span<const std::string> skipped);

// A short table per kind for stdout: how many samples, and the headline rate of the largest
// (GEMM: fastest) point, in GB/s = 1e9 B/s and TFLOP/s = 1e12 FLOP/s.
[[nodiscard]] std::string summary_table(std::span<const Sample> samples);

}  // namespace ess::bench
