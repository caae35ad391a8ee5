// The "cache" section of a scenario: where the latent cache lives (on the GPU, or offloaded to
// host memory with a GPU pool per request and layer, ESS), the offload policies by their registry
// names with the parameters they declare, how misses cross PCIe, the access model, prefetch, the
// sampled cache simulation and an optional NVMe tier (scenarios/README.md "cache").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/units.h"
#include "sim/config/model_config.h"
#include "sim/config/reader.h"
#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"
#include "sim/offload/overlap.h"
#include "sim/offload/policy_params.h"
#include "sim/offload/prefetch.h"
#include "sim/offload/synthetic_access.h"

namespace ess {

enum class CacheMode { gpu, offload };
// How missed latent entries cross PCIe: a UVA gather kernel reading host rows from the SMs, or
// one cudaMemcpyAsync per contiguous run of rows on a copy engine.
enum class TransferPath { gather, copy };

[[nodiscard]] std::string_view to_string(TransferPath t);

// Where the selected entries come from: the synthetic generator or a recorded trace.
struct AccessConfig {
  std::string model{kDefaultAccessModel};  // a registered access model (sim/offload/access_model.h)
  std::string file;                 // replay: the trace file (relative paths: to the scenario)
  // synthetic: its locality (sim/config/synthetic_locality.h); layers, top_k and seed are set by
  // the run from the model and the scenario seed.
  SyntheticAccessParams synthetic;
};

// An optional NVMe tier below host memory: entries that do not fit in host memory live there.
struct NvmeConfig {
  Bytes capacity;
  BytesPerSecond bandwidth;
  Seconds latency;
};

// Offload: prefetch ahead of the indexer (sim/offload/prefetch.h).
struct PrefetchSettings {
  std::string policy{kDefaultPrefetchPolicy};  // a registered prefetch policy
  // Policies that prefetch only:
  std::string predictor;             // a registered predictor
  int lookahead = 1;                 // layer l's prefetch is issued once layer l - lookahead has selected
  std::int64_t buffer_entries = 0;   // staging buffer per request and layer in flight: most entries prefetched
  std::string model;                 // predictor "learned": its heat model file (resolved path), else ""
};

struct CacheConfig {
  CacheMode mode = CacheMode::gpu;
  // Offload only. GPU pool per request and layer: a ratio of the context (the paper's SMR) or a
  // fixed number of entries; plus the most recent tokens, always resident.
  std::optional<double> pool_ratio;
  std::optional<std::int64_t> pool_entries;
  std::int64_t pinned_recent = 0;
  std::string eviction{kDefaultEviction};  // a registered eviction policy (sim/offload/eviction.h)
  // cache.<name> of every parameter an eviction policy declares (sim/offload/policy_params.h), the
  // chosen policy's or not (a sweep may vary the policy), each at its declared default if not given.
  PolicyValues eviction_params;
  TransferPath transfer = TransferPath::gather;
  // How a layer's miss fetch overlaps its attention: a registered overlap policy
  // (sim/offload/overlap.h: serial, da, dba, auto).
  std::string overlap{kDefaultOverlap};
  AccessConfig access;
  PrefetchSettings prefetch;
  std::int64_t sampled_requests = 8;  // requests simulated exactly; the batch is scaled from them
  std::int64_t warmup_windows = 32;   // prefill windows whose selections warm the pool
  double host_memory_threshold = 0.9;  // above it, new requests stay GPU-only
  std::optional<NvmeConfig> nvme;

  // Pool entries per request and layer at `context` cached tokens (pinned window excluded).
  [[nodiscard]] std::int64_t pool_capacity(std::int64_t context) const;
};

// Reads and checks the section (ConfigError naming the field on bad input). `indexer_layers`: the
// main layers plus the MTP modules in use (the layers the cache simulation runs); `scenario_dir`:
// the folder relative file paths (cache.access.file, cache.prefetch.model) are resolved against.
[[nodiscard]] CacheConfig read_cache(ObjectReader& r, const ModelConfig& model, int indexer_layers,
                                     const std::string& scenario_dir);

}  // namespace ess
