// The prefill side of a disaggregated serving run (serving.prefill.mode "disaggregated"): prefill
// instances run the prompts in steps priced by a prefill step table, and each request's cache then
// crosses the network to the decode node. Pure (no SimGrid): the table comes from table_builder.h.
//
// The model:
//  - `instances` instances of the serving scenario's model, engine and execution, each on
//    `nodes_per_instance` nodes of its hardware, attention data parallelism and expert parallelism
//    over the instance's GPUs (prefill_instance_run);
//  - a request goes, when it arrives, to the GPU with the fewest prompt tokens waiting over every
//    instance (ties: the instance free soonest, so an idle one before one with a step in flight;
//    then the lowest instance and GPU), and stays there;
//  - an instance runs a step whenever one of its GPUs has work: each GPU takes up to tokens_per_gpu
//    tokens of its requests in arrival order (a longer prompt continues in the next steps with its
//    first part cached: chunked prefill); the step lasts the table's time at (the most tokens on any
//    of its GPUs, the mean prompt length of the step's requests), all GPUs waiting for the slowest at
//    the MoE all-to-alls (a GPU with less work is priced as if it had as much: for a lone long prompt
//    this overestimates its prefill, whose MoE layers see fewer tokens than a full step's);
//  - a request's prefill ends with the step that computes its last token; its cache then moves to
//    the decode node over links it shares with the other transfers in flight (cache_transfer.h: the
//    prefill GPU's NIC, the decode node's NICs, and PCIe onto the GPU or, under ESS, the switches
//    and DRAM into pinned host memory);
//  - the request then joins the decode queue (serving_loop.h), whose admission and first decode step
//    follow: TTFT = prefill wait + prefill + transfer + decode wait + first decode step.
// Not modelled: the decode side pushing back on prefill (KV memory of requests waiting for decode),
// the transfers' links used by anything else (cache_transfer.h), prefix caching.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/graph/prefill_step.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/cache_transfer.h"
#include "sim/serving/serving_memory.h"
#include "sim/serving/step_table.h"

namespace ess {

// One prefill instance's run at a table point: the serving scenario's model, engine and execution
// on nodes_per_instance nodes of its node type, DP attention and EP over their GPUs, one step of
// `tokens` per GPU of prompts as prefill_table_point places them. ConfigError when the instance's
// GPUs do not divide the physical experts.
[[nodiscard]] PrefillRun prefill_instance_run(const Scenario& serving, std::int64_t tokens, std::int64_t prompt);

// The table point (tokens per GPU, prompt length): whole prompts when tokens >= prompt, else one
// chunk of `tokens` at the prompt's mean cached offset ((prompt - tokens) / 2), the average chunk of
// a prompt prefilled tokens at a time.
struct PrefillTablePoint {
  std::int64_t prompt_length = 0;  // total tokens of each piece's request after the step
  std::int64_t cached = 0;
};
[[nodiscard]] PrefillTablePoint prefill_table_point(std::int64_t tokens, std::int64_t prompt);

struct PrefillOutcome {
  int instance = -1;
  int gpu = -1;            // within the instance
  double start = -1.0;     // its first step's start
  double end = -1.0;       // its last step's end
  double ready = -1.0;     // end + transfer: when it joins the decode queue
  double transfer_s = 0.0;        // sharing the links with the transfers beside it
  double transfer_alone_s = 0.0;  // what it would take with the links to itself
  double transfer_bytes = 0.0;
};

struct PrefillPoolRun {
  std::vector<PrefillOutcome> requests;  // as the input requests
  std::int64_t steps = 0;
  double busy_s = 0.0;  // instance-seconds stepping, summed over instances
  double sigma_s = 0.0;  // the same steps' calibration band (one sigma, step_table.h), summed
  double tokens = 0.0;    // prompt tokens computed
  double capacity = 0.0;  // what the steps could have computed: steps x GPUs x tokens_per_gpu
  double end_time = 0.0;
  int instances = 0;
  int gpus_per_instance = 0;
};

// `instances` instances of serving.prefill's shape (`search pd` tries several; a run, the
// scenario's). `table`: prefill step time at (tokens per GPU, prompt length). Requests in arrival order.
[[nodiscard]] PrefillPoolRun run_prefill_pool(const Scenario& s, int instances, const std::vector<Request>& requests,
                                              const StepTable& table, const ServingMemory& memory);

}  // namespace ess
