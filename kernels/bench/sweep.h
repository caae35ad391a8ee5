// What ess-bench measures: the GEMM shapes of the model presets and the sizes, token counts and
// row counts of every sweep, for the default run (about 3-5 minutes on an H100/H200) and --quick
// (a smoke test well under a minute). Pure data, so tests can check it without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/stats.h"

namespace ess::bench {

enum class GemmDtype { bf16, fp16, fp8 };

[[nodiscard]] std::string_view to_string(GemmDtype d);

// One weight matrix of a model: Y[m x n] = X[m x k] W[k x n] for m decode tokens. `layer` is the
// simulator's op name (sim/graph/weight_gemms.h), e.g. "q_a_kv_a".
struct GemmShape {
  std::string model;
  std::string layer;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// The built-in list: the weight GEMMs the simulator issues (sim/graph/weight_gemms.h) for the
// model presets DeepSeek-V3.2-Exp (TP 1, MTP 2), Llama-2-7B and Llama-3.1-70B (TP 1), each (n, k)
// once under the op that first issues it; sources beside each in sweep.cpp. The per-head products
// of absorbed MLA (q_absorb, v_up: batched GEMMs) are left out, and the routed experts are
// measured as one plain GEMM of an expert's shape. tests/contract/bench_shapes_test.cpp checks
// that this is exactly what weight_gemms() gives for the presets.
[[nodiscard]] const std::vector<GemmShape>& model_gemm_shapes();

// `first`, then every shape of `rest` whose (n, k) is not already there (the shapes file of
// --gemm-shapes ahead of the built-in list, so that --max-seconds cuts the built-in ones first).
[[nodiscard]] std::vector<GemmShape> shapes_first(const std::vector<GemmShape>& first,
                                                  const std::vector<GemmShape>& rest);

// The GEMM measured beside a concurrent UVA gather (gather_interference samples).
struct GemmPoint {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

struct Sweep {
  int warmups = 5;
  RepetitionPolicy repetitions;

  std::vector<std::int64_t> gemm_m;       // decode tokens per GEMM
  std::vector<GemmShape> gemm_shapes;
  std::vector<GemmDtype> gemm_dtypes;     // fp8 is dropped at run time below compute capability 8.9

  std::vector<std::int64_t> norm_tokens;
  std::vector<std::int64_t> norm_hidden;  // multiples of 8 (16-byte bf16 vectors)

  std::vector<std::int64_t> copy_bytes;   // host<->device, each direction and both at once

  std::int64_t gather_row_bytes = 0;      // one latent-cache entry
  std::int64_t gather_pool_rows = 0;      // rows in the pinned host pool the rows are drawn from
  std::vector<std::int64_t> gather_rows;

  GemmPoint interference_gemm;
  std::vector<std::int64_t> interference_rows;  // rows per gather launch beside the GEMM

  std::vector<std::int64_t> d2d_bytes;
  std::vector<std::int64_t> p2p_bytes;
  std::vector<std::int64_t> collective_bytes;   // per-GPU buffer
  std::vector<int> collective_gpus;             // communicator sizes, where that many GPUs exist
};

[[nodiscard]] Sweep default_sweep();
[[nodiscard]] Sweep quick_sweep();

// base, base x factor, base x factor^2, ... up to and including `last` (when it is on the
// progression). Throws std::invalid_argument unless 1 <= first <= last and factor >= 2.
[[nodiscard]] std::vector<std::int64_t> geometric(std::int64_t first, std::int64_t last,
                                                  std::int64_t factor);

// The number of samples a sweep produces on a machine with `gpus` visible GPUs (the p2p and
// collective counts depend on it) and fp8 available or not, per kind in the measurements JSON
// schema's order (gemm, norm, copy, gather, gather_interference, d2d, p2p, allreduce, alltoall).
struct SampleCounts {
  std::int64_t gemm = 0;
  std::int64_t norm = 0;
  std::int64_t copy = 0;
  std::int64_t gather = 0;
  std::int64_t gather_interference = 0;
  std::int64_t d2d = 0;
  std::int64_t p2p = 0;
  std::int64_t allreduce = 0;
  std::int64_t alltoall = 0;

  [[nodiscard]] std::int64_t total() const {
    return gemm + norm + copy + gather + gather_interference + d2d + p2p + allreduce + alltoall;
  }
};

// `nccl`: whether collectives can run. Assumes every suite is selected.
[[nodiscard]] SampleCounts count_samples(const Sweep& sweep, int gpus, bool fp8, bool nccl);

// The peer pairs measured on `gpus` GPUs: 0 -> 1 and 1 -> 0 (every NVLink pair of an HGX board is
// alike, so one pair both ways characterises the link); none on fewer than 2 GPUs.
struct PeerPair {
  int src = 0;
  int dst = 0;
};
[[nodiscard]] std::vector<PeerPair> peer_pairs(int gpus);

// The gather methods per direction, in the order they are measured.
enum class GatherMethod { per_row, per_run, uva_kernel };
[[nodiscard]] std::string_view to_string(GatherMethod m);

}  // namespace ess::bench
