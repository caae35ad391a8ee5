// The GPU side of ess-runner: weights, activations and caches of L dense DeepSeek-V3.2-Exp-shaped
// layers on one GPU, and one decode step queued as the simulator's DecodeStepBuilder builds it
// (sim/graph/decode_step.cpp, dense layers, TP 1, no MTP), with a pair of timing events around
// every op.
//
// Streams: compute (every kernel and GEMM), fetch (miss fetches: the gather kernel or the
// cudaMemcpyAsync runs), writeback (each layer's new latent rows, device to host). A step is
// queued behind a blocking kernel, released once the first few hundred calls are queued (or the
// whole step, if shorter), so that host launch gaps do not inflate the first ops.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/runner/cuda/kernels.h"
#include "kernels/runner/options.h"
#include "kernels/runner/step_lists.h"
#include "kernels/runner/timeline.h"

namespace ess::runner::gpu {

class DecodeModel {
 public:
  // Device and pinned host bytes the model allocates for these options.
  struct Footprint {
    std::size_t device = 0;
    std::size_t host = 0;
  };
  [[nodiscard]] static Footprint footprint(const RunnerOptions& options, const LatentLayout& layout);

  // Allocates everything and fills it with deterministic random data (weights, caches, token
  // ids). The host latent cache is pinned, mapped memory; the device cache starts as its copy.
  DecodeModel(const RunnerOptions& options, const LatentLayout& layout);
  ~DecodeModel();
  DecodeModel(const DecodeModel&) = delete;
  DecodeModel& operator=(const DecodeModel&) = delete;

  // Queues step `step` (at `context` tokens per request) with its lists: uploads the lists, then
  // the blocking kernel, then the step's ops. `record_base`: this step's start is time zero of the
  // trace. Returns the step's op records; the step runs asynchronously.
  StepTimeline enqueue(int step, std::int64_t context, const StepLists& lists, bool record_base);

  // Waits for the queued step and returns the time of each of its events in milliseconds since
  // the base event (index = event index of the timeline); empty before any step recorded the
  // base (warm-up steps). Prints a warning if the blocking kernel timed out (the step then
  // includes host launch gaps).
  std::vector<double> finish(const StepTimeline& timeline);

 private:
  struct LayerWeights {
    bf16* attn_norm = nullptr;
    bf16* qkv = nullptr;  // fused q_a / kv_a (+ k rope) down-projection
    bf16* q_norm = nullptr;
    bf16* kv_norm = nullptr;
    bf16* q_b = nullptr;
    bf16* indexer_q = nullptr;
    bf16* indexer_k_w = nullptr;
    bf16* uk = nullptr;  // per head: qk_nope x kv_lora (absorbed into the query)
    bf16* uv = nullptr;  // per head: kv_lora x v_head
    bf16* o = nullptr;
    bf16* ffn_norm = nullptr;
    bf16* gate_up = nullptr;
    bf16* down = nullptr;
  };

  template <class T>
  T* allocate(std::size_t count);
  bf16* weight(std::size_t count, float fan_in);
  bf16* norm_weight(std::size_t count);

  // A compute-stream op: start event, the launches, end event.
  template <class Launch>
  void op(StepTimeline& timeline, std::string_view name, std::string_view category, int layer, Launch&& launch);
  int record(StepTimeline& timeline, cudaStream_t stream);
  void count_calls(int calls);
  void release();

  void attention(StepTimeline& timeline, int layer, std::int64_t context, const LayerLists& lists);
  void fetch(StepTimeline& timeline, int layer, const LayerLists& lists, std::string_view name);
  void wait_fetch(StepTimeline& timeline, int layer);
  void attend(const std::int32_t* rows, const std::int32_t* counts, std::int64_t max_count, bf16* out, float* lse);
  void writeback(StepTimeline& timeline, int layer, std::int64_t context);
  void mlp(StepTimeline& timeline, int layer);
  // Y[T, n] = X[T, k] W[n, k]^T (row-major), bf16 in, fp32 accumulation, bf16 or fp32 out.
  void linear(const bf16* x, std::int64_t x_stride, const bf16* w, void* y, cudaDataType_t y_type, std::int64_t n,
              std::int64_t k);
  [[nodiscard]] std::int64_t row(std::int64_t layer, std::int64_t request, std::int64_t position) const;

  RunnerOptions o_;
  LatentLayout layout_;
  int tokens_;
  std::int64_t qkv_width_;
  std::int64_t qk_head_;

  std::vector<void*> device_allocations_;
  std::uint64_t next_seed_ = 0x455353ULL;  // "ESS"
  cudaStream_t compute_ = nullptr;
  cudaStream_t fetch_ = nullptr;
  cudaStream_t writeback_ = nullptr;
  cublasHandle_t cublas_ = nullptr;

  std::vector<LayerWeights> layers_;
  bf16* embedding_ = nullptr;
  bf16* final_norm_ = nullptr;
  bf16* lm_head_ = nullptr;

  // Activations (tokens rows each).
  std::int32_t* ids_ = nullptr;
  bf16* x_ = nullptr;
  bf16* xn_ = nullptr;
  bf16* qkv_ = nullptr;
  bf16* qa_ = nullptr;
  bf16* qb_ = nullptr;
  bf16* iq_ = nullptr;
  bf16* ikw_ = nullptr;
  float* scores_ = nullptr;
  std::int32_t* topk_ = nullptr;
  bf16* q_latent_ = nullptr;
  bf16* o_latent_ = nullptr;
  bf16* o_hits_ = nullptr;
  bf16* o_misses_ = nullptr;
  float* lse_hits_ = nullptr;
  float* lse_misses_ = nullptr;
  MlaScratch mla_scratch_;
  bf16* v_ = nullptr;
  bf16* attn_out_ = nullptr;
  bf16* gate_up_ = nullptr;
  bf16* act_ = nullptr;
  bf16* mlp_out_ = nullptr;
  float* logits_ = nullptr;

  // Caches: latent rows on both sides (same layout), indexer keys on the GPU.
  std::uint8_t* cache_ = nullptr;
  std::uint8_t* host_cache_ = nullptr;         // pinned, mapped
  std::uint8_t* host_cache_device_ = nullptr;  // its device pointer
  std::uint8_t* keys_ = nullptr;
  float* key_scales_ = nullptr;

  // Per-step lists: pinned staging and their device copy.
  std::int32_t* lists_host_ = nullptr;
  std::int32_t* lists_ = nullptr;
  std::size_t lists_capacity_ = 0;

  // Events: timing pool, the trace's base, each step's base, and untimed stream dependencies.
  std::vector<cudaEvent_t> events_;
  cudaEvent_t base_ = nullptr;
  cudaEvent_t step_base_ = nullptr;
  bool have_base_ = false;
  std::vector<cudaEvent_t> fetch_ready_;
  std::vector<cudaEvent_t> fetch_done_;
  std::vector<cudaEvent_t> writeback_ready_;
  cudaEvent_t writeback_done_ = nullptr;

  // The blocking kernel's flags (pinned, mapped) and the count of calls queued behind it.
  int* flags_host_ = nullptr;
  int* flags_device_ = nullptr;
  int calls_ = 0;
  bool released_ = true;
};

}  // namespace ess::runner::gpu
