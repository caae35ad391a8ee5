#include "sim/serving/serving_loop.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/graph/rng.h"

namespace ess {

namespace {

constexpr std::uint64_t kAcceptanceSalt = 0xACCE97ED70CE75ULL;

struct Active {
  std::size_t index = 0;  // into the outcomes
  int gpu = 0;
  int socket = 0;
  bool offloaded = false;
  Footprint footprint;
  std::int64_t context = 0;
  std::int64_t remaining = 0;
  bool first = true;
  Rng tokens{0};
};

// Largest batch whose predicted step stays under `limit` (at least 1).
std::int64_t model_cap(const StepModel& model, std::int64_t bound, double context, double share, double limit) {
  std::int64_t best = 1;
  for (std::int64_t b = 1; b <= bound; ++b) {
    if (model.at(static_cast<double>(b), context, share).time > limit) break;
    best = b;
  }
  return best;
}

}  // namespace

std::uint64_t acceptance_seed(std::uint64_t scenario_seed) { return Rng(scenario_seed ^ kAcceptanceSalt).next(); }

ServingRun run_serving(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                       const ServingMemory& memory) {
  if (!s.serving) throw std::logic_error("run_serving: the scenario has no serving section");
  const ServingConfig& cfg = *s.serving;
  const int gpus = s.hardware.total_gpus();
  const double acceptance = s.workload.mtp.acceptance;
  const auto whole = static_cast<std::int64_t>(std::floor(acceptance));
  const double extra = acceptance - static_cast<double>(whole);
  const int depth = s.workload.mtp.depth;

  // A request no empty GPU can hold would wait forever: bad input, named before the run.
  for (const auto& r : requests) {
    const std::int64_t tokens = r.prompt_tokens + r.output_tokens;
    const double need = memory.offload() ? memory.offloaded(tokens).hbm : memory.gpu_only(tokens).hbm;
    if (need > memory.hbm_budget()) {
      throw ConfigError(s.origin, "/serving/arrivals",
                        "request " + std::to_string(r.id) + " (" + std::to_string(r.prompt_tokens) + " + " +
                            std::to_string(r.output_tokens) + " tokens) needs " + format_quantity(need, Dimension::bytes) +
                            " of HBM for its caches, but a GPU has " + format_quantity(std::max(0.0, memory.hbm_budget()), Dimension::bytes) +
                            " after weights, activations, runtime and reserve: shorten the requests or use more GPUs");
    }
  }
  ServingRun run;
  run.batch_bound = memory.batch_bound();
  run.requests.reserve(requests.size());
  for (const auto& r : requests) run.requests.push_back(RequestOutcome{r});

  double context_sum = 0.0;
  std::int64_t context_n = 0;
  for (const auto& r : requests) {
    context_sum += static_cast<double>(r.prompt_tokens) + 0.5 * static_cast<double>(r.output_tokens);
    ++context_n;
  }
  const double typical_context = context_n > 0 ? context_sum / static_cast<double>(context_n) : 1.0;
  const auto& cc = cfg.controller;
  run.initial_cap = cc.initial_cap == "max" ? run.batch_bound
                                            : model_cap(model, run.batch_bound, typical_context, memory.offload() ? 1.0 : 0.0,
                                                        cc.headroom * cc.p99_target.value());
  BatchController controller(cc, run.initial_cap, run.batch_bound);

  std::vector<std::int64_t> on_gpu(static_cast<std::size_t>(gpus), 0);
  std::vector<double> hbm_used(static_cast<std::size_t>(gpus), 0.0);
  std::vector<double> host_used(static_cast<std::size_t>(memory.sockets()), 0.0);
  std::vector<Active> active;
  std::deque<std::size_t> queue;
  const Rng accept_root(acceptance_seed(s.seed));
  std::optional<GpuPower> power = s.hardware.gpu.power;
  double energy = 0.0;
  const double stop = cfg.duration.value() + cfg.drain_limit.value();

  std::size_t next = 0;
  double t = 0.0;
  while (true) {
    while (next < requests.size() && requests[next].arrival <= t) queue.push_back(next++);
    // Admission: FCFS, no overtaking.
    bool cap_binding = false;
    bool memory_blocked = false;
    while (!queue.empty()) {
      const std::size_t i = queue.front();
      const Request& r = requests[i];
      const std::int64_t tokens = r.prompt_tokens + r.output_tokens;
      int chosen = -1;
      bool chosen_offloaded = false;
      bool room_but_capped = false;
      for (int g = 0; g < gpus; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        bool offloaded = false;
        Footprint f = memory.gpu_only(tokens);
        if (memory.offload()) {
          const Footprint o = memory.offloaded(tokens);
          const int socket = memory.socket_of(g);
          if (host_used[static_cast<std::size_t>(socket)] + o.host <= memory.host_budget()) {
            f = o;
            offloaded = true;
          }
        }
        if (hbm_used[gi] + f.hbm > memory.hbm_budget()) continue;
        if (on_gpu[gi] >= controller.cap()) {
          room_but_capped = true;
          continue;
        }
        if (chosen < 0 || on_gpu[gi] < on_gpu[static_cast<std::size_t>(chosen)]) {
          chosen = g;
          chosen_offloaded = offloaded;
        }
      }
      if (chosen < 0) {
        cap_binding = room_but_capped;
        memory_blocked = !room_but_capped;
        break;
      }
      queue.pop_front();
      Active a;
      a.index = i;
      a.gpu = chosen;
      a.socket = memory.socket_of(chosen);
      a.offloaded = chosen_offloaded;
      a.footprint = chosen_offloaded ? memory.offloaded(tokens) : memory.gpu_only(tokens);
      a.context = r.prompt_tokens;
      a.remaining = r.output_tokens;
      a.tokens = accept_root.fork(static_cast<std::uint64_t>(r.id));
      const auto ci = static_cast<std::size_t>(chosen);
      ++on_gpu[ci];
      hbm_used[ci] += a.footprint.hbm;
      host_used[static_cast<std::size_t>(a.socket)] += a.footprint.host;
      run.hbm_peak = std::max(run.hbm_peak, hbm_used[ci]);
      run.host_peak = std::max(run.host_peak, host_used[static_cast<std::size_t>(a.socket)]);
      if (memory.offload() && !chosen_offloaded) ++run.fallback_requests;
      auto& out = run.requests[i];
      out.gpu = chosen;
      out.offloaded = chosen_offloaded;
      out.admitted = t;
      active.push_back(std::move(a));
    }
    if (active.empty()) {
      if (!queue.empty()) {
        throw std::logic_error("serving: the queue's head cannot be admitted to an empty node (checked before the run)");
      }
      if (next >= requests.size()) break;
      const double gap = requests[next].arrival - t;
      run.idle_time += gap;
      if (power) energy += gpus * power->idle.value() * gap;
      t = requests[next].arrival;
      continue;
    }
    if (t >= stop) break;

    // One decode step.
    ServingStep step;
    step.start = t;
    std::int64_t batch_max = 0;
    for (auto n : on_gpu) batch_max = std::max(batch_max, n);
    double contexts = 0.0;
    std::int64_t offloaded = 0;
    for (const auto& a : active) {
      contexts += static_cast<double>(a.context);
      offloaded += a.offloaded ? 1 : 0;
    }
    const double n = static_cast<double>(active.size());
    step.batch_max = static_cast<std::int32_t>(batch_max);
    step.active = static_cast<std::int32_t>(active.size());
    step.queued = static_cast<std::int32_t>(queue.size());
    step.cap = static_cast<std::int32_t>(controller.cap());
    step.context_mean = contexts / n;
    step.offloaded_share = memory.offload() ? static_cast<double>(offloaded) / n : 0.0;
    const StepPoint p = model.at(static_cast<double>(batch_max), step.context_mean, step.offloaded_share);
    step.time = p.time;
    step.utilization = std::clamp(p.utilization, 0.0, 1.0);
    if (power) {
      energy += gpus * (power->idle.value() + (power->busy.value() - power->idle.value()) * step.utilization) * step.time;
    }
    const double end = t + step.time;
    step.chunks.assign(static_cast<std::size_t>(depth) + 1, 0);
    for (std::size_t k = 0; k < active.size();) {
      Active& a = active[k];
      std::int64_t got = whole + (extra > 0.0 && a.tokens.uniform() < extra ? 1 : 0);
      got = std::min(got, a.remaining);
      a.remaining -= got;
      a.context += got;
      auto& out = run.requests[a.index];
      out.generated += got;
      if (a.first) {
        out.first_token = end;
        a.first = false;
      } else {
        ++step.chunks[static_cast<std::size_t>(got)];
      }
      if (a.remaining > 0) {
        ++k;
        continue;
      }
      out.finish = end;
      const auto gi = static_cast<std::size_t>(a.gpu);
      --on_gpu[gi];
      hbm_used[gi] -= a.footprint.hbm;
      host_used[static_cast<std::size_t>(a.socket)] -= a.footprint.host;
      active[k] = std::move(active.back());
      active.pop_back();
    }
    if (memory_blocked) ++run.blocked_by_memory_steps;
    controller.observe(end, step.time, batch_max, cap_binding);
    run.steps.push_back(std::move(step));
    t = end;
  }
  run.end_time = t;
  run.cap_changes = controller.changes();
  if (power) run.energy = energy;
  return run;
}

ServingRun run_disaggregated(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                             const ServingMemory& memory, const StepTable& prefill_table) {
  PrefillPoolRun pool = run_prefill_pool(s, requests, prefill_table, memory);
  std::vector<std::size_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pool.requests[a].ready < pool.requests[b].ready; });
  std::vector<Request> ready;
  ready.reserve(requests.size());
  for (const std::size_t i : order) {
    Request r = requests[i];
    r.arrival = pool.requests[i].ready;
    ready.push_back(r);
  }
  ServingRun run = run_serving(s, ready, model, memory);
  std::vector<RequestOutcome> outcomes(requests.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    outcomes[order[k]] = run.requests[k];
    outcomes[order[k]].request.arrival = requests[order[k]].arrival;
  }
  run.requests = std::move(outcomes);
  run.prefill = std::move(pool);
  return run;
}

}  // namespace ess
