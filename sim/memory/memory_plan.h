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
#include "sim/config/scenario.h"

namespace ess {

struct MemoryLine {
  std::string name;  // "weights", "latent_cache", ...
  Bytes bytes;
  std::string detail;  // how it was computed, for the out-of-memory report
};

struct MemoryBudget {
  Bytes capacity;                   // HBM per GPU
  std::vector<MemoryLine> lines;    // weights, caches, activations, runtime, reserve (in that order)
  [[nodiscard]] Bytes used() const;
  [[nodiscard]] Bytes free() const { return capacity - used(); }
  [[nodiscard]] bool fits() const { return used() <= capacity; }
  [[nodiscard]] Bytes line(const std::string& name) const;  // 0 when absent
  // The budget line by line, like an out-of-memory report.
  [[nodiscard]] std::string report() const;
};

// Thrown when no batch fits, or a requested batch does not: bad input, reported with the budget.
class CapacityError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Per-GPU memory of `scenario` at `batch_per_gpu` requests per GPU.
[[nodiscard]] MemoryBudget plan_memory(const Scenario& scenario, std::int64_t batch_per_gpu);

// Components, exposed for tests and reports.
[[nodiscard]] Bytes weight_bytes_per_gpu(const Scenario& scenario);
// Cache bytes of one request on one GPU (latent or KV, and indexer), at `tokens` cached tokens.
[[nodiscard]] Bytes kv_cache_bytes_per_request(const Scenario& scenario, std::int64_t tokens);
[[nodiscard]] Bytes indexer_cache_bytes_per_request(const Scenario& scenario, std::int64_t tokens);
// Cached tokens per request the capacity must hold: the context plus depth per decode step.
[[nodiscard]] std::int64_t cache_tokens(const Scenario& scenario);

// The scenario's batch if it fits (CapacityError with the budget if not), or for "max" the largest
// batch that fits (CapacityError if not even one request does).
[[nodiscard]] std::int64_t resolve_batch(const Scenario& scenario);

}  // namespace ess
