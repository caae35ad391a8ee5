// A scenario: what to simulate (model, hardware, parallelism, workload, cache placement, seed),
// loaded from JSON, merged with presets and --set overrides, and fully validated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hardware.h"
#include "sim/config/engine_config.h"
#include "sim/config/model_config.h"
#include "sim/config/prefill_config.h"
#include "sim/config/profile.h"
#include "sim/config/serving_config.h"
#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"
#include "sim/offload/synthetic_access.h"

namespace ess {

inline constexpr std::string_view kScenarioSchema = "ess-sim/scenario/v1";

struct Parallelism {
  int attention_dp = 1;     // data-parallel replicas of attention (each holds its own requests)
  int tensor_parallel = 1;  // GPUs sharing one attention/MLP replica by splitting heads/columns
  int expert_parallel = 1;  // GPUs the routed experts are spread over (1 for dense models)
  // Extra physical copies of routed experts (EPLB's redundant experts): routed + redundant physical
  // experts are spread evenly over the expert-parallel group, so EP sizes that do not divide the
  // routed experts work (EP72 with 288 physical experts). 0 for dense models.
  int redundant_experts = 0;
};

// How the serving engine runs one decode step.
struct ExecutionConfig {
  // 1, or 2 for two-batch overlap (SGLang TBO, vLLM DBO, DeepSeek's decode): the batch runs as two
  // micro-batches on one compute stream, each one's all-to-alls in flight while the other computes.
  int micro_batches = 1;
  // Host time per step on the critical path (scheduling, sampling, launches not hidden by CUDA
  // graphs): the GPUs are idle for it at the start of every step.
  Seconds step_overhead;
};

// The expert-load defaults: `ess-sim cost routing --fit
// calibration/data/public/trtllm/ep_load_imbalance.csv` (DeepSeek-R1 on a machine-translation
// dataset at EP32; one workload's skew: other datasets have other hot experts).
inline constexpr double kDefaultExpertSkew = 1.133;
inline constexpr double kDefaultExpertDrift = 0.083;

struct MtpConfig {
  int depth = 1;            // query tokens per request per step (1 = no speculation)
  double acceptance = 1.0;  // mean tokens accepted per request per step, in [1, depth]
};

// A prompt chunk prefilled in every decode step (sim/graph/decode_step.h): `tokens` new tokens per
// GPU of a prompt whose first `cached` tokens are already in the cache.
struct PrefillChunk {
  std::int64_t tokens = 0;
  std::int64_t cached = 0;
};

struct Workload {
  std::optional<std::int64_t> batch_per_gpu;  // nullopt: "max", the largest batch that fits
  std::int64_t context_length = 0;            // tokens already in the cache of each request
  std::int64_t decode_steps = 0;
  std::optional<PrefillChunk> prefill_chunk;  // decode scenarios: chunked prefill mixed in, or none
  MtpConfig mtp;
  // Expert load (sim/graph/expert_routing.h): sigma of the log-normal long-run popularity of the
  // routed experts of each MoE layer, and of its change from pass to pass (what EPLB's placement,
  // computed from past load, cannot foresee). Defaults fitted to TensorRT-LLM's DeepSeek-R1 load
  // statistics (calibration/data/public/trtllm/ep_load_imbalance.csv, `ess-sim cost routing --fit`).
  double expert_skew = kDefaultExpertSkew;
  double expert_drift = kDefaultExpertDrift;
};

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

// Memory that is not weights, caches or activations.
struct MemoryConfig {
  double reserve_fraction = 0.1;  // of HBM capacity, kept free (fragmentation, allocator slack)
  Bytes runtime_overhead;         // CUDA context, cuBLAS/NCCL/all-to-all buffers and workspaces
};

struct Scenario {
  std::string origin;  // the file it came from
  std::string name;
  std::string description;
  std::uint64_t seed = 0;
  ModelConfig model;
  Hardware hardware;
  Parallelism parallelism;
  Workload workload;
  ExecutionConfig execution;
  EngineConfig engine;  // the serving engine's kernels and schedule (scenarios/engines/)
  CacheConfig cache;
  MemoryConfig memory;
  // Present: `ess-sim run` simulates a serving period of arrivals (sim/serving/) instead of a batch.
  std::optional<ServingConfig> serving;
  // Present: `ess-sim run` simulates prefill steps (sim/graph/prefill_step.h) instead of decode
  // steps; the workload's batch, context and decode steps are then not used (and not allowed).
  std::optional<PrefillConfig> prefill;
  // How the hardware was calibrated: calibration_summary() of the profile it came from (a file or
  // a shipped profile), empty for a datasheet preset or an inline description (uncalibrated).
  std::string hardware_calibration;
  // The error band of each calibrated parameter set on this hardware (sim/config/profile.h); none
  // for datasheet presets. Overrides of a profile's fields keep the profile's bands.
  CalibrationBands hardware_bands{};
  // Every value the simulator uses with its source; itself a valid scenario.
  nlohmann::ordered_json resolved;
};

// A command-line override "dotted.path=value". The value is JSON when it parses as JSON
// (numbers, true, null, quoted strings, objects), else taken as a string ("55GB/s", "max").
struct Override {
  std::string argument;  // as typed, for error messages
  std::vector<std::string> path;
  nlohmann::json value;
};

// Parses "a.b.c=value"; ConfigError naming the argument when malformed.
[[nodiscard]] Override parse_override(std::string_view argument);
// Each --set argument parsed, in order.
[[nodiscard]] std::vector<Override> parse_overrides(const std::vector<std::string>& arguments);

// Loads, merges and validates. Throws ConfigError on any bad input.
[[nodiscard]] Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
// The same from text; `origin` names it in errors.
// `base_dir` is the folder relative hardware-profile paths are resolved against (empty: the
// current directory).
[[nodiscard]] Scenario load_scenario_text(std::string_view text, const std::string& origin,
                                          const std::vector<Override>& overrides = {},
                                          const std::filesystem::path& base_dir = {});

// Reads a hardware section alone the way a scenario does: a preset name ("h200-sxm") or the path
// of a hardware profile file (anything with a '/' or ending in .json; relative to the current
// directory). Used by `ess-sim cost --hardware` and `ess-sim calibrate --base`.
[[nodiscard]] Hardware load_hardware_preset(const std::string& name);

// Commands that work on decode steps (sweep, search, compare, validate) refuse a prefill scenario
// with a ConfigError naming `command` and what to use instead.
void require_decode_scenario(const Scenario& s, std::string_view command);

// Prints a resolved document as indented JSON with each {"value", "source"} pair on one line.
[[nodiscard]] std::string format_resolved(const nlohmann::ordered_json& resolved);

}  // namespace ess
