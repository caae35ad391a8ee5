#include "sim/serving/serving_memory.h"

#include <algorithm>
#include <cmath>

#include "sim/base/error.h"
#include "sim/memory/memory_plan.h"

namespace ess {

namespace {

constexpr std::int64_t kMaxBatchBound = 1 << 20;  // the loader's bound on batch_per_gpu

// Weights, activations, runtime and reserve of one GPU at `batch` requests of `tokens` each.
double fixed_bytes(const DecodeRun& own, std::int64_t batch, std::int64_t tokens) {
  const Scenario& s = *own.system;
  DecodeRun at = own;
  at.workload.batch_per_gpu = batch;
  at.workload.context_length = tokens;
  at.workload.decode_steps = 0;  // cache_tokens() = the context: the request's final length
  // Colocated prefill: every step may carry the token budget's prompt chunk besides the decode
  // tokens (engines reserve activations for their max_num_batched_tokens), the last chunk of the
  // longest prompt scoring the most keys.
  if (s.serving && s.serving->prefill.colocated()) {
    const std::int64_t budget = s.serving->prefill.tokens_per_gpu;
    at.workload.prefill_chunk = PrefillChunk{budget, std::max<std::int64_t>(0, tokens - budget)};
  }
  const MemoryBudget b = plan_memory(at, batch);
  return (b.line("weights") + b.line("activations") + b.line("runtime") + b.line("reserve")).value();
}

}  // namespace

ServingMemory::ServingMemory(const Scenario& s, std::vector<std::int64_t> lengths, std::optional<std::int64_t> batch_bound)
    : s_(&s), own_(decode_run(s)), offload_(own_.offload()) {
  size(std::move(lengths), false, batch_bound);
}

ServingMemory::ServingMemory(const Scenario& s, std::int64_t min_tokens, std::int64_t max_tokens,
                             std::optional<std::int64_t> batch_bound)
    : s_(&s), own_(decode_run(s)), offload_(own_.offload()) {
  size({min_tokens, max_tokens}, true, batch_bound);
}

void ServingMemory::size(std::vector<std::int64_t> lengths, bool repeat_shortest, std::optional<std::int64_t> batch_bound) {
  if (lengths.empty()) throw InternalError("ServingMemory: no request lengths");
  std::sort(lengths.begin(), lengths.end());
  max_tokens_ = lengths.back();
  const Scenario& s = *s_;
  const auto& cpu = s.hardware.cpu;
  host_capacity_ = cpu.dram_capacity_per_socket.value();
  host_budget_ = offload_ ? host_capacity_ * s.cache.host_memory_threshold : 0.0;
  sockets_ = cpu.sockets * s.hardware.nodes;
  // The activation estimate is linear in the step's requests: its value at 1 and 2 requests gives
  // the part no request adds and each request's share (at the longest request's keys: an upper bound).
  // (Under tensor-parallel attention a batch of b per GPU is b x tensor_parallel requests of the
  // replica, which is the serving slot.)
  const double one = fixed_bytes(own_, 1, max_tokens_);
  activations_per_request_ =
      std::max(0.0, fixed_bytes(own_, 2, max_tokens_) - one) / static_cast<double>(s.parallelism.tensor_parallel);
  fixed_ = one - activations_per_request_ * static_cast<double>(s.parallelism.tensor_parallel);
  hbm_budget_ = s.hardware.gpu.hbm_capacity.value() - fixed_;
  const auto held = [&](std::int64_t tokens) { return (offload_ ? offloaded(tokens) : gpu_only(tokens)).hbm_held(); };
  std::int64_t fit = 0;
  if (hbm_budget_ > 0.0) {
    if (repeat_shortest) {
      fit = static_cast<std::int64_t>(std::min(static_cast<double>(kMaxBatchBound), std::floor(hbm_budget_ / held(lengths.front()))));
    } else {
      double used = 0.0;
      for (const std::int64_t n : lengths) {
        used += held(n);
        if (used > hbm_budget_ || fit == kMaxBatchBound) break;
        ++fit;
      }
    }
  }
  // Never 0: a request no GPU holds is named by the serving loop before it runs.
  batch_bound_ = std::max<std::int64_t>(1, fit);
  if (batch_bound) {
    if (*batch_bound > batch_bound_) {
      clamped_ = *batch_bound;
    } else {
      batch_bound_ = *batch_bound;
    }
  }
}

Footprint ServingMemory::gpu_only(std::int64_t tokens) const {
  return {(kv_cache_bytes_per_request(own_, tokens) + indexer_cache_bytes_per_request(own_, tokens)).value(), 0.0,
          activations_per_request_};
}

Footprint ServingMemory::offloaded(std::int64_t tokens) const {
  const Scenario& s = *s_;
  const std::int64_t top_k = s.model.indexer ? s.model.indexer->top_k : tokens;
  // As place_requests: a pool holds at least one step's selection outside the pinned window.
  const std::int64_t pool = std::max(s.cache.pool_capacity(tokens),
                                     std::min(top_k, std::max<std::int64_t>(0, tokens - s.cache.pinned_recent)));
  const std::int64_t resident = std::min(tokens, pool + s.cache.pinned_recent);
  const double buffers = 2.0 * static_cast<double>(std::min(top_k, tokens)) * s.model.attention.cache_bytes_per_token.value();
  return {(kv_cache_bytes_per_request(own_, resident) + indexer_cache_bytes_per_request(own_, tokens)).value() + buffers,
          kv_cache_bytes_per_request(own_, tokens).value(), activations_per_request_};
}

int ServingMemory::socket_of(int gpu) const {
  const int per_node = s_->hardware.gpu.count;
  const int node = gpu / per_node;
  const int local = std::min(s_->hardware.cpu.sockets - 1, (gpu % per_node) / s_->hardware.cpu.gpus_per_socket);
  return node * s_->hardware.cpu.sockets + local;
}

bool ServingMemory::fallback_possible() const {
  if (!offload_) return false;
  const auto& cpu = s_->hardware.cpu;
  const auto sharing = static_cast<double>(std::min(cpu.gpus_per_socket, s_->hardware.gpu.count));
  return sharing * static_cast<double>(batch_bound_) * offloaded(max_tokens_).host > host_budget_;
}

}  // namespace ess
