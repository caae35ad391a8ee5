// Where the engine's step plans come from: built on demand in step order, with the offload cache
// simulation running ahead on a worker thread. No SimGrid here.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sim/base/error.h"
#include "sim/graph/decode_step.h"
#include "sim/base/rng.h"
#include "sim/offload/cache_sim.h"

namespace ess {

// Builds step plans on first use and drops them once every GPU has finished them, so memory
// stays bounded however many steps run. Each step draws from its own random stream.
class PlanCache {
 public:
  // Builds the plan of a step (called once per step, in step order) with the step's stream.
  using Build = std::function<StepPlan(int step, Rng& rng)>;
  // `access` (offload mode) gives, for a step and context, what the cache simulation found in each
  // layer; it is called once per step, in step order.
  using AccessSource = std::function<std::vector<LayerAccess>(int step, std::int64_t context)>;

  PlanCache(Build build, std::uint64_t seed, int gpus) : build_(std::move(build)), rng_(seed), gpus_(gpus) {}
  // Decode steps from `builder` (which must outlive the cache), offloaded ones with `access`.
  PlanCache(const DecodeStepBuilder& builder, std::uint64_t seed, int gpus, AccessSource access)
      : PlanCache(decode_steps(builder, std::move(access)), seed, gpus) {}

  const StepPlan& get(int step) {
    while (first_ + static_cast<int>(plans_.size()) <= step) {
      const int s = first_ + static_cast<int>(plans_.size());
      Rng rng = rng_.fork(static_cast<std::uint64_t>(s));
      plans_.push_back(Entry{build_(s, rng), 0});
    }
    return plans_[static_cast<std::size_t>(step - first_)].plan;
  }

  void done(int step) {
    ++plans_[static_cast<std::size_t>(step - first_)].finished;
    while (!plans_.empty() && plans_.front().finished == gpus_) {
      plans_.pop_front();
      ++first_;
    }
  }

 private:
  static Build decode_steps(const DecodeStepBuilder& builder, AccessSource access) {
    return [&builder, access = std::move(access)](int step, Rng& rng) {
      if (!access) return builder.build(step, rng);
      const auto layers = access(step, builder.context_at(step));
      return builder.build(step, rng, &layers);
    };
  }

  struct Entry {
    StepPlan plan;
    int finished;
  };
  Build build_;
  Rng rng_;
  int gpus_;
  int first_ = 0;
  std::deque<Entry> plans_;
};

// Runs the index-level cache simulation (warm-up, then each step in order) on a worker thread,
// a few steps ahead of the SimGrid engine that consumes it. The cache simulation does not depend
// on simulated time, so the results are the same as running it inline, only sooner.
class AccessPipeline {
 public:
  AccessPipeline(CacheSimulator& sim, const DecodeStepBuilder& builder, std::int64_t steps)
      : worker_([this, &sim, &builder, steps] { produce(sim, builder, steps); }) {}

  AccessPipeline(const AccessPipeline&) = delete;
  AccessPipeline& operator=(const AccessPipeline&) = delete;

  ~AccessPipeline() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  // The layers of step `step`; steps must be asked for in order, each once.
  std::vector<LayerAccess> next(int step) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !ready_.empty() || error_; });
    if (error_) std::rethrow_exception(error_);
    if (step != consumed_) throw InternalError("AccessPipeline: steps must be consumed in order");
    std::vector<LayerAccess> layers = std::move(ready_.front());
    ready_.pop_front();
    ++consumed_;
    lock.unlock();
    changed_.notify_all();
    return layers;
  }

 private:
  static constexpr std::size_t kAhead = 8;  // steps computed ahead of the engine, at most
  // Steps the cache simulation computes at once, pool by pool (sim.steps): each pool's arrays are
  // loaded into cache once per chunk rather than once per step.
  static constexpr int kChunk = 8;

  void produce(CacheSimulator& sim, const DecodeStepBuilder& builder, std::int64_t steps) {
    try {
      sim.warm_up(builder.context_at(0));
      for (int first = 0; first < steps; first += kChunk) {
        std::vector<int> chunk;
        std::vector<std::int64_t> contexts;
        for (int step = first; step < steps && step < first + kChunk; ++step) {
          chunk.push_back(step);
          contexts.push_back(builder.context_at(step));
        }
        for (const CacheStepStats& stats : sim.steps(chunk, contexts)) {
          std::vector<LayerAccess> layers;
          for (const auto& l : stats.layers) {
            layers.push_back(LayerAccess{l.misses_mean, std::isfinite(l.misses_stderr) ? l.misses_stderr : 0.0,
                                         l.hits_mean, l.runs_mean, l.evictions_mean, l.prefetched_mean,
                                         l.prefetch_used_mean, l.prefetch_runs_mean});
          }
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [this] { return ready_.size() < kAhead || stop_; });
          if (stop_) return;
          ready_.push_back(std::move(layers));
          lock.unlock();
          changed_.notify_all();
        }
      }
    } catch (...) {
      {
        const std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<LayerAccess>> ready_;
  int consumed_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts once the members above exist
};

}  // namespace ess
