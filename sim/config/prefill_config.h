// The optional "prefill" section of a scenario: `ess-sim run` simulates prefill steps (a batch of
// prompt tokens through the model, sim/graph/prefill_step.h) instead of decode steps.
#pragma once

#include <cstdint>

namespace ess {

class ObjectReader;

struct PrefillConfig {
  std::int64_t prompt_length = 0;   // tokens of each prompt
  // Tokens of each prompt already in the cache (a later chunk of a chunked prefill, or a prefix-cache
  // hit): each prompt computes prompt_length - cached_tokens new tokens, attending to all before.
  std::int64_t cached_tokens = 0;
  std::int64_t tokens_per_gpu = 0;  // new tokens per GPU per step (under TP: per GPU of a replica x tp per replica)
  std::int64_t steps = 2;           // prefill steps simulated (each a fresh batch with its own routing)
};

// Reads and validates the section (ConfigError naming the field on bad input).
[[nodiscard]] PrefillConfig read_prefill(ObjectReader& r);

}  // namespace ess
