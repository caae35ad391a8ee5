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
// Weights, runtime overhead and the reserve are fixed per GPU. Activations grow linearly with the
// requests in a step (sim/memory/memory_plan.cpp's estimate, at the longest request's keys): the part
// that does not grow is fixed, and each admitted request holds its share of the rest besides its
// caches. So a short request costs the others only what it holds: the batch bound is the most of the
// run's own requests, shortest first, that fit one GPU, never the shortest request times a count.
// Under tensor-parallel attention a serving slot is a replica of tensor_parallel GPUs: each of its
// GPUs holds the weights' share and the MLA latent cache of every request of the replica (GQA: its
// kv heads' share), so what one GPU holds bounds the replica's requests.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/run_request.h"

namespace ess {

struct Footprint {
  double hbm = 0.0;          // cache bytes on the request's GPU
  double host = 0.0;         // bytes in its socket's host memory (0 when GPU-only)
  double activations = 0.0;  // its share of the GPU's activations while it is admitted
  [[nodiscard]] double hbm_held() const { return hbm + activations; }  // what admission charges its GPU
};

class ServingMemory {
 public:
  // The run's requests by their lengths (prompt + output tokens, any order, at least one);
  // `batch_bound`: serving.max_batch_per_gpu, or nullopt for what memory allows. A bound above what
  // memory allows is lowered to it (clamped() says so).
  ServingMemory(const Scenario& s, std::vector<std::int64_t> lengths, std::optional<std::int64_t> batch_bound);
  // Requests of `min_tokens` to `max_tokens` tokens, as many of the shortest as one GPU holds.
  ServingMemory(const Scenario& s, std::int64_t min_tokens, std::int64_t max_tokens, std::optional<std::int64_t> batch_bound);

  [[nodiscard]] bool offload() const { return offload_; }
  [[nodiscard]] Footprint offloaded(std::int64_t tokens) const;
  [[nodiscard]] Footprint gpu_only(std::int64_t tokens) const;
  // Per GPU, for what admitted requests hold: their caches and activation shares (results.json's
  // memory.hbm_for_caches_per_gpu; hbm_peak_per_gpu is held against it).
  [[nodiscard]] double hbm_budget() const { return hbm_budget_; }
  [[nodiscard]] double activations_per_request() const { return activations_per_request_; }
  [[nodiscard]] double host_budget() const { return host_budget_; }  // per socket: DRAM x threshold
  [[nodiscard]] double host_capacity() const { return host_capacity_; }
  [[nodiscard]] int sockets() const { return sockets_; }              // over all nodes
  [[nodiscard]] int socket_of(int gpu) const;
  // Requests per GPU admission never exceeds: the most of the run's requests, shortest first, that
  // fit one GPU, or the bound given when it is lower.
  [[nodiscard]] std::int64_t batch_bound() const { return batch_bound_; }
  // The bound given (serving.max_batch_per_gpu) when memory lowered it, else nullopt.
  [[nodiscard]] std::optional<std::int64_t> clamped() const { return clamped_; }
  // Fixed per-GPU memory, bytes: weights, runtime, reserve and the activations no request adds.
  [[nodiscard]] double fixed() const { return fixed_; }
  // Whether memory protection could ever keep a request GPU-only: the GPUs of a socket at the
  // bound, each with offloaded longest requests, would pass the host budget.
  [[nodiscard]] bool fallback_possible() const;

 private:
  void size(std::vector<std::int64_t> lengths, bool repeat_shortest, std::optional<std::int64_t> batch_bound);

  const Scenario* s_;
  DecodeRun own_;  // the scenario's decode system: the cache and activation sizes of its requests
  bool offload_ = false;
  double activations_per_request_ = 0.0;
  std::optional<std::int64_t> clamped_;
  double hbm_budget_ = 0.0;
  double host_budget_ = 0.0;
  double host_capacity_ = 0.0;
  double fixed_ = 0.0;
  std::int64_t max_tokens_ = 0;
  std::int64_t batch_bound_ = 1;
  int sockets_ = 1;
};

}  // namespace ess
