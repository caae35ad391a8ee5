// The optional "serving" section of a scenario: a period of request arrivals served by
// continuous batching on the scenario's GPUs (sim/serving/), instead of a fixed batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/units.h"
#include "sim/base/named.h"

namespace ess {

class ObjectReader;

// Token counts drawn uniformly from the integers in [min, max] (min == max: a fixed length).
struct TokenLengths {
  std::int64_t min = 0;
  std::int64_t max = 0;
  [[nodiscard]] bool fixed() const { return min == max; }
};

// From `at` seconds on, Poisson arrivals come at `rate` requests per second (a load step).
struct RateChange {
  double at = 0.0;
  double rate = 0.0;
};

// How requests arrive:
//   poisson      open loop: Poisson arrivals at `rate` during serving.duration
//   trace        open loop: the rows of a request trace (`file`, `format`)
//   concurrency  closed loop, as `vllm bench serve --max-concurrency C --request-rate inf` and
//                `trtllm-bench throughput --concurrency C` run it: `requests` requests in all, the
//                first `concurrency` sent at t = 0 and each later one the moment an earlier one
//                finishes, so at most `concurrency` are in flight; the run ends when all finish.
inline constexpr Named kArrivalProcesses[] = {
    {"poisson", "open loop: Poisson arrivals at arrivals.rate (and rate_changes) during serving.duration"},
    {"trace", "open loop: the rows of a request trace (arrivals.file in arrivals.format)"},
    {"concurrency", "closed loop: arrivals.requests in all, at most arrivals.concurrency in flight (vllm bench serve --max-concurrency)"},
};
struct ArrivalConfig {
  std::string process = "poisson";  // one of kArrivalProcesses
  double rate = 0.0;                // poisson: requests per second from t = 0
  std::vector<RateChange> rate_changes;  // poisson: later rates, by increasing time
  TokenLengths prompt_tokens;       // poisson, concurrency: the prompt of each request
  TokenLengths output_tokens;       // poisson, concurrency: tokens each request decodes
  std::string file;                 // trace: the file (format below)
  std::string format = "ess-csv";   // trace: one of kTraceFormats (sim/serving/trace_formats.h parses each)
  std::int64_t concurrency = 0;     // concurrency: requests in flight at most, >= 1
  std::int64_t requests = 0;        // concurrency: requests in all, >= 1
  [[nodiscard]] bool closed_loop() const { return process == "concurrency"; }
};

// The request-trace formats a serving trace may be in (parsers: sim/serving/trace_formats.cpp):
//   ess-csv         "arrival_s,prompt_tokens,output_tokens", seconds
//   mooncake-jsonl  Mooncake's trace (kvcache-ai/Mooncake): one JSON object a line, "timestamp" (ms
//                   since the first request), "input_length", "output_length", "hash_ids"
//   azure-csv       Azure's LLM inference traces (Azure/AzurePublicDataset): "TIMESTAMP,ContextTokens,
//                   GeneratedTokens", timestamps "YYYY-MM-DD HH:MM:SS.fffffff"
inline constexpr Named kTraceFormats[] = {
    {"ess-csv", "\"arrival_s,prompt_tokens,output_tokens\", seconds"},
    {"mooncake-jsonl", "Mooncake's trace: a JSON object a line, timestamp (ms), input_length, output_length, hash_ids"},
    {"azure-csv", "Azure's LLM inference traces: TIMESTAMP,ContextTokens,GeneratedTokens"},
};

// Where the adaptive controller's cap starts (serving.controller.initial_cap).
inline constexpr Named kInitialCaps[] = {
    {"model", "the largest batch the step-time table predicts under headroom x p99_target"},
    {"max", "the admission bound: the feedback alone finds the cap"},
};

// The adaptive batch-size controller (sim/serving/controller.h).
struct ControllerConfig {
  bool enabled = true;
  Seconds p99_target = Seconds(0.5);  // P99 step latency to stay under (the ESS documents' 500 ms)
  std::int64_t window = 64;           // recent steps the P99 is taken over
  double decrease = 0.75;             // cap x this when the P99 reaches `headroom` x target
  std::int64_t increase = 1;          // cap + this when the P99 is below it and the cap binds
  double headroom = 0.9;              // act at this fraction of the target, so the target itself holds
  std::string initial_cap{kInitialCaps[0].name};  // a kInitialCaps name
};

// Service-level objectives for goodput, as vLLM's --goodput: a request is good when every
// objective given holds for it. Absent: not checked.
struct SloConfig {
  std::optional<Seconds> ttft;
  std::optional<Seconds> tpot;
  std::optional<Seconds> e2el;
};

// Grid of the step-time table (sim/serving/step_table.h); empty lists: chosen automatically.
struct StepTableConfig {
  std::vector<std::int64_t> batches;   // requests per GPU
  std::vector<std::int64_t> contexts;  // tokens per request
  std::int64_t steps = 2;              // decode steps simulated per grid point
};

// Prices of what a serving run uses (user inputs; none has a default: prices are not facts the
// simulator knows). Each is optional; what is not given is left out of the bill.
struct CostConfig {
  std::optional<double> gpu_hour_usd;          // per GPU per hour (rental, or purchase amortised)
  std::optional<double> host_dram_gb_hour_usd;  // per GB of the nodes' host DRAM per hour
  std::optional<double> energy_kwh_usd;        // per kWh of the GPUs' energy (needs gpu.power)
  [[nodiscard]] bool any() const { return gpu_hour_usd || host_dram_gb_hour_usd || energy_kwh_usd; }
};

// Where the prompts are prefilled.
//   none          the requests arrive prefilled, their caches already on the decode GPUs: TTFT
//                 leaves out prefill and the cache transfer (what serving runs did before).
//   disaggregated `instances` prefill instances of `nodes_per_instance` nodes each, of the scenario's
//                 hardware, model and engine (attention DP and EP over the instance's GPUs, the
//                 scenario's execution), `tokens_per_gpu` prompt tokens per GPU per step; each
//                 request's cache then crosses the network to its decode GPU (ESS: the full latent
//                 cache to pinned host memory, the pool loaded from the prefill's last selections)
//                 (sim/serving/prefill_pool.h).
//   colocated     the decode GPUs prefill too: every step each GPU runs its decode tokens and, up to
//                 `tokens_per_gpu` tokens in all, chunks of the prompts admitted to it (vLLM's
//                 max_num_batched_tokens, SGLang's chunked_prefill_size, TensorRT-LLM's
//                 max_num_tokens), priced as one step (sim/serving/serving_loop.h).
inline constexpr Named kPrefillModes[] = {
    {"none", "the requests arrive prefilled, their caches on the decode GPUs (TTFT leaves prefill out)"},
    {"disaggregated", "prefill instances of the scenario's hardware; each cache crosses the network to its decode GPU"},
    {"colocated", "the decode GPUs prefill too: prompt chunks in the decode steps under prefill.tokens_per_gpu"},
};
// Default step budgets: a disaggregated prefill step of 16,384 tokens per GPU (the LMSYS and
// DeepSeek prefill batch); a colocated step of 8,192 (SGLang's chunked_prefill_size for 35-160 GB
// GPUs, server_args.py).
inline constexpr std::int64_t kDisaggregatedTokensPerGpu = 16384;
inline constexpr std::int64_t kColocatedTokensPerGpu = 8192;
struct PrefillPoolConfig {
  std::string mode = "none";
  int instances = 0;
  int nodes_per_instance = 1;
  std::int64_t tokens_per_gpu = kDisaggregatedTokensPerGpu;
  [[nodiscard]] bool disaggregated() const { return mode == "disaggregated"; }
  [[nodiscard]] bool colocated() const { return mode == "colocated"; }
};

struct ServingConfig {
  Seconds duration;     // arrivals during [0, duration); 0 for a closed loop (arrivals.process "concurrency")
  Seconds drain_limit;  // after it, at most this long for the requests still in flight (a closed loop: the run's limit)
  ArrivalConfig arrivals;
  std::optional<std::int64_t> max_batch_per_gpu;  // admission bound; nullopt: what memory allows
  ControllerConfig controller;
  SloConfig slo;
  StepTableConfig table;
  CostConfig cost;
  PrefillPoolConfig prefill;
};

// Reads the "serving" object. `scenario_dir` resolves a relative trace path. ConfigError on any
// bad value (file, JSON pointer, expectation, did-you-mean for unknown keys).
[[nodiscard]] ServingConfig read_serving(ObjectReader& r, const std::string& scenario_dir);

}  // namespace ess
