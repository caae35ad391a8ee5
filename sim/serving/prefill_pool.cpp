#include "sim/serving/prefill_pool.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"
#include "sim/config/config_error.h"

namespace ess {

namespace {

// A request's prompt tokens still to prefill on its GPU.
struct Work {
  std::size_t request = 0;
  std::int64_t left = 0;
};

struct Gpu {
  std::deque<Work> work;
  std::int64_t pending = 0;
};

struct Instance {
  std::vector<Gpu> gpus;
  double free_at = 0.0;  // when its current step ends (or it became idle)
  [[nodiscard]] bool has_work() const {
    return std::any_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return g.pending > 0; });
  }
};

// Every request's cache from its prefill GPU to the decode node, the transfers sharing the links.
void move_caches(const Scenario& s, const ServingMemory& memory, const std::vector<Request>& requests, PrefillPoolRun& run) {
  const CacheLinks links(s, run.instances * run.gpus_per_instance);
  std::vector<PendingTransfer> transfers;
  transfers.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const PrefillOutcome& o = run.requests[i];
    transfers.push_back({o.end, o.instance * run.gpus_per_instance + o.gpu, links.transfer(memory, requests[i].prompt_tokens)});
  }
  const std::vector<double> arrived = links.arrivals(transfers);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    PrefillOutcome& o = run.requests[i];
    o.ready = arrived[i];
    o.transfer_s = arrived[i] - o.end;
    o.transfer_alone_s = transfers[i].cache.seconds;
    o.transfer_bytes = transfers[i].cache.bytes();
  }
}

}  // namespace

PrefillRun prefill_instance_run(const Scenario& serving, std::int64_t tokens, std::int64_t prompt) {
  const PrefillPoolConfig& cfg = serving.serving->prefill;
  const int gpus = cfg.nodes_per_instance * serving.hardware.gpu.count;
  const auto& own = serving.parallelism;
  const Parallelism layout{gpus, 1, serving.model.moe ? gpus : own.expert_parallel, own.redundant_experts};
  if (serving.model.moe) {
    const std::int64_t slots = serving.model.moe->routed_experts + layout.redundant_experts;
    if (slots % gpus != 0) {
      throw ConfigError(serving.origin, "/serving/prefill/nodes_per_instance",
                        "a prefill instance of " + std::to_string(cfg.nodes_per_instance) + " node(s) has " + std::to_string(gpus) +
                            " GPUs, which do not divide the " + std::to_string(slots) +
                            " physical experts (routed + parallelism.redundant_experts) of its expert parallelism");
    }
  }
  const PrefillTablePoint point = prefill_table_point(tokens, prompt);
  // Prefill computes the whole cache on the GPU: a prefill run has no cache mode.
  return prefill_run(serving, cfg.nodes_per_instance, layout, PrefillConfig{point.prompt_length, point.cached, tokens, 1});
}

PrefillTablePoint prefill_table_point(std::int64_t tokens, std::int64_t prompt) {
  if (tokens < 1 || prompt < 1) throw InternalError("prefill_table_point: tokens and prompt must be >= 1");
  if (tokens >= prompt) return {prompt, 0};
  const std::int64_t cached = (prompt - tokens) / 2;
  return {cached + tokens, cached};
}

