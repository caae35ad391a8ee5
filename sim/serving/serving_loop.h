// The serving loop: requests arrive, wait in a FCFS queue, join the decode batch (continuous
// batching) when memory and the adaptive controller's cap allow, decode a step at a time with
// the step time of the step-time model, and leave when their output is complete. Pure (no
// SimGrid): the step model is a table (step_table.h).
//
// Step by step, at time t:
//  1. arrivals up to t join the queue;
//  2. admission, in arrival order, stopping at the first request that cannot be admitted (no
//     overtaking): its GPU is the one with the fewest requests among those below the cap with
//     HBM (and, when offloaded, socket host memory) for its final length (serving_memory.h);
//     ties go to the lowest GPU. The decode node receives the prefilled cache (PD-disaggregated:
//     prefill runs elsewhere), so admission costs no step time here;
//  3. with no request in the batch the GPUs idle until the next arrival;
//  4. one decode step for everyone: time and utilisation from the step model at (requests on
//     the fullest GPU, mean context, offloaded share). Every request gets floor(a) tokens plus
//     one more with probability a - floor(a), a = workload.mtp.acceptance (capped at what it
//     still needs), from its own random stream, so its tokens do not depend on the schedule;
//  5. the controller sees the step; finished requests free their memory.
// The run ends when every request has finished, or at duration + drain_limit (the rest are
// reported incomplete).
//
// A closed loop (serving.arrivals.process "concurrency"): the requests not sent yet come last with
// arrival kNotSent; each completion sends the next one at its finish time (its arrival is set
// then, in run.requests), so at most `concurrency` are in flight; duration is 0 and drain_limit
// the run's limit.
//
// Colocated prefill (serving.prefill.mode "colocated"): an admitted request first prefills on its
// GPU. Each step a GPU spends serving.prefill.tokens_per_gpu tokens: its decoding requests' query
// tokens first, the rest on chunks of its prefilling prompts in admission order (vLLM's and
// SGLang's decode-first chunked prefill). The step costs the decode step of the decoding requests
// plus what the chunks of the GPU whose chunks cost the most add (ChunkModel, step_table.h); a
// step with chunks only costs the chunk model's mixed step. A prompt whose last chunk ran has its
// first token at the step's end (TTFT) and decodes from the next step; its HBM and host memory
// are held from admission. Under engine.prefill_schedule "prefill_first" (vLLM V0, SGLang) a
// replica with prompts waiting spends its whole budget on their chunks and its decoding requests
// get no token that step (their next inter-token gap spans the wait); the step's decode part is
// the other replicas' (attention DP ranks step together).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/controller.h"
#include "sim/serving/prefill_pool.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/step_table.h"

namespace ess {

struct RequestOutcome {
  Request request;
  int gpu = -1;
  bool offloaded = false;     // latent cache in host memory (false: GPU-only)
  double admitted = -1.0;     // seconds; -1: never admitted
  double first_token = -1.0;  // end of its first decode step
  double finish = -1.0;       // end of its last decode step; -1: incomplete
  std::int64_t generated = 0;
  [[nodiscard]] bool completed() const { return finish >= 0.0; }
};

// Tokens a request got after waiting out steps that ran prompt chunks alone on its replica
// (engine.prefill_schedule "prefill_first"): the gap since its previous tokens spans them.
struct StalledChunk {
  double gap = 0.0;  // seconds since its previous tokens
  std::int32_t tokens = 0;
};

struct ServingStep {
  double start = 0.0;
  double time = 0.0;
  double utilization = 0.0;
  // One sigma of `time` by the calibration band (step_table.h StepPoint::sigma); the prompt
  // chunks' share at the decode part's relative band.
  double sigma = 0.0;
  std::int32_t batch_max = 0;  // requests on the fullest GPU
  std::int32_t active = 0;     // requests in the batch (decoding or, colocated, prefilling), all GPUs
  std::int32_t queued = 0;     // waiting after admission
  std::int32_t cap = 0;        // the controller's cap during the step
  double context_mean = 0.0;      // decoding requests (0 when none)
  double offloaded_share = 0.0;
  // Colocated prefill: prompt tokens prefilled in the step (all GPUs) and the time they added.
  std::int64_t prefill_tokens = 0;
  double prefill_time = 0.0;
  // Inter-token gaps of this step: chunks[k] requests got k tokens at its end after an earlier
  // chunk (their first chunk is their TTFT, not an ITL).
  std::vector<std::int32_t> chunks;
  std::vector<StalledChunk> stalled;  // requests whose gap spans more than this step, one each
};

struct ServingRun {
  std::vector<RequestOutcome> requests;
  std::vector<ServingStep> steps;
  std::vector<CapChange> cap_changes;
  std::int64_t batch_bound = 0;   // requests per GPU memory (or max_batch_per_gpu) allows
  std::int64_t initial_cap = 0;
  double end_time = 0.0;          // last finish, or where the drain limit stopped the run
  double idle_time = 0.0;         // seconds with an empty batch
  std::optional<double> energy;   // joules, steps and idle time, all GPUs (no power model: none)
  // Memory protection and capacity, peaks over the run.
  std::int64_t fallback_requests = 0;  // admitted GPU-only in offload mode
  double host_peak = 0.0;              // bytes, the fullest socket's offloaded latent cache
  double hbm_peak = 0.0;               // bytes, the fullest GPU's caches and activation shares
  std::int64_t blocked_by_memory_steps = 0;  // steps whose queue head waited for memory
  // Disaggregated prefill (serving.prefill): the prefill side of every request, as `requests`
  // (whose arrival is then the request's own, before prefill; the decode loop saw it at `ready`).
  std::optional<PrefillPoolRun> prefill;
};

// A disaggregated run: the prefill pool first, then the decode loop on the requests as they become
// ready (sorted by ready time; ids and so accepted tokens unchanged), outcomes back in arrival order
// with their own arrival times, so TTFT and E2E latency include prefill and the cache transfer.
// `prefill_instances`: the pool's instances (serving.prefill.instances for the scenario's own run).
[[nodiscard]] ServingRun run_disaggregated(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                                           const ServingMemory& memory, const StepTable& prefill_table, int prefill_instances);

// Serving slots: the attention replicas (parallelism.attention_dp), each one GPU or, under
// tensor-parallel attention, tensor_parallel GPUs serving one batch. `chunks`: the chunk
// model, given exactly when serving.prefill.mode is "colocated".
[[nodiscard]] ServingRun run_serving(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                                     const ServingMemory& memory, const ChunkModel* chunks = nullptr);

// Every request fits an empty GPU (its caches and activation share within memory.hbm_budget()):
// ConfigError naming the first that does not, which would otherwise wait forever.
void check_requests_fit(const Scenario& s, const std::vector<Request>& requests, const ServingMemory& memory);

// The seed of the accepted-token streams (one per request, forked by request id).
[[nodiscard]] std::uint64_t acceptance_seed(std::uint64_t scenario_seed);

}  // namespace ess
