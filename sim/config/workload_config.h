// The "workload" section of a scenario: the decode batch, context and steps (or none for a prefill
// scenario), a prompt chunk mixed into decode steps, MTP speculation and the expert load.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/config/model_config.h"
#include "sim/config/reader.h"

namespace ess {

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

// Reads and checks the section (ConfigError naming the field on bad input); `prefill`: a prefill
// scenario's, which has only the MTP and expert-load fields.
[[nodiscard]] Workload read_workload(ObjectReader& r, const ModelConfig& model, bool prefill);

}  // namespace ess
