#include "sim/cli/serving_prepare.h"

#include <algorithm>
#include <string>

#include "sim/config/config_error.h"
#include "sim/serving/prefill_pool.h"

namespace ess {

void check_serving_scenario(const Scenario& s) {
  if (s.parallelism.tensor_parallel != 1) {
    throw ConfigError(s.origin, "/serving", "serving mode models attention data parallelism (each GPU its own requests): "
                                            "parallelism.tensor_parallel must be 1, got " +
                                                std::to_string(s.parallelism.tensor_parallel));
  }
  if (s.cache.nvme) {
    throw ConfigError(s.origin, "/serving", "serving mode does not model the NVMe tier yet: remove cache.nvme");
  }
}

Prepared prepare(const Scenario& s) {
  check_serving_scenario(s);
  std::vector<Request> requests = arrivals(*s.serving, s.seed);
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  for (const auto& r : requests) {
    const std::int64_t n = r.prompt_tokens + r.output_tokens;
    lo = lo == 0 ? n : std::min(lo, n);
    hi = std::max(hi, n);
  }
  if (requests.empty()) lo = hi = std::max<std::int64_t>(1, s.workload.context_length);
  ServingMemory memory(s, lo, hi, s.serving->max_batch_per_gpu);
  TableGrid grid = table_grid(s, memory, requests);
  return {std::move(requests), std::move(memory), std::move(grid)};
}

ServingRun serve(const Scenario& s, const Prepared& p, const StepModel& model, ChunkModel* chunks) {
  const PrefillPoolConfig& pf = s.serving->prefill;
  if (pf.disaggregated()) {
    const StepTable prefill = build_prefill_table(s, prefill_table_grid(s, p.requests));
    return run_disaggregated(s, p.requests, model, p.memory, prefill);
  }
  if (pf.colocated()) {
    ChunkModel local;
    ChunkModel& m = chunks != nullptr ? *chunks : local;
    m = build_chunk_model(s, p.memory, p.grid, chunk_table_grid(s, p.requests), p.requests);
    return run_serving(s, p.requests, model, p.memory, &m);
  }
  return run_serving(s, p.requests, model, p.memory);
}

}  // namespace ess
