#include "sim/serving/serving_preflight.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "sim/serving/serving_loop.h"

namespace ess {

namespace {

// What the serving loop holds per request besides the request and its outcome: its place in the
// queue, its active record while admitted, its per-request tallies in the metrics (an upper bound
// of those containers' share).
constexpr double kLoopBytesPerRequest = 256.0;
// Serving loop time per request and decode step it takes part in: 0.036 s for the 10-minute
// serving-ess-32k run (4,800 requests of 512-1,536 output tokens at acceptance 1.7, about 2.9 M
// request-steps, 12 ns each), doubled for machines slower than the one measured.
constexpr double kSecondsPerRequestStep = 25e-9;

// A count for messages; a double, since absurd inputs are what is being estimated (1e12 requests
// of 1e9 tokens would overflow an integer).
std::string count(double n) {
  char text[48];
  std::snprintf(text, sizeof text, "%.0f", n);
  return text;
}

// Adds `e` to the running total: wall times add up (the runs are sequential), memory is the
// largest single run's (each run frees its memory before the next).
// `peak_what` names the largest part of the largest run and its knob.
void add_run(ResourceEstimate& total, const ResourceEstimate& e, double& peak_memory, std::string& peak_what) {
  total.wall.front().value += e.wall_seconds();
  if (e.memory_bytes() > peak_memory && !e.memory.empty()) {
    peak_memory = e.memory_bytes();
    const auto largest = std::max_element(e.memory.begin(), e.memory.end(),
                                          [](const auto& a, const auto& b) { return a.value < b.value; });
    peak_what = "most of it " + largest->what + (largest->knob.empty() ? "" : ": " + largest->knob);
  }
}

}  // namespace

ResourceEstimate estimate_requests(const Scenario& s) {
  const ServingConfig& c = *s.serving;
  const ArrivalProcess::Load load = arrival_process(c.arrivals.process).expected(c);
  ResourceEstimate e;
  const double per_request = static_cast<double>(sizeof(Request) + sizeof(RequestOutcome)) + kLoopBytesPerRequest;
  e.memory.push_back({"serving requests (" + count(load.requests) + ")", load.knob, load.requests * per_request});
  const double request_steps = load.requests * load.output_tokens / std::max(1.0, s.workload.mtp.acceptance);
  e.wall.push_back({"serving loop (" + count(request_steps) + " request-steps)", load.knob + " x output tokens",
                    request_steps * kSecondsPerRequestStep});
  return e;
}

ResourceEstimate estimate_tables(const Scenario& s, const ServingMemory& memory, const TableGrid& decode,
                                 const std::vector<Request>& requests, std::int64_t& runs) {
  runs = 0;
  ResourceEstimate total;
  total.wall.push_back({"step-table runs", "serving.table (batches, contexts, steps)", 0.0});
  double peak = 0.0;
  std::string peak_what;
  // Offload runs of one table share their cache simulation through its access store: one per
  // context (its sampled requests do not depend on the batch or the chunk).
  std::set<std::int64_t> simulated;  // contexts whose cache simulation the store holds
  const auto price_decode = [&](const DecodeRun& run) {
    ResourceEstimate e = estimate_resources(run, *run.workload.batch_per_gpu, run.workload.decode_steps, 0, 0.0);
    if (run.offload() && !simulated.insert(run.workload.context_length).second) {
      std::erase_if(e.wall, [](const ResourceEstimate::Part& part) { return part.what == kCacheSimulationPart; });
    }
    add_run(total, e, peak, peak_what);
    ++runs;
  };
  const StepModelRuns model = step_model_runs(s, memory, decode);
  for (const DecodeRun& run : model.offload) price_decode(run);
  for (const DecodeRun& run : model.gpu) price_decode(run);
  const PrefillPoolConfig& pf = s.serving->prefill;
  if (pf.colocated()) {
    simulated.clear();  // the chunk model has a store of its own
    for (const ChunkSliceRuns& slice : chunk_model_runs(s, memory, decode, chunk_table_grid(s, requests), requests).slices) {
      price_decode(slice.reference);
      for (const DecodeRun& run : slice.points) price_decode(run);
    }
    total.wall.front().knob += ", serving.prefill.tokens_per_gpu";
  }
  if (pf.disaggregated()) {
    for (const PrefillRun& run : prefill_table_runs(s, prefill_table_grid(s, requests))) {
      add_run(total, estimate_prefill_resources(run, run.work.steps), peak, peak_what);
      ++runs;
    }
    total.wall.front().knob += ", serving.prefill.tokens_per_gpu";
  }
  total.wall.front().what = "step-table runs (" + std::to_string(runs) + ")";
  total.memory.push_back({"largest step-table run", peak_what, peak});
  return total;
}

}  // namespace ess
