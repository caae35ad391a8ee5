#include "sim/engine/preflight.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "models/hardware.h"
#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/op.h"
#include "sim/graph/prefill_step.h"
#include "sim/base/rng.h"
#include "sim/engine/simulation.h"
#include "sim/offload/access_model.h"

namespace ess {

namespace {

// --- Estimation constants -------------------------------------------------------------------------
// Structural counts are upper bounds read off the decode-step builder (sim/graph/decode_step.cpp);
// per-item costs were measured with `/usr/bin/time -v ess-sim run` and `ess-sim bench` on the
// development machine (x86-64, 2 cores, Debian 12, SimGrid 3.32, release build), see sim/README.md
// "Resource limits". They are estimates for refusing runs that cannot finish, not predictions.

// Segments and operators per GPU per layer: a DeepSeek MoE layer with offload and DBA overlap has
// 9 segments and 27 ops, a Llama layer with tensor parallelism 4 and 11.
constexpr double kSegmentsPerLayer = 12.0;
constexpr double kOpsPerLayer = 32.0;
// Step plans alive at once: the GPUs are coupled by collectives, so at most the current and the
// next step's plans are held, plus the one being built.
constexpr double kPlansAlive = 3.0;
// Trace: events per GPU per layer of a traced step (segments, ops, waits, links) and the bytes one
// event takes in memory and as JSON text (both are held while the file is written).
constexpr double kTraceEventsPerLayer = 45.0;
constexpr double kTraceBytesPerEvent = 700.0;
// Cache simulation: bytes per context position of one (request, layer) pool (stamps, slots, the
// queue). Measured (peak RSS less the 40 MB base) at 128K context over 62 layers: LRU 3.2 B with 8
// sampled requests, 2.9 B with 64; the heat policy 6.4 B. 12 B bounds them.
constexpr double kPoolBytesPerPosition = 12.0;
// SimGrid bookkeeping per actor (its context and the part of its stack it touches) and per
// simulated GPU per step (GpuStepTimes and the step vectors).
constexpr double kActorBytes = 96.0 * 1024.0;
constexpr double kStepRecordBytes = 256.0;
// What the process holds before any of the above: code, SimGrid, presets.
constexpr double kBaseBytes = 64.0 * 1048576.0;

// Wall time: SimGrid activities per GPU per layer of a step (compute segments, 4 flows per
// all-to-all, 3 per offload fetch), seconds per activity (`ess-sim bench`: 0.5-1.5 us), seconds per
// routed (token, expert) pick while building a plan, and per selected entry in the cache
// simulation (synthetic top-k draw plus the pool update).
constexpr double kActivitiesPerLayer = 12.0;
constexpr double kSecondsPerActivity = 2.0e-6;
constexpr double kSecondsPerRoutedPick = 30.0e-9;
constexpr double kSecondsPerSelected = 60.0e-9;
// A prefill step routes its tokens in bulk: 1.78 s for DeepSeek's H800 prefill row (2 steps, 32
// GPUs x 16,384 tokens x 8 picks x 61 layers, 5.1e8 picks: 3.5 ns each), doubled as the decode
// constants are for slower machines.
constexpr double kSecondsPerPrefillRoutedPick = 7.0e-9;
// Writing the trace: 10 traced steps of dsv32-baseline-32k (8 GPUs, 62 layers) added 0.8 s to the
// run, 3.6 us per event.
constexpr double kSecondsPerTraceEvent = 4.0e-6;

std::string gigabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

std::string breakdown(const std::vector<ResourceEstimate::Part>& parts, bool bytes) {
  std::vector<ResourceEstimate::Part> sorted = parts;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.value > b.value; });
  std::ostringstream out;
  for (const auto& p : sorted) {
    if (p.value <= 0) continue;
    out << "\n    " << p.what << ": " << (bytes ? gigabytes(p.value) : rounded_duration(p.value));
    if (!p.knob.empty()) out << " (" << p.knob << ")";
  }
  return out.str();
}

}  // namespace

