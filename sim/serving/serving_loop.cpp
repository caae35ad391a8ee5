#include "sim/serving/serving_loop.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "sim/base/error.h"
#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/base/rng.h"

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
  double last = 0.0;  // end of the step that gave its latest token
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

void check_requests_fit(const Scenario& s, const std::vector<Request>& requests, const ServingMemory& memory) {
  for (const auto& r : requests) {
    const std::int64_t tokens = r.prompt_tokens + r.output_tokens;
    const Footprint f = memory.offload() ? memory.offloaded(tokens) : memory.gpu_only(tokens);
    if (f.hbm_held() > memory.hbm_budget()) {
      throw ConfigError(s.origin, "/serving/arrivals",
                        "request " + std::to_string(r.id) + " (" + std::to_string(r.prompt_tokens) + " + " +
                            std::to_string(r.output_tokens) + " tokens) needs " + format_quantity(f.hbm_held(), Dimension::bytes) +
                            " of HBM for its caches and activations, but a GPU has " +
                            format_quantity(std::max(0.0, memory.hbm_budget()), Dimension::bytes) +
                            " after weights, runtime, reserve and fixed activations: shorten the requests or use more GPUs");
    }
  }
}

std::uint64_t acceptance_seed(std::uint64_t scenario_seed) { return Rng(scenario_seed ^ kAcceptanceSalt).next(); }

namespace {

// A request admitted to a GPU in colocated mode whose prompt is still being prefilled.
struct Prefilling {
  Active a;                  // where it runs and what it holds; `context` counts the prompt done
  std::int64_t taking = 0;   // prompt tokens in the current step
};

class Loop {
 public:
  Loop(const Scenario& s, const std::vector<Request>& requests, const StepModel& model, const ServingMemory& memory,
       const ChunkModel* chunks);
  ServingRun run();

 private:
  // Admission at time t, FCFS without overtaking; sets cap_binding_ and memory_blocked_.
  void admit(double t);
  // Colocated mode: this step's prompt chunks per GPU under the token budget (taking), and what they add.
  ChunkCost plan_chunks(double batch, std::int64_t& tokens);
  // engine.prefill_schedule "prefill_first": the replicas with prompts waiting, whose step runs
  // prompt chunks alone (their decoding requests wait); none under "mixed".
  void mark_paused();
  // One step at t; returns its end.
  double step(double t);
  // Tokens of the step's end for decoding requests, and prompts whose last chunk ran.
  void advance_decoding(double end, ServingStep& step);
  void advance_prefilling(double end);
  void release(const Active& a);
  // A request finished at `end`: a closed loop sends its next request then.
  void finished(double end);

