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
#include "sim/config/cache_config.h"
#include "sim/config/engine_config.h"
#include "sim/config/model_config.h"
#include "sim/config/prefill_config.h"
#include "sim/config/profile.h"
#include "sim/config/serving_config.h"

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