void enforce_limits(const ResourceEstimate& e, const ResourceLimits& limits) {
  if (!limits.enforce) return;
  if (e.memory_bytes() > limits.memory_bytes) {
    throw ResourceError("this run would need about " + gigabytes(e.memory_bytes()) + " of memory, above the " +
                        gigabytes(limits.memory_bytes) + " limit:" + breakdown(e.memory, true) +
                        "\n  turn the setting of the largest part down, or pass --allow-large to run it anyway");
  }
  if (e.wall_seconds() > limits.wall_seconds) {
    throw ResourceError("this run would take about " + rounded_duration(e.wall_seconds()) + " of wall time, above the " +
                        rounded_duration(limits.wall_seconds) + " limit:" + breakdown(e.wall, false) +
                        "\n  turn the setting of the largest part down, or pass --allow-large to run it anyway");
  }
}

std::string describe_estimate(const ResourceEstimate& e) {
  return "about " + gigabytes(e.memory_bytes()) + " of memory:" + breakdown(e.memory, true) + "\n  about " +
         rounded_duration(e.wall_seconds()) + " of wall time:" + breakdown(e.wall, false) + "\n";
}

namespace {

// Routing `tokens_per_gpu` prompt tokens on every GPU for `steps` steps (prompts route in bulk,
// cheaper per token than decode's): a prefill run's part, and a decode step's prompt chunk's.
ResourceEstimate::Part prefill_routing(const RunBase& run, std::int64_t tokens_per_gpu, std::int64_t steps) {
  const auto& m = run.system->model;
  const double gpus = static_cast<double>(run.gpus());
  const double moe_layers = m.moe ? static_cast<double>(m.layers) : 0.0;
  const double picks = m.moe ? static_cast<double>(m.moe->experts_per_token) : 0.0;
  return {"MoE routing of prompt tokens", "GPUs x prompt tokens per GPU x " + std::to_string(steps) + " steps",
          static_cast<double>(steps) * gpus * moe_layers * static_cast<double>(tokens_per_gpu) * picks * kSecondsPerPrefillRoutedPick};
}

// The calls the cache simulation will make (CacheSimulator::warm_up then step): every warm-up
// window with a positive context, then every simulated step.
AccessDemand access_demand(const DecodeRun& run, const DecodeStepBuilder& builder, std::int64_t steps) {
  const Scenario& s = *run.system;
  const auto& c = s.cache;
  AccessDemand d;
  d.layers = builder.layer_count();
  d.top_k = s.model.indexer->top_k;
  d.sampled_requests = c.sampled_requests;
  const std::int64_t context = builder.context_at(0);
  for (std::int64_t w = c.warmup_windows; w >= 1; --w) {
    if (context - w >= 1) d.warmup.push_back({static_cast<int>(-w), context - w});
  }
  d.warmup_setting = "warm-up windows -" + std::to_string(c.warmup_windows) + " to -1 (cache.warmup_windows)";
  for (std::int64_t step = 0; step < steps; ++step) {
    d.steps.push_back({static_cast<int>(step), builder.context_at(static_cast<int>(step))});
  }
  d.steps_setting = "steps 0 to " + std::to_string(steps - 1) + " (workload.decode_steps or --steps)";
  d.context_setting = "workload.context_length = " + std::to_string(run.workload.context_length) +
                      ", growing by workload.mtp.acceptance per step";
  return d;
}

}  // namespace

double ResourceEstimate::memory_bytes() const {
  double total = 0.0;
  for (const auto& p : memory) total += p.value;
  return total;
}

double ResourceEstimate::wall_seconds() const {
  double total = 0.0;
  for (const auto& p : wall) total += p.value;
  return total;
}

