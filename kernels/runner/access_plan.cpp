#include "kernels/runner/access_plan.h"

#include <algorithm>
#include <string>

namespace ess::runner {

namespace {

std::string held_steps(const ReplayAccess& trace) {
  const auto& steps = trace.steps();
  if (steps.empty()) return "no steps";
  return std::to_string(steps.size()) + " steps, " + std::to_string(steps.front().step) + " to " +
         std::to_string(steps.back().step);
}

}  // namespace

int check_access_trace(const ReplayAccess& trace, const RunnerOptions& o) {
  const std::string file = trace.path().string() + ": ";
  const auto fail = [&](const std::string& message) { throw AccessPlanError(file + message); };
  if (trace.layers() != o.layers) {
    fail("the trace has " + std::to_string(trace.layers()) + " layers, --layers is " + std::to_string(o.layers));
  }
  if (trace.requests() != o.batch) {
    fail("the trace has " + std::to_string(trace.requests()) + " requests, --batch is " + std::to_string(o.batch) +
         " (the runner replays one recorded request per request of the batch)");
  }
  if (trace.top_k() != o.top_k) {
    fail("the trace has top_k " + std::to_string(trace.top_k()) + ", --top-k is " + std::to_string(o.top_k));
  }
  const auto& steps = trace.steps();
  const auto find = [&](std::int64_t step) {
    const auto it = std::lower_bound(steps.begin(), steps.end(), step,
                                     [](const TraceStep& s, std::int64_t v) { return s.step < v; });
    return it != steps.end() && it->step == step ? &*it : nullptr;
  };
  for (std::int64_t s = 0; s < o.steps; ++s) {
    const TraceStep* found = find(s);
    if (found == nullptr) {
      fail("step " + std::to_string(s) + " is missing (the trace holds " + held_steps(trace) + "); --steps " +
           std::to_string(o.steps) + " needs steps 0 to " + std::to_string(o.steps - 1));
    }
    if (found->context != o.context + s) {
      fail("step " + std::to_string(s) + " was recorded at context " + std::to_string(found->context) +
           ", but the runner runs it at --context + step = " + std::to_string(o.context + s));
    }
  }
  // The negative steps are the warm-up windows -W..-1 (CacheSimulator::warm_up with W windows).
  const auto negative = static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const TraceStep& s) { return s.step < 0; }));
  for (int w = negative; w >= 1; --w) {
    const TraceStep* found = find(-w);
    if (found == nullptr) {
      fail("the trace's " + std::to_string(negative) + " warm-up steps are not exactly -" + std::to_string(negative) +
           " to -1 (step -" + std::to_string(w) + " is missing; it holds " + held_steps(trace) + ")");
    }
    if (found->context != o.context - w) {
      fail("warm-up step -" + std::to_string(w) + " was recorded at context " + std::to_string(found->context) +
           ", but the pool warm-up runs it at --context - " + std::to_string(w) + " = " + std::to_string(o.context - w));
    }
  }
  if (negative < o.warmup_steps) {
    fail("the trace holds " + std::to_string(negative) + " warm-up steps (negative steps), --warmup-steps " +
         std::to_string(o.warmup_steps) + " needs steps -" + std::to_string(o.warmup_steps) + " to -1");
  }
  return negative;
}

std::int64_t StepAccess::misses(int layer) const {
  std::int64_t total = 0;
  for (const RequestAccess& r : layers[static_cast<std::size_t>(layer)]) total += r.result.misses;
  return total;
}

AccessPlanner::AccessPlanner(const RunnerOptions& options, const std::filesystem::path& trace)
    : options_(options), trace_(std::make_unique<ReplayAccess>(trace)) {
  windows_ = check_access_trace(*trace_, options_);
  for (auto s = static_cast<int>(-options_.warmup_steps); s < options_.steps; ++s) gpu_steps_.push_back(s);
  next_window_ = windows_;

  CacheSimConfig config;
  config.layers = static_cast<int>(options_.layers);
  config.top_k = options_.top_k;
  config.sampled_requests = static_cast<int>(options_.batch);
  config.warmup_windows = windows_;
  config.capacity_entries = options_.pool_entries;
  config.pinned_recent = options_.pinned_recent;
  config.policy = options_.eviction;
  config.eviction_params = options_.eviction_params;
  try {
    reference_ = std::make_unique<CacheSimulator>(config, *trace_);
  } catch (const std::invalid_argument& e) {
    throw AccessPlanError(std::string("pool configuration: ") + e.what());
  }
  // As CacheSimulator's constructor: every pool starts at the capacity for one token of context.
  const PoolConfig pool{reference_->capacity_at(1), options_.pinned_recent, options_.eviction, options_.eviction_params};
  pools_.reserve(static_cast<std::size_t>(options_.layers * options_.batch));
  for (std::int64_t i = 0; i < options_.layers * options_.batch; ++i) pools_.emplace_back(pool);
}

