#include "sim/config/prefill_config.h"

#include <string>

#include "sim/config/physical_ranges.h"
#include "sim/config/reader.h"

namespace ess {

namespace {
// As workload.context_length and batch sizes elsewhere: far above any real prompt or batch, low
// enough that token counts and their products stay exact in doubles.
constexpr double kMaxPromptLength = 16.0 * 1048576.0;
}  // namespace

PrefillConfig read_prefill(ObjectReader& r) {
  PrefillConfig p;
  p.prompt_length = r.integer("prompt_length", Range::closed(1, kMaxPromptLength));
  p.cached_tokens = r.integer_or("cached_tokens", Range::closed(0, kMaxPromptLength), 0);
  if (p.cached_tokens >= p.prompt_length) {
    r.fail("cached_tokens", "must be below prompt_length (" + std::to_string(p.prompt_length) + "): a prompt computes at least "
                            "one new token, got " + std::to_string(p.cached_tokens));
  }
  p.tokens_per_gpu = r.integer("tokens_per_gpu", Range::closed(1, static_cast<double>(kMaxTokensPerStep)));
  p.steps = r.integer_or("steps", Range::closed(1, 1e4), 2);
  r.finish();
  return p;
}

}  // namespace ess