ResourceEstimate estimate_resources(const DecodeRun& run, std::int64_t batch_per_gpu, std::int64_t steps,
                                    int trace_steps, double access_model_bytes) {
  const Scenario& s = *run.system;
  const auto& m = s.model;
  const double gpus = static_cast<double>(run.gpus());
  const double ep = static_cast<double>(run.parallelism.expert_parallel);
  const double layers = static_cast<double>(m.layers + std::max<std::int64_t>(0, run.workload.mtp.depth - 1));
  const double moe_layers = m.moe ? layers : 0.0;  // an upper bound: dense layers have no all-to-all
  const double n_steps = static_cast<double>(steps);
  const double tokens = static_cast<double>(batch_per_gpu) * static_cast<double>(run.parallelism.tensor_parallel) *
                        static_cast<double>(run.workload.mtp.depth);
  const bool offload = run.offload();
  const std::int64_t context = run.workload.context_length;

  ResourceEstimate e;
  const std::string gpus_knob = "hardware.nodes x hardware.gpu.count = " +
                                std::to_string(static_cast<long long>(gpus)) + " GPUs";
  const double per_gpu_plan =
      layers * (kSegmentsPerLayer * static_cast<double>(sizeof(Segment)) + kOpsPerLayer * static_cast<double>(sizeof(Op))) +
      moe_layers * 2.0 * 2.0 * ep * static_cast<double>(sizeof(double));
  e.memory.push_back({"step plans", gpus_knob, kPlansAlive * gpus * per_gpu_plan + gpus * ep * 8.0});
  const double actors = gpus * (offload ? 3.0 : 1.0);
  e.memory.push_back({"per-GPU records", gpus_knob + ", " + std::to_string(steps) + " steps",
                      actors * kActorBytes + gpus * n_steps * kStepRecordBytes});
  const double trace_events = static_cast<double>(trace_steps) * gpus * layers * kTraceEventsPerLayer;
  e.memory.push_back({"trace", "--trace-steps " + std::to_string(trace_steps), trace_events * kTraceBytesPerEvent});
  e.wall.push_back({"trace", "--trace-steps " + std::to_string(trace_steps), trace_events * kSecondsPerTraceEvent});
  if (offload) {
    const double final_context = static_cast<double>(context) + n_steps * run.workload.mtp.acceptance;
    const double sampled = static_cast<double>(s.cache.sampled_requests);
    e.memory.push_back({kCacheSimulationPart, "cache.sampled_requests = " + std::to_string(s.cache.sampled_requests),
                        layers * sampled * final_context * kPoolBytesPerPosition});
    e.memory.push_back({"access model", "cache.access", access_model_bytes});
    const double top_k = static_cast<double>(m.indexer ? m.indexer->top_k : 0);
    const double windows = static_cast<double>(s.cache.warmup_windows);
    e.wall.push_back({kCacheSimulationPart, "cache.sampled_requests x (cache.warmup_windows + steps) = " +
                                              std::to_string(s.cache.sampled_requests) + " x " +
                                              std::to_string(static_cast<long long>(windows + n_steps)),
                      (windows + n_steps) * layers * sampled * top_k * kSecondsPerSelected});
  }
  e.memory.push_back({"program", "", kBaseBytes});
  e.wall.push_back({"event simulation", gpus_knob + " x " + std::to_string(steps) + " steps (workload.decode_steps or --steps)",
                    n_steps * gpus * layers * kActivitiesPerLayer * kSecondsPerActivity});
  const double picks = m.moe ? static_cast<double>(m.moe->experts_per_token) : 0.0;
  e.wall.push_back({"MoE routing", gpus_knob + " x batch", n_steps * gpus * moe_layers * tokens * picks * kSecondsPerRoutedPick});
  if (const auto& chunk = run.workload.prefill_chunk) {
    ResourceEstimate::Part routing = prefill_routing(run, chunk->tokens, steps);
    routing.knob = gpus_knob + " x workload.prefill_chunk.tokens x " + std::to_string(steps) + " steps";
    e.wall.push_back(std::move(routing));
  }
  return e;
}