PrefillPoolRun run_prefill_pool(const Scenario& s, int instances, const std::vector<Request>& requests,
                                const StepTable& table, const ServingMemory& memory) {
  if (!s.serving || !s.serving->prefill.disaggregated()) {
    throw InternalError("run_prefill_pool: the scenario has no disaggregated prefill");
  }
  const PrefillPoolConfig& cfg = s.serving->prefill;
  const int per_instance = cfg.nodes_per_instance * s.hardware.gpu.count;
  const std::int64_t budget = cfg.tokens_per_gpu;
  if (instances < 1) throw InternalError("run_prefill_pool: instances must be >= 1");
  PrefillPoolRun run;
  run.instances = instances;
  run.gpus_per_instance = per_instance;
  run.requests.assign(requests.size(), PrefillOutcome{});
  std::vector<Instance> pool(static_cast<std::size_t>(instances));
  for (auto& inst : pool) inst.gpus.resize(static_cast<std::size_t>(per_instance));

  // The step of one instance that starts at `t`: every GPU takes up to `budget` tokens.
  const auto step = [&](Instance& inst, double t) {
    std::int64_t most = 0;
    double prompts = 0.0;
    std::int64_t pieces = 0;
    std::vector<std::size_t> finished;
    for (std::size_t g = 0; g < inst.gpus.size(); ++g) {
      Gpu& gpu = inst.gpus[g];
      std::int64_t room = budget;
      std::int64_t taken = 0;
      for (auto it = gpu.work.begin(); it != gpu.work.end() && room > 0; ++it) {
        const std::int64_t n = std::min(room, it->left);
        if (run.requests[it->request].start < 0) run.requests[it->request].start = t;
        it->left -= n;
        room -= n;
        taken += n;
        prompts += static_cast<double>(requests[it->request].prompt_tokens);
        ++pieces;
        if (it->left == 0) finished.push_back(it->request);
      }
      while (!gpu.work.empty() && gpu.work.front().left == 0) gpu.work.pop_front();
      gpu.pending -= taken;
      most = std::max(most, taken);
      run.tokens += static_cast<double>(taken);
    }
    const StepPoint point = table.at(static_cast<double>(most), prompts / static_cast<double>(pieces));
    const double time = point.time;
    if (!(time > 0.0)) throw InternalError("prefill pool: a step of " + std::to_string(most) + " tokens took no time");
    const double end = t + time;
    for (const std::size_t r : finished) run.requests[r].end = end;
    inst.free_at = end;
    run.busy_s += time;
    run.sigma_s += point.sigma;
    run.capacity += static_cast<double>(inst.gpus.size()) * static_cast<double>(budget);
    ++run.steps;
    run.end_time = std::max(run.end_time, end);
  };

  std::size_t next = 0;
  while (true) {
    // The instance whose next step starts first: a stepping instance with work continues at its
    // step's end; an idle one has nothing to do until an arrival.
    std::size_t soonest = pool.size();
    double soonest_t = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (pool[i].has_work() && pool[i].free_at < soonest_t) {
        soonest = i;
        soonest_t = pool[i].free_at;
      }
    }
    const bool arrival_first = next < requests.size() && requests[next].arrival <= soonest_t;
    if (!arrival_first && soonest == pool.size()) break;
    if (arrival_first) {
      const Request& r = requests[next];
      // Join the GPU with the fewest pending tokens; among those, the instance free soonest (an idle
      // one before one with a step in flight); then the lowest instance and GPU.
      std::size_t best_i = 0;
      std::size_t best_g = 0;
      std::int64_t best = std::numeric_limits<std::int64_t>::max();
      double best_start = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < pool.size(); ++i) {
        const double start = std::max(pool[i].free_at, r.arrival);
        for (std::size_t g = 0; g < pool[i].gpus.size(); ++g) {
          const std::int64_t pending = pool[i].gpus[g].pending;
          if (pending < best || (pending == best && start < best_start)) {
            best = pending;
            best_start = start;
            best_i = i;
            best_g = g;
          }
        }
      }
      Instance& inst = pool[best_i];
      // An idle instance starts its next step when this request arrives.
      if (!inst.has_work()) inst.free_at = std::max(inst.free_at, r.arrival);
      inst.gpus[best_g].work.push_back({next, r.prompt_tokens});
      inst.gpus[best_g].pending += r.prompt_tokens;
      run.requests[next].instance = static_cast<int>(best_i);
      run.requests[next].gpu = static_cast<int>(best_g);
      ++next;
      continue;
    }
    step(pool[soonest], soonest_t);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (run.requests[i].end < 0) throw InternalError("prefill pool: request " + std::to_string(requests[i].id) + " never finished");
  }
  move_caches(s, memory, requests, run);
  return run;
}

}  // namespace ess
