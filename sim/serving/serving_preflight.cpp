#include "sim/serving/serving_preflight.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "sim/serving/prefill_pool.h"
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

// One decode-table point as table_builder's measure_point runs it, with a prompt chunk of
// `chunk_tokens` per GPU in each step (colocated prefill).
ResourceEstimate decode_point(const Scenario& s, bool offload, std::int64_t batch, std::int64_t context, std::int64_t chunk_tokens) {
  ResourceEstimate e = estimate_resources(s, batch, s.serving->table.steps, 0, 0.0, EstimatePoint{context, offload});
  if (chunk_tokens > 0) e.wall.push_back(prefill_routing(s, chunk_tokens, s.serving->table.steps));
  return e;
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
  // The offload table's points share their cache simulation through the access store: one per
  // context (its sampled requests do not depend on the batch).
  std::set<std::int64_t> simulated;  // contexts whose cache simulation the store holds
  const auto offload_run = [&](std::int64_t b, std::int64_t c, std::int64_t chunk) {
    ResourceEstimate e = decode_point(s, true, b, c, chunk);
    if (!simulated.insert(c).second) {
      std::erase_if(e.wall, [](const ResourceEstimate::Part& part) { return part.what == kCacheSimulationPart; });
    }
    add_run(total, e, peak, peak_what);
    ++runs;
  };
  if (memory.offload()) {
    for (const std::int64_t c : decode.contexts) {
      for (const std::int64_t b : decode.batches) offload_run(b, c, 0);
    }
  }
  if (!memory.offload() || memory.fallback_possible()) {
    for (const std::int64_t b : decode.batches) {
      for (const std::int64_t c : decode.contexts) {
        add_run(total, decode_point(s, false, b, c, 0), peak, peak_what);
        ++runs;
      }
    }
  }
  const PrefillPoolConfig& pf = s.serving->prefill;
  if (pf.colocated()) {
    const TableGrid chunks = chunk_table_grid(s, requests);
    std::int64_t context = 1;  // the longest request's (the chunk model runs at the mean: an upper bound)
    for (const auto& r : requests) context = std::max(context, r.prompt_tokens + r.output_tokens);
    bool first = true;
    simulated.clear();  // the chunk model has a store of its own
    const auto chunk_run = [&](std::int64_t b, std::int64_t chunk) {
      if (memory.offload()) return offload_run(b, context, chunk);
      add_run(total, decode_point(s, false, b, context, chunk), peak, peak_what);
      ++runs;
    };
    for (const std::int64_t batch : chunk_slice_batches(s, decode)) {
      chunk_run(batch, 0);
      const std::size_t cached = first ? chunks.contexts.size() : 1;
      for (const std::int64_t tokens : chunks.batches) {
        for (std::size_t i = 0; i < cached; ++i) chunk_run(batch, tokens);
      }
      first = false;
    }
    total.wall.front().knob += ", serving.prefill.tokens_per_gpu";
  }
  if (pf.disaggregated()) {
    const TableGrid grid = prefill_table_grid(s, requests);
    for (const std::int64_t tokens : grid.batches) {
      for (const std::int64_t prompt : grid.contexts) {
        add_run(total, estimate_prefill_resources(prefill_instance_scenario(s, tokens, prompt), 1), peak, peak_what);
        ++runs;
      }
    }
    total.wall.front().knob += ", serving.prefill.tokens_per_gpu";
  }
  total.wall.front().what = "step-table runs (" + std::to_string(runs) + ")";
  total.memory.push_back({"largest step-table run", peak_what, peak});
  return total;
}

}  // namespace ess