ResourceEstimate estimate_prefill_resources(const PrefillRun& run, std::int64_t steps) {
  const double gpus = static_cast<double>(run.gpus());
  const double layers = static_cast<double>(run.system->model.layers);
  const double n_steps = static_cast<double>(steps);
  const double micro = static_cast<double>(run.system->execution.micro_batches);
  const std::string gpus_knob = "hardware.nodes x hardware.gpu.count = " + std::to_string(static_cast<long long>(gpus)) + " GPUs";
  const std::string steps_knob = std::to_string(steps) + " steps (prefill.steps)";
  ResourceEstimate e;
  const double per_gpu_plan = micro * layers * (kSegmentsPerLayer * static_cast<double>(sizeof(Segment)) +
                                                kOpsPerLayer * static_cast<double>(sizeof(Op)));
  e.memory.push_back({"step plans", gpus_knob, kPlansAlive * gpus * per_gpu_plan});
  e.memory.push_back({"per-GPU records", gpus_knob + ", " + steps_knob, gpus * (kActorBytes + n_steps * kStepRecordBytes)});
  e.memory.push_back({"program", "", kBaseBytes});
  e.wall.push_back({"event simulation", gpus_knob + " x " + steps_knob, n_steps * gpus * micro * layers * kActivitiesPerLayer * kSecondsPerActivity});
  ResourceEstimate::Part routing = prefill_routing(run, run.work.tokens_per_gpu, steps);
  routing.knob = gpus_knob + " x prefill.tokens_per_gpu x " + steps_knob;
  e.wall.push_back(std::move(routing));
  return e;
}

Preflight preflight(const PrefillRun& run, std::int64_t steps, const ResourceLimits& limits) {
  Preflight p;
  p.steps = steps > 0 ? steps : run.work.steps;
  p.estimate = estimate_prefill_resources(run, p.steps);
  enforce_limits(p.estimate, limits);
  const PrefillStepBuilder builder(run);
  Rng rng(run.system->seed);
  (void)builder.build(0, run_pieces(run), rng);
  return p;
}

Preflight preflight(const RunRequest& run, std::int64_t steps, int trace_steps, const ResourceLimits& limits) {
  if (const auto* prefill = std::get_if<PrefillRun>(&run)) return preflight(*prefill, steps, limits);
  return preflight(std::get<DecodeRun>(run), steps, trace_steps, limits);
}

Preflight preflight(const DecodeRun& run, std::int64_t steps, int trace_steps, const ResourceLimits& limits) {
  const Scenario& scenario = *run.system;
  Preflight p;
  p.steps = steps > 0 ? steps : run.workload.decode_steps;
  p.batch_per_gpu = resolve_batch(run);
  if (scenario.execution.micro_batches == 2 && p.batch_per_gpu < 2) {
    throw ConfigError(scenario.origin, "/execution/micro_batches",
                      "two micro-batches need at least 2 requests per GPU, but the largest batch that fits is " +
                          std::to_string(p.batch_per_gpu));
  }
  p.memory = plan_memory(run, p.batch_per_gpu);

  const bool offload = run.offload();
  AccessModelInputs access;
  double access_bytes = 0.0;
  if (offload) {
    access.top_k = scenario.model.indexer->top_k;
    access.seed = synthetic_access_seed(scenario.seed);
    access.file = scenario.cache.access.file;
    access.locality = &scenario.cache.access.synthetic;
    access_bytes = access_model_memory_bytes(scenario.cache.access.model, access);
  }
  p.estimate = estimate_resources(run, p.batch_per_gpu, p.steps, trace_steps, access_bytes);
  enforce_limits(p.estimate, limits);

  const auto& placement = p.memory.placement;
  const DecodeStepBuilder builder(run, p.batch_per_gpu, offload ? placement.offloaded : 0, placement.cold_fraction);
  if (offload) {
    access.layers = builder.layer_count();
    p.access = make_access_model(scenario.cache.access.model, access);
    p.access->check_serves(access_demand(run, builder, p.steps));
  }
  // Price every operator of the first and the last step (the context grows in between): a cost
  // model that cannot price one (no peak for the model's dtype, say) fails here, with its message.
  const std::vector<LayerAccess> no_misses(static_cast<std::size_t>(builder.layer_count()));
  try {
    for (const std::int64_t step : {std::int64_t{0}, p.steps - 1}) {
      Rng rng(scenario.seed);
      (void)builder.build(static_cast<int>(step), rng, offload ? &no_misses : nullptr);
      if (p.steps == 1) break;
    }
  } catch (const UnsupportedError& e) {
    throw ConfigError(scenario.origin, "/hardware",
                      std::string(e.what()) + "; the model " + scenario.model.name + " needs it on this hardware");
  }
  return p;
}

}  // namespace ess
