// What one run of the simulator prices: the scenario's system (model, node type, engine, cache
// policies, memory settings, seed) on a layout of GPUs, doing one kind of work. The loaded Scenario
// is never copied or edited to make a run: `ess-sim run` turns it into its own request once
// (run_request), and serving makes the others (step-table points, a prefill instance) from it.
//
//   DecodeRun   decode steps of a batch (sim/graph/decode_step.h): the workload, where the latent
//               cache lives, and whether the hardware's memory bounds the batch
//   PrefillRun  prefill steps (sim/graph/prefill_step.h): the prompts and tokens of each step
//
// The decode and prefill stacks read the layout, workload and cache mode from the request and
// only the rest from `system`: a request that differs from its scenario prices what it says.
#pragma once

#include <string>
#include <optional>
#include <variant>
#include <vector>

#include "models/hardware.h"
#include "sim/config/scenario.h"

namespace ess {

// Where a run's memory ends. `hardware`: the GPU's HBM and the host's DRAM, with the cache's
// host-memory threshold (the batch must fit; above the threshold requests stay GPU-only).
// `unbounded`: no capacity limits any batch and every request is offloaded (serving's step tables
// price each point; serving's own memory plan decides what is admitted).
enum class MemoryBound { hardware, unbounded };

// What decode and prefill runs share: the system, the machine and layout, and how its model runs.
struct RunBase {
  const Scenario* system = nullptr;  // read for everything the fields below do not override
  // The machine: the scenario's node type, `nodes` of them (hardware.nodes for the scenario's own).
  Hardware hardware;
  Parallelism parallelism;
  // Decode runs: the batch, context, steps and prompt chunk. Both: MTP depth and acceptance, and
  // the expert load (prefill runs use only these).
  Workload workload;

  [[nodiscard]] int gpus() const { return hardware.total_gpus(); }
};

struct DecodeRun : RunBase {
  CacheMode cache_mode = CacheMode::gpu;
  MemoryBound memory = MemoryBound::hardware;
  // Serving under tensor-parallel attention prices steps by the replica's requests, any count:
  // when set, every replica serves this many requests and workload.prefill_chunk's tokens are the
  // replica's (else batch_per_gpu x tensor_parallel requests and chunk tokens per GPU x
  // tensor_parallel). workload.batch_per_gpu must then be ceil(replica_requests / tensor_parallel).
  std::optional<std::int64_t> replica_requests;

  [[nodiscard]] bool offload() const { return cache_mode == CacheMode::offload; }
  // The capacities the memory plan uses: the hardware's, or unbounded.
  [[nodiscard]] Bytes hbm_capacity() const;
  [[nodiscard]] Bytes host_capacity_per_socket() const;
  // Of host capacity, the share offloaded requests may fill (1 when unbounded).
  [[nodiscard]] double host_memory_threshold() const;
};

struct PrefillRun : RunBase {
  PrefillConfig work;
};

using RunRequest = std::variant<DecodeRun, PrefillRun>;

// The scenario's own decode run: its hardware, layout, workload and cache mode, bounded by its
// memory. InternalError for a prefill scenario.
[[nodiscard]] DecodeRun decode_run(const Scenario& s);
// The scenario's decode system running another workload.
[[nodiscard]] DecodeRun decode_run(const Scenario& s, const Workload& workload, CacheMode cache_mode, MemoryBound memory);
// The scenario's own prefill run (InternalError without a prefill section).
[[nodiscard]] PrefillRun prefill_run(const Scenario& s);
// The scenario's node type and model on `nodes` nodes laid out as `parallelism`, prefilling `work`.
[[nodiscard]] PrefillRun prefill_run(const Scenario& s, int nodes, const Parallelism& parallelism, const PrefillConfig& work);
// What `ess-sim run` simulates for a decode or prefill scenario (not serving: sim/serving/serving_run.h).
[[nodiscard]] RunRequest run_request(const Scenario& s);

// The scenario's node type, `nodes` of them.
[[nodiscard]] Hardware with_nodes(const Hardware& hardware, int nodes);

// The --set overrides that put `s` on `nodes` nodes, its layout scaled (what `search gpus` and
// `search pd` probe): DP attention over every GPU (tp kept), EP over every GPU when the scenario has
// it so; empty when the GPUs do not divide into its TP groups.
[[nodiscard]] std::vector<std::string> scaled_layout(const Scenario& s, int nodes);

}  // namespace ess