void AccessPlanner::access_all(int step, std::int64_t context, StepAccess* out) {
  // As CacheSimulator::resize_pools, then every layer, request by request.
  const std::int64_t capacity = reference_->capacity_at(context);
  for (GpuPool& pool : pools_) {
    if (pool.capacity() != capacity) pool.set_capacity(capacity);
  }
  const auto L = static_cast<std::size_t>(options_.layers);
  const auto B = static_cast<std::size_t>(options_.batch);
  if (out != nullptr) {
    out->step = step;
    out->context = context;
    out->capacity = capacity;
    out->layers.assign(L, std::vector<RequestAccess>(B));
  }
  for (std::size_t layer = 0; layer < L; ++layer) {
    for (std::size_t request = 0; request < B; ++request) {
      trace_->select(step, static_cast<int>(layer), static_cast<int>(request), context, scratch_);
      GpuPool& pool = pools_[layer * B + request];
      if (out == nullptr) {
        (void)pool.access(scratch_, context, step);
        continue;
      }
      RequestAccess& r = out->layers[layer][request];
      r.result = pool.access(scratch_, context, step, &r.missed);
      r.selected = scratch_;
    }
  }
}

StepAccess AccessPlanner::next() {
  if (next_gpu_step_ >= gpu_steps_.size()) throw std::logic_error("AccessPlanner::next: no steps left");
  const int step = gpu_steps_[next_gpu_step_++];
  // Windows before this step only fill the pools; like CacheSimulator::warm_up, windows whose
  // context would be < 1 are skipped.
  while (next_window_ > 0 && -next_window_ < step) {
    const std::int64_t context = options_.context - next_window_;
    if (context >= 1) access_all(-next_window_, context, nullptr);
    --next_window_;
  }
  if (step < 0) --next_window_;  // this step is window -w itself (w <= W, checked at load)
  StepAccess out;
  access_all(step, options_.context + step, &out);
  if (step >= 0) {
    if (!reference_warmed_) {
      reference_->warm_up(options_.context);
      reference_warmed_ = true;
    }
    check_against_simulator(out, reference_->step(step, out.context));
  }
  return out;
}

void check_against_simulator(const StepAccess& mine, const CacheStepStats& theirs) {
  const auto differ = [&](const std::string& what, std::size_t layer, double ours, double simulated) {
    throw AccessPlanError("pool cross-check failed at step " + std::to_string(mine.step) + ", layer " +
                          std::to_string(layer) + ": " + what + " " + std::to_string(ours) + " here, " +
                          std::to_string(simulated) + " in the simulator's CacheSimulator");
  };
  if (theirs.capacity != mine.capacity) {
    differ("pool capacity", 0, static_cast<double>(mine.capacity), static_cast<double>(theirs.capacity));
  }
  if (theirs.layers.size() != mine.layers.size()) {
    differ("layer count", 0, static_cast<double>(mine.layers.size()), static_cast<double>(theirs.layers.size()));
  }
  for (std::size_t layer = 0; layer < mine.layers.size(); ++layer) {
    // The same sums in the same order as CacheSimulator::step, so equal results are equal bits.
    double misses = 0.0;
    double hits = 0.0;
    double runs = 0.0;
    double evictions = 0.0;
    for (const RequestAccess& r : mine.layers[layer]) {
      misses += static_cast<double>(r.result.misses);
      hits += static_cast<double>(r.result.hits);
      runs += static_cast<double>(r.result.runs);
      evictions += static_cast<double>(r.result.evictions);
    }
    const auto n = static_cast<double>(mine.layers[layer].size());
    const LayerStats& s = theirs.layers[layer];
    if (misses / n != s.misses_mean) differ("mean misses per request", layer, misses / n, s.misses_mean);
    if (hits / n != s.hits_mean) differ("mean hits per request", layer, hits / n, s.hits_mean);
    if (runs / n != s.runs_mean) differ("mean runs per request", layer, runs / n, s.runs_mean);
    if (evictions / n != s.evictions_mean) differ("mean evictions per request", layer, evictions / n, s.evictions_mean);
  }
}

}  // namespace ess::runner
