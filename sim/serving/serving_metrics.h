// What a serving run reports, defined as vLLM's benchmarks/benchmark_serving.py and SGLang's
// bench_serving.py define them (read, not copied), at the decode node:
//  - TTFT: arrival to the end of the request's first decode step (queueing + one step; prefill
//    runs on another node, PD-disaggregated, and is not included);
//  - TPOT per request: (E2E - TTFT) / (output tokens - 1), requests of more than one token;
//  - ITL: one entry per chunk after the first, the gap between two chunks. With MTP a step
//    delivers 1 or 2 tokens to a request as one chunk, as a streaming server would: vLLM keeps
//    one entry per chunk (`itl_s`); SGLang splits the gap evenly over the chunk's tokens
//    (`itl_per_token_s`);
//  - E2E latency: arrival to the last token;
//  - mean, median, standard deviation (population), p90, p99 (numpy's linear interpolation);
//  - throughput: output tokens and completed requests per second of the run (start to the last
//    completion); goodput: completed requests per second meeting every objective given
//    (vLLM's --goodput: ttft, tpot, e2el);
//  - concurrent sessions per node: requests in the decode batch, time-weighted mean and max;
//  - energy: sum over steps of GPUs x (idle + (busy - idle) x utilisation) x step time, plus
//    the GPUs' idle power while the batch is empty, per generated token.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/step_table.h"

namespace ess {

struct Distribution {
  double mean = 0.0;
  double median = 0.0;
  double std = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
  std::size_t count = 0;
};

// numpy.percentile's default (linear) of `values` (any order), p in [0, 100]; 0 when empty.
[[nodiscard]] double linear_percentile(std::vector<double> values, double p);
[[nodiscard]] Distribution distribution(std::vector<double> values);
// The same over values repeated by integer weights (ITL entries of many requests per step).
[[nodiscard]] Distribution weighted_distribution(std::vector<std::pair<double, double>> value_weight);

// The "serving" object of results.json.
[[nodiscard]] nlohmann::ordered_json serving_json(const Scenario& s, const ServingRun& run, const StepModel& model,
                                                  const ServingMemory& memory);
// The summary printed by `ess-sim run` for a serving scenario.
[[nodiscard]] std::string serving_table(const Scenario& s, const nlohmann::ordered_json& serving);

}  // namespace ess
