// GPU memory capacity: what one GPU holds for a given batch, and the largest batch that fits.
//
// Weights are sharded as the parallelism says (attention and dense MLP by tensor parallelism,
// routed experts by expert parallelism, everything else replicated), fp8 block scales included.
// Caches hold every cached token of every request the GPU serves, for every layer with a cache
// (the main layers and the MTP modules in use), with room for the tokens the run generates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/units.h"
#include "sim/base/error.h"
#include "sim/config/run_request.h"

namespace ess {

// Where the requests of one GPU keep their latent cache in offload mode (cache.mode "offload").
// Host memory per CPU socket is shared by its GPUs; above cache.host_memory_threshold of it, new
// requests fall back to GPU-only placement (their whole latent cache in HBM). With an NVMe tier,
// what does not fit in host memory goes there instead (the oldest tokens, the "cold" entries).
struct OffloadPlacement {
  std::int64_t offloaded = 0;  // requests per GPU whose latent cache is in host memory
  std::int64_t fallback = 0;   // requests per GPU kept GPU-only by memory protection
  Bytes host_latent_per_socket;  // latent cache held in host memory, per socket
  Bytes host_capacity_per_socket;
  Bytes nvme_latent_per_node;      // latent cache held on NVMe, per node
  double cold_fraction = 0.0;      // share of each offloaded cache on NVMe
  std::int64_t pool_entries = 0;   // GPU pool entries per request and layer (pinned window excluded)
};

struct MemoryLine {
  std::string name;  // "weights", "latent_cache", ...
  Bytes bytes;
  std::string detail;  // how it was computed, for the out-of-memory report
};

struct MemoryBudget {
  Bytes capacity;                   // HBM per GPU
  OffloadPlacement placement;       // offload mode only
  std::vector<MemoryLine> lines;    // weights, caches, activations, runtime, reserve (in that order)
  [[nodiscard]] Bytes used() const;
  [[nodiscard]] Bytes free() const { return capacity - used(); }
  [[nodiscard]] bool fits() const { return used() <= capacity; }
  [[nodiscard]] Bytes line(const std::string& name) const;  // 0 when absent
  // The budget line by line, like an out-of-memory report.
  [[nodiscard]] std::string report() const;
};

[[nodiscard]] OffloadPlacement place_requests(const DecodeRun& run, std::int64_t batch_per_gpu);

// Thrown when no batch fits, or a requested batch does not: bad input, reported with the budget.
class CapacityError : public InputError {
 public:
  using InputError::InputError;
};

// Per-GPU memory of `run` at `batch_per_gpu` requests per GPU.
[[nodiscard]] MemoryBudget plan_memory(const DecodeRun& run, std::int64_t batch_per_gpu);

// Components, exposed for tests and reports.
[[nodiscard]] Bytes weight_bytes_per_gpu(const RunBase& run);
// Cache bytes of one request on one GPU (latent or KV, and indexer), at `tokens` cached tokens.
[[nodiscard]] Bytes kv_cache_bytes_per_request(const RunBase& run, std::int64_t tokens);
[[nodiscard]] Bytes indexer_cache_bytes_per_request(const RunBase& run, std::int64_t tokens);
// Cached tokens per request the capacity must hold: the context plus depth per decode step.
[[nodiscard]] std::int64_t cache_tokens(const RunBase& run);

// The run's batch if it fits (CapacityError with the budget if not), or for "max" the largest
// batch that fits (CapacityError if not even one request does).
[[nodiscard]] std::int64_t resolve_batch(const DecodeRun& run);

}  // namespace ess
