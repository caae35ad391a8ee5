#include "sim/serving/serving_run.h"

#include <algorithm>
#include <string>

#include "sim/config/config_error.h"
#include "sim/serving/prefill_pool.h"
#include "sim/serving/serving_metrics.h"
#include "sim/serving/serving_preflight.h"

namespace ess {

void check_serving_scenario(const Scenario& s) {
  if (s.parallelism.tensor_parallel != 1 && s.cache.mode == CacheMode::offload) {
    throw ConfigError(s.origin, "/cache/mode",
                      "serving with tensor-parallel attention (parallelism.tensor_parallel " +
                          std::to_string(s.parallelism.tensor_parallel) +
                          ") keeps the latent cache on the GPUs: which socket holds a replica's offloaded cache when its "
                          "GPUs span sockets, and whether its TP ranks fetch one copy or each their own, is not modelled; "
                          "use cache.mode \"gpu\", or tensor_parallel 1");
  }
  if (s.cache.nvme) {
    throw ConfigError(s.origin, "/serving", "serving mode does not model the NVMe tier yet: remove cache.nvme");
  }
}

Prepared prepare(const Scenario& s, const ResourceLimits& limits) {
  check_serving_scenario(s);
  ResourceEstimate estimate = estimate_requests(s);
  enforce_limits(estimate, limits);
  std::vector<Request> requests = arrivals(*s.serving, s.seed);
  std::vector<std::int64_t> lengths;
  lengths.reserve(requests.size());
  for (const auto& r : requests) lengths.push_back(r.prompt_tokens + r.output_tokens);
  const std::int64_t none = std::max<std::int64_t>(1, s.workload.context_length);
  ServingMemory memory = requests.empty() ? ServingMemory(s, none, none, s.serving->max_batch_per_gpu)
                                          : ServingMemory(s, std::move(lengths), s.serving->max_batch_per_gpu);
  // A request no GPU holds is named before any step table is built.
  check_requests_fit(s, requests, memory);
  TableGrid grid = table_grid(s, memory, requests);
  std::int64_t runs = 0;
  const ResourceEstimate tables = estimate_tables(s, memory, grid, requests, runs);
  estimate.memory.insert(estimate.memory.end(), tables.memory.begin(), tables.memory.end());
  estimate.wall.insert(estimate.wall.end(), tables.wall.begin(), tables.wall.end());
  enforce_limits(estimate, limits);
  return {std::move(requests), std::move(memory), std::move(grid), std::move(estimate), runs};
}

ServingTables build_tables(const Scenario& s, const Prepared& p) {
  const PrefillPoolConfig& pf = s.serving->prefill;
  ServingTables t;
  t.model = build_step_model(s, p.memory, p.grid);
  if (pf.disaggregated()) t.prefill = build_prefill_table(s, prefill_table_grid(s, p.requests));
  if (pf.colocated()) t.chunks = build_chunk_model(s, p.memory, p.grid, chunk_table_grid(s, p.requests), p.requests);
  return t;
}

ServingRun serve(const Scenario& s, const Prepared& p, const ServingTables& tables, int prefill_instances) {
  const PrefillPoolConfig& pf = s.serving->prefill;
  if (pf.disaggregated()) return run_disaggregated(s, p.requests, tables.model, p.memory, tables.prefill, prefill_instances);
  return run_serving(s, p.requests, tables.model, p.memory, pf.colocated() ? &tables.chunks : nullptr);
}

ServingOutcome simulate_serving(const Scenario& s, const ResourceLimits& limits) {
  Prepared p = prepare(s, limits);
  ServingTables tables = build_tables(s, p);
  ServingRun run = serve(s, p, tables, s.serving->prefill.instances);
  nlohmann::ordered_json serving = serving_json(s, run, tables.model, p.memory);
  return {std::move(p), std::move(tables), std::move(run), std::move(serving)};
}

}  // namespace ess