  const std::vector<Request>& requests_;
  const StepModel& model_;
  const ServingMemory& memory_;
  const ChunkModel* chunks_;
  const ServingConfig& cfg_;
  const EngineConfig& engine_;
  int gpus_;      // attention replicas: each its own batch (one GPU, or tensor_parallel GPUs)
  int all_gpus_;  // every GPU (energy)
  std::int64_t whole_;
  double extra_;
  int depth_;
  ServingRun run_;
  std::optional<BatchController> controller_;
  std::vector<std::int64_t> on_gpu_;    // requests admitted to each GPU (decoding and prefilling)
  std::vector<std::int64_t> decoding_;  // of them, decoding
  std::vector<double> held_;      // caches and activation shares: what admission charges
  std::vector<double> host_used_;
  std::vector<Active> active_;            // decoding
  std::vector<Prefilling> prefilling_;    // colocated: admitted, prompt not done, in admission order
  std::vector<char> paused_;              // per replica, this step (mark_paused)
  std::deque<std::size_t> queue_;
  std::size_t sent_ = 0;  // requests whose arrival is known: all of an open loop, those sent so far of a closed one
  Rng accept_root_;
  std::optional<GpuPower> power_;
  double energy_ = 0.0;
  bool cap_binding_ = false;
  bool memory_blocked_ = false;
};

Loop::Loop(const Scenario& s, const std::vector<Request>& requests, const StepModel& model, const ServingMemory& memory,
           const ChunkModel* chunks)
    : requests_(requests),
      model_(model),
      memory_(memory),
      chunks_(chunks),
      cfg_(*s.serving),
      engine_(s.engine),
      gpus_(s.parallelism.attention_dp),
      all_gpus_(s.hardware.total_gpus()),
      whole_(static_cast<std::int64_t>(std::floor(s.workload.mtp.acceptance))),
      extra_(s.workload.mtp.acceptance - std::floor(s.workload.mtp.acceptance)),
      depth_(s.workload.mtp.depth),
      on_gpu_(static_cast<std::size_t>(gpus_), 0),
      decoding_(static_cast<std::size_t>(gpus_), 0),
      held_(static_cast<std::size_t>(gpus_), 0.0),
      host_used_(static_cast<std::size_t>(memory.sockets()), 0.0),
      paused_(static_cast<std::size_t>(gpus_), 0),
      accept_root_(acceptance_seed(s.seed)),
      power_(s.hardware.gpu.power) {
  if (cfg_.prefill.colocated() != (chunks != nullptr)) {
    throw InternalError("run_serving: colocated prefill needs the chunk model, and only it");
  }
  check_requests_fit(s, requests, memory);
  run_.batch_bound = memory.batch_bound();
  run_.requests.reserve(requests.size());
  for (const auto& r : requests) run_.requests.push_back(RequestOutcome{r});
  // A closed loop's requests not sent yet come last, their arrival kNotSent until a completion sends them.
  const auto unsent = [](const Request& r) { return r.arrival < 0.0; };
  const auto first_unsent = std::find_if(requests.begin(), requests.end(), unsent);
  sent_ = static_cast<std::size_t>(first_unsent - requests.begin());
  if (!std::all_of(first_unsent, requests.end(), unsent) ||
      (sent_ < requests.size() && (!cfg_.arrivals.closed_loop() || sent_ == 0))) {
    throw InternalError("run_serving: requests not sent yet must come last, in a closed loop that sent some");
  }

  double context_sum = 0.0;
  std::int64_t context_n = 0;
  for (const auto& r : requests) {
    context_sum += static_cast<double>(r.prompt_tokens) + 0.5 * static_cast<double>(r.output_tokens);
    ++context_n;
  }
  const double typical_context = context_n > 0 ? context_sum / static_cast<double>(context_n) : 1.0;
  const auto& cc = cfg_.controller;
  run_.initial_cap = cc.initial_cap == kInitialCaps[1].name ? run_.batch_bound
                                             : model_cap(model, run_.batch_bound, typical_context, memory.offload() ? 1.0 : 0.0,
                                                         cc.headroom * cc.p99_target.value());
  controller_.emplace(cc, run_.initial_cap, run_.batch_bound);
}

void Loop::admit(double t) {
  cap_binding_ = false;
  memory_blocked_ = false;
  while (!queue_.empty()) {
    const std::size_t i = queue_.front();
    const Request& r = requests_[i];
    const std::int64_t tokens = r.prompt_tokens + r.output_tokens;
    int chosen = -1;
    bool chosen_offloaded = false;
    bool room_but_capped = false;
    for (int g = 0; g < gpus_; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      bool offloaded = false;
      Footprint f = memory_.gpu_only(tokens);
      if (memory_.offload()) {
        const Footprint o = memory_.offloaded(tokens);
        const int socket = memory_.socket_of(g);
        if (host_used_[static_cast<std::size_t>(socket)] + o.host <= memory_.host_budget()) {
          f = o;
          offloaded = true;
        }
      }
      if (held_[gi] + f.hbm_held() > memory_.hbm_budget()) continue;
      if (on_gpu_[gi] >= controller_->cap()) {
        room_but_capped = true;
        continue;
      }
      if (chosen < 0 || on_gpu_[gi] < on_gpu_[static_cast<std::size_t>(chosen)]) {
        chosen = g;
        chosen_offloaded = offloaded;
      }
    }
    if (chosen < 0) {
      cap_binding_ = room_but_capped;
      memory_blocked_ = !room_but_capped;
      break;
    }
    queue_.pop_front();
    Active a;
    a.index = i;
    a.gpu = chosen;
    a.socket = memory_.socket_of(chosen);
    a.offloaded = chosen_offloaded;
    a.footprint = chosen_offloaded ? memory_.offloaded(tokens) : memory_.gpu_only(tokens);
    a.context = r.prompt_tokens;
    a.remaining = r.output_tokens;
    a.tokens = accept_root_.fork(static_cast<std::uint64_t>(r.id));
    const auto ci = static_cast<std::size_t>(chosen);
    ++on_gpu_[ci];
    held_[ci] += a.footprint.hbm_held();
    host_used_[static_cast<std::size_t>(a.socket)] += a.footprint.host;
    run_.hbm_peak = std::max(run_.hbm_peak, held_[ci]);
    run_.host_peak = std::max(run_.host_peak, host_used_[static_cast<std::size_t>(a.socket)]);
    if (memory_.offload() && !chosen_offloaded) ++run_.fallback_requests;
    auto& out = run_.requests[i];
    out.gpu = chosen;
    out.offloaded = chosen_offloaded;
    out.admitted = t;
    if (chunks_ != nullptr) {
      a.context = 0;  // prompt tokens prefilled so far
      prefilling_.push_back(Prefilling{std::move(a)});
    } else {
      ++decoding_[ci];
      active_.push_back(std::move(a));
    }
  }
}

ChunkCost Loop::plan_chunks(double batch, std::int64_t& tokens) {
  // Decode tokens first (every decoding request's query tokens), then prompts in admission order.
  std::vector<std::int64_t> left(static_cast<std::size_t>(gpus_));
  for (std::size_t g = 0; g < left.size(); ++g) {
    const std::int64_t decode_tokens = paused_[g] != 0 ? 0 : decoding_[g] * depth_;
    left[g] = std::max<std::int64_t>(0, cfg_.prefill.tokens_per_gpu - decode_tokens);
  }
  std::vector<std::int64_t> chunk(left.size(), 0);
  std::vector<double> pairs(left.size(), 0.0);
  for (Prefilling& p : prefilling_) {
    const auto g = static_cast<std::size_t>(p.a.gpu);
    const std::int64_t prompt = requests_[p.a.index].prompt_tokens;
    p.taking = std::min(left[g], prompt - p.a.context);
    if (p.taking <= 0) continue;
    left[g] -= p.taking;
    chunk[g] += p.taking;
    const auto n = static_cast<double>(p.taking);
    pairs[g] += n * static_cast<double>(p.a.context) + n * (n + 1.0) / 2.0;
  }
  // A GPU's chunks are priced as one chunk of their tokens with their causal key pairs (its cached
  // tokens from the pairs, negative when several prompts have fewer pairs than one chunk); the
  // step waits for the GPU whose chunks add the most.
  ChunkCost worst;
  tokens = 0;
  for (std::size_t g = 0; g < chunk.size(); ++g) {
    if (chunk[g] == 0) continue;
    tokens += chunk[g];
    const auto c = static_cast<double>(chunk[g]);
    const double cached = (pairs[g] - c * (c + 1.0) / 2.0) / c;  // below 0: several prompts (ChunkModel::added)
    const ChunkCost added = chunks_->added(batch, c, cached);
    if (added.time > worst.time) worst = added;
  }
  return worst;
}

void Loop::mark_paused() {
  std::fill(paused_.begin(), paused_.end(), 0);
  if (!engine_.prefill_first) return;
  for (const Prefilling& p : prefilling_) paused_[static_cast<std::size_t>(p.a.gpu)] = 1;
}

double Loop::step(double t) {
  ServingStep step;
  step.start = t;
  mark_paused();
  // The decode part: the requests of replicas not paused for prompts.
  std::int64_t batch_max = 0;
  for (std::size_t g = 0; g < decoding_.size(); ++g) {
    if (paused_[g] == 0) batch_max = std::max(batch_max, decoding_[g]);
  }
  std::int64_t requests_max = 0;
  for (auto n : on_gpu_) requests_max = std::max(requests_max, n);
  double contexts = 0.0;
  std::int64_t offloaded = 0;
  std::int64_t decoding = 0;
  for (const auto& a : active_) {
    if (paused_[static_cast<std::size_t>(a.gpu)] != 0) continue;
    contexts += static_cast<double>(a.context);
    offloaded += a.offloaded ? 1 : 0;
    ++decoding;
  }
  const double n = static_cast<double>(decoding);
  step.batch_max = static_cast<std::int32_t>(batch_max);
  step.active = static_cast<std::int32_t>(active_.size() + prefilling_.size());
  step.queued = static_cast<std::int32_t>(queue_.size());
  step.cap = static_cast<std::int32_t>(controller_->cap());
  StepPoint p;
  if (decoding == 0) {
    // Only prompt chunks: the chunk model's smallest-batch step stands for the decode part.
    p = chunks_->slices.front().reference;
  } else {
    step.context_mean = contexts / n;
    step.offloaded_share = memory_.offload() ? static_cast<double>(offloaded) / n : 0.0;
    // A decode step replays the CUDA graph captured for a batch at least this one (the table's
    // points ran at theirs): looked up at that batch, the padding's steps are not interpolated over.
    p = model_.at_graph(static_cast<double>(batch_max), static_cast<double>(engine_.graph_batch(batch_max)), step.context_mean,
                        step.offloaded_share, engine_.exposed_host_request_time().value());
  }
  step.time = p.time;
  step.sigma = p.sigma;
  step.utilization = std::clamp(p.utilization, 0.0, 1.0);
  if (chunks_ != nullptr) {
    std::int64_t tokens = 0;
    const ChunkCost added = plan_chunks(decoding == 0 ? static_cast<double>(chunks_->slices.front().batch) : static_cast<double>(batch_max), tokens);
    if (tokens > 0) {
      const double busy = p.utilization * p.time + added.busy;
      step.time = p.time + added.time;
      step.sigma = p.time > 0.0 ? p.sigma * step.time / p.time : 0.0;
      step.utilization = std::clamp(busy / step.time, 0.0, 1.0);
      step.prefill_tokens = tokens;
      step.prefill_time = added.time;
    }
  }
  if (power_) {
    energy_ += all_gpus_ * (power_->idle.value() + (power_->busy.value() - power_->idle.value()) * step.utilization) * step.time;
  }
  const double end = t + step.time;
  step.chunks.assign(static_cast<std::size_t>(depth_) + 1, 0);
  advance_decoding(end, step);
  if (chunks_ != nullptr) advance_prefilling(end);
  if (memory_blocked_) ++run_.blocked_by_memory_steps;
  // The controller holds the decode part of the step under its target: the chunks' part is what the
  // token budget allows.
  controller_->observe(end, step.time - step.prefill_time, requests_max, cap_binding_);
  run_.steps.push_back(std::move(step));
  return end;
}

void Loop::release(const Active& a) {
  const auto gi = static_cast<std::size_t>(a.gpu);
  --on_gpu_[gi];
  held_[gi] -= a.footprint.hbm_held();
  host_used_[static_cast<std::size_t>(a.socket)] -= a.footprint.host;
}

void Loop::finished(double end) {
  if (sent_ >= run_.requests.size()) return;
  run_.requests[sent_++].request.arrival = end;
}

void Loop::advance_decoding(double end, ServingStep& step) {
  for (std::size_t k = 0; k < active_.size();) {
    Active& a = active_[k];
    if (paused_[static_cast<std::size_t>(a.gpu)] != 0) {
      ++k;  // its replica runs prompt chunks alone this step
      continue;
    }
    std::int64_t got = whole_ + (extra_ > 0.0 && a.tokens.uniform() < extra_ ? 1 : 0);
    got = std::min(got, a.remaining);
    a.remaining -= got;
    a.context += got;
    auto& out = run_.requests[a.index];
    out.generated += got;
    if (a.first) {
      out.first_token = end;
      a.first = false;
    } else if (a.last < step.start) {
      step.stalled.push_back(StalledChunk{end - a.last, static_cast<std::int32_t>(got)});  // waited out prefill steps
    } else {
      ++step.chunks[static_cast<std::size_t>(got)];
    }
    a.last = end;
    if (a.remaining > 0) {
      ++k;
      continue;
    }
    out.finish = end;
    finished(end);
    --decoding_[static_cast<std::size_t>(a.gpu)];
    release(a);
    active_[k] = std::move(active_.back());
    active_.pop_back();
  }
}

void Loop::advance_prefilling(double end) {
  // A prompt whose last chunk ran has its first token at the step's end (the LM head on its last
  // token); it decodes from the next step on.
  std::vector<Prefilling> still;
  for (Prefilling& p : prefilling_) {
    p.a.context += p.taking;
    p.taking = 0;
    const Request& r = requests_[p.a.index];
    if (p.a.context < r.prompt_tokens) {
      still.push_back(std::move(p));
      continue;
    }
    auto& out = run_.requests[p.a.index];
    out.first_token = end;
    out.generated = 1;
    p.a.first = false;
    p.a.last = end;
    p.a.remaining = r.output_tokens - 1;
    if (p.a.remaining <= 0) {
      out.finish = end;
      finished(end);
      release(p.a);
      continue;
    }
    ++decoding_[static_cast<std::size_t>(p.a.gpu)];
    active_.push_back(std::move(p.a));
  }
  prefilling_ = std::move(still);
}

ServingRun Loop::run() {
  const double stop = cfg_.duration.value() + cfg_.drain_limit.value();
  std::size_t next = 0;
  double t = 0.0;
  while (true) {
    while (next < sent_ && run_.requests[next].request.arrival <= t) queue_.push_back(next++);
    admit(t);
    if (active_.empty() && prefilling_.empty()) {
      if (!queue_.empty()) {
        throw InternalError("serving: the queue's head cannot be admitted to an empty node (checked before the run)");
      }
      if (next >= sent_) break;
      const double gap = run_.requests[next].request.arrival - t;
      run_.idle_time += gap;
      if (power_) energy_ += all_gpus_ * power_->idle.value() * gap;
      t = run_.requests[next].request.arrival;
      continue;
    }
    if (t >= stop) break;
    t = step(t);
  }
  run_.end_time = t;
  run_.cap_changes = controller_->changes();
  if (power_) run_.energy = energy_;
  return std::move(run_);
}

}  // namespace

ServingRun run_serving(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                       const ServingMemory& memory, const ChunkModel* chunks) {
  if (!s.serving) throw InternalError("run_serving: the scenario has no serving section");
  return Loop(s, requests, model, memory, chunks).run();
}

ServingRun run_disaggregated(const Scenario& s, const std::vector<Request>& requests, const StepModel& model,
                             const ServingMemory& memory, const StepTable& prefill_table, int prefill_instances) {
  PrefillPoolRun pool = run_prefill_pool(s, prefill_instances, requests, prefill_table, memory);
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
