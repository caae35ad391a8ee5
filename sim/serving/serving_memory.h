// Memory accounting of a serving run: what one admitted request holds on its GPU (HBM) and on
// its CPU socket (pinned host memory), and what each has for caches.
//
// A request reserves its final length (prompt + output tokens) at admission, so a request once
// admitted never runs out of memory and is never preempted (vLLM would preempt and recompute;
// SGLang reserves part of the output). Per request, from sim/memory/memory_plan.h's formulas:
//  - GPU-only (cache.mode "gpu", or offload mode's memory protection): the latent (or KV) cache
//    and the indexer cache in HBM;
//  - offloaded (ESS): the GPU pool (pool_ratio or pool_entries of the length, at least top-k
//    entries, plus the pinned recent window), the indexer cache and two top-k landing buffers in
//    HBM; the whole latent cache in the socket's host memory. Memory protection: when the
//    socket's offloaded latent cache would pass cache.host_memory_threshold of its DRAM, the
//    request is admitted GPU-only instead (if its HBM allows).
// Weights, runtime overhead, the reserve and the activations (at the admission bound's batch and
// the longest request, an upper bound) are fixed per GPU.
#pragma once

#include <cstdint>

#include "sim/config/scenario.h"

namespace ess {

struct Footprint {
  double hbm = 0.0;   // bytes on the request's GPU
  double host = 0.0;  // bytes in its socket's host memory (0 when GPU-only)
};

class ServingMemory {
 public:
  // `max_tokens`/`min_tokens`: the longest and shortest request (prompt + output) of the run;
  // `batch_bound`: serving.max_batch_per_gpu, or nullopt for what memory allows.
  ServingMemory(const Scenario& s, std::int64_t min_tokens, std::int64_t max_tokens, std::optional<std::int64_t> batch_bound);

  [[nodiscard]] bool offload() const { return offload_; }
  [[nodiscard]] Footprint offloaded(std::int64_t tokens) const;
  [[nodiscard]] Footprint gpu_only(std::int64_t tokens) const;
  [[nodiscard]] double hbm_budget() const { return hbm_budget_; }    // per GPU, for caches
  [[nodiscard]] double host_budget() const { return host_budget_; }  // per socket: DRAM x threshold
  [[nodiscard]] double host_capacity() const { return host_capacity_; }
  [[nodiscard]] int sockets() const { return sockets_; }              // over all nodes
  [[nodiscard]] int socket_of(int gpu) const;
  // Requests per GPU admission never exceeds: the bound given, else the most of the shortest
  // requests that fit one GPU.
  [[nodiscard]] std::int64_t batch_bound() const { return batch_bound_; }
  // Fixed per-GPU memory, bytes: weights, activations, runtime, reserve.
  [[nodiscard]] double fixed() const { return fixed_; }
  // Whether memory protection could ever keep a request GPU-only: the GPUs of a socket at the
  // bound, each with offloaded longest requests, would pass the host budget.
  [[nodiscard]] bool fallback_possible() const;

 private:
  const Scenario* s_;
  bool offload_ = false;
  double hbm_budget_ = 0.0;
  double host_budget_ = 0.0;
  double host_capacity_ = 0.0;
  double fixed_ = 0.0;
  std::int64_t max_tokens_ = 0;
  std::int64_t batch_bound_ = 1;
  int sockets_ = 1;
};

}  // namespace ess
