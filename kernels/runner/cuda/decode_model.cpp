#include "kernels/runner/cuda/decode_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "kernels/runner/cuda/check.h"
#include "kernels/runner/trace_file.h"
#include "sim/base/op_names.h"

namespace ess::runner::gpu {

namespace {

// DeepSeek-V3.2-Exp inference/config_671B_v3.2.json: norm_eps (RMSNorm epsilon).
constexpr float kNormEps = 1e-6F;
// Calls queued behind the blocking kernel before it is released: a few layers' worth, far below
// the driver's queue depth (about a thousand launches), so the host never blocks on a full queue
// while the GPU waits for it.
constexpr int kGateCalls = 512;
// The blocking kernel gives up after this much GPU time (queueing a step takes milliseconds).
constexpr std::uint64_t kBlockerTimeoutNs = 5'000'000'000ULL;

constexpr std::string_view kGemm = catname::gemm;
constexpr std::string_view kNorm = catname::norm;
constexpr std::string_view kIndexer = catname::indexer;
constexpr std::string_view kAttention = catname::attention;
constexpr std::string_view kElementwise = catname::elementwise;

struct Sizes {
  std::size_t layer_weights = 0;  // bf16 elements per layer
  std::size_t global_weights = 0;
  std::size_t activations = 0;  // bytes
  std::size_t latent = 0;       // bytes, each side
  std::size_t keys = 0;         // bytes
  std::size_t lists = 0;        // int32 elements
  std::size_t mla_chunks = 0;
};

Sizes sizes_of(const RunnerOptions& o, const LatentLayout& layout) {
  const auto H = static_cast<std::size_t>(o.heads);
  const auto T = static_cast<std::size_t>(o.batch);
  const auto D = static_cast<std::size_t>(o.hidden);
  const auto Q = static_cast<std::size_t>(o.q_lora);
  const auto C = static_cast<std::size_t>(o.kv_lora);
  const auto P = static_cast<std::size_t>(o.qk_rope);
  const auto N = static_cast<std::size_t>(o.qk_nope);
  const auto V = static_cast<std::size_t>(o.v_head);
  const auto IH = static_cast<std::size_t>(o.indexer_heads);
  const auto ID = static_cast<std::size_t>(o.indexer_dim);
  const auto K = static_cast<std::size_t>(o.top_k);
  const auto F = static_cast<std::size_t>(o.ffn);
  const auto W = static_cast<std::size_t>(o.vocab);
  const auto L = static_cast<std::size_t>(o.layers);
  const auto R = static_cast<std::size_t>(layout.rows_per_request);
  Sizes s;
  s.layer_weights = D + (Q + C + P) * D + Q + C + H * (N + P) * Q + IH * ID * Q + (ID + IH) * D + H * N * C +
                    H * C * V + D * H * V + D + 2 * F * D + D * F;
  s.global_weights = 2 * W * D + D;
  s.mla_chunks = (K + kMlaRowsPerChunk - 1) / kMlaRowsPerChunk;
  const std::size_t bf16_elements = 2 * T * D + T * (Q + C + P) + T * Q + T * H * (N + P) + T * IH * ID +
                                    T * (ID + IH) + 4 * T * H * C + T * H * V + T * D + 2 * T * F + T * F + T * D;
  const std::size_t fp32_elements = T * R + 2 * T * H + T * s.mla_chunks * H * C + T * s.mla_chunks * H * 2 + T * W;
  s.activations = 2 * bf16_elements + 4 * fp32_elements + 4 * T /* ids */ + 4 * T * K /* top-k */;
  s.latent = static_cast<std::size_t>(layout.rows()) * kLatentRowBytes;
  s.keys = static_cast<std::size_t>(layout.rows()) * (ID + 4);
  s.lists = L * (4 * T * K + 3 * T);
  return s;
}

}  // namespace

DecodeModel::Footprint DecodeModel::footprint(const RunnerOptions& o, const LatentLayout& layout) {
  const Sizes s = sizes_of(o, layout);
  Footprint f;
  f.device = 2 * (static_cast<std::size_t>(o.layers) * s.layer_weights + s.global_weights) + s.activations + s.latent +
             s.keys + 4 * s.lists;
  f.host = s.latent + 4 * s.lists;
  return f;
}

template <class T>
T* DecodeModel::allocate(std::size_t count) {
  void* p = nullptr;
  RUNNER_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
  device_allocations_.push_back(p);
  return static_cast<T*>(p);
}

bf16* DecodeModel::weight(std::size_t count, float fan_in) {
  // Uniform with variance 1 / fan_in: outputs keep the scale of unit-variance inputs.
  bf16* w = allocate<bf16>(count);
  const float a = std::sqrt(3.0F / fan_in);
  fill_bf16(w, static_cast<std::int64_t>(count), next_seed_++, -a, a, compute_);
  return w;
}

bf16* DecodeModel::norm_weight(std::size_t count) {
  bf16* w = allocate<bf16>(count);
  fill_bf16(w, static_cast<std::int64_t>(count), next_seed_++, 0.5F, 1.5F, compute_);
  return w;
}

DecodeModel::DecodeModel(const RunnerOptions& options, const LatentLayout& layout)
    : o_(options),
      layout_(layout),
      tokens_(static_cast<int>(options.batch)),
      qkv_width_(options.q_lora + options.kv_lora + options.qk_rope),
      qk_head_(options.qk_nope + options.qk_rope) {
  const Sizes s = sizes_of(o_, layout_);
  RUNNER_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  RUNNER_CUDA_CHECK(cudaStreamCreateWithFlags(&fetch_, cudaStreamNonBlocking));
  RUNNER_CUDA_CHECK(cudaStreamCreateWithFlags(&writeback_, cudaStreamNonBlocking));
  RUNNER_CUBLAS_CHECK(cublasCreate(&cublas_));
  RUNNER_CUBLAS_CHECK(cublasSetStream(cublas_, compute_));

  const auto T = static_cast<std::size_t>(tokens_);
  const auto D = static_cast<std::size_t>(o_.hidden);
  const auto Q = static_cast<std::size_t>(o_.q_lora);
  const auto C = static_cast<std::size_t>(o_.kv_lora);
  const auto H = static_cast<std::size_t>(o_.heads);
  const auto N = static_cast<std::size_t>(o_.qk_nope);
  const auto V = static_cast<std::size_t>(o_.v_head);
  const auto IH = static_cast<std::size_t>(o_.indexer_heads);
  const auto ID = static_cast<std::size_t>(o_.indexer_dim);
  const auto F = static_cast<std::size_t>(o_.ffn);
  const auto W = static_cast<std::size_t>(o_.vocab);
  const auto K = static_cast<std::size_t>(o_.top_k);
  const auto R = static_cast<std::size_t>(layout_.rows_per_request);
  const auto qkv = static_cast<std::size_t>(qkv_width_);
  const auto qk = static_cast<std::size_t>(qk_head_);
  const auto f = [](std::size_t v) { return static_cast<float>(v); };

  for (std::int64_t l = 0; l < o_.layers; ++l) {
    LayerWeights w;
    w.attn_norm = norm_weight(D);
    w.qkv = weight(qkv * D, f(D));
    w.q_norm = norm_weight(Q);
    w.kv_norm = norm_weight(C);
    w.q_b = weight(H * qk * Q, f(Q));
    w.indexer_q = weight(IH * ID * Q, f(Q));
    w.indexer_k_w = weight((ID + IH) * D, f(D));
    w.uk = weight(H * N * C, f(N));
    w.uv = weight(H * C * V, f(C));
    w.o = weight(D * H * V, f(H * V));
    w.ffn_norm = norm_weight(D);
    w.gate_up = weight(2 * F * D, f(D));
    w.down = weight(D * F, f(F));
    layers_.push_back(w);
  }
  embedding_ = allocate<bf16>(W * D);
  fill_bf16(embedding_, static_cast<std::int64_t>(W * D), next_seed_++, -1.0F, 1.0F, compute_);
  final_norm_ = norm_weight(D);
  lm_head_ = weight(W * D, f(D));

  ids_ = allocate<std::int32_t>(T);
  fill_ids(ids_, static_cast<std::int64_t>(T), static_cast<std::int32_t>(W), next_seed_++, compute_);
  x_ = allocate<bf16>(T * D);
  fill_bf16(x_, static_cast<std::int64_t>(T * D), next_seed_++, -1.0F, 1.0F, compute_);
  xn_ = allocate<bf16>(T * D);
  qkv_ = allocate<bf16>(T * qkv);
  qa_ = allocate<bf16>(T * Q);
  qb_ = allocate<bf16>(T * H * qk);
  iq_ = allocate<bf16>(T * IH * ID);
  ikw_ = allocate<bf16>(T * (ID + IH));
  scores_ = allocate<float>(T * R);
  topk_ = allocate<std::int32_t>(T * K);
  q_latent_ = allocate<bf16>(T * H * C);
  o_latent_ = allocate<bf16>(T * H * C);
  o_hits_ = allocate<bf16>(T * H * C);
  o_misses_ = allocate<bf16>(T * H * C);
  lse_hits_ = allocate<float>(T * H);
  lse_misses_ = allocate<float>(T * H);
  mla_scratch_.partial_o = allocate<float>(T * s.mla_chunks * H * C);
  mla_scratch_.partial_ml = allocate<float>(T * s.mla_chunks * H * 2);
  v_ = allocate<bf16>(T * H * V);
  attn_out_ = allocate<bf16>(T * D);
  gate_up_ = allocate<bf16>(T * 2 * F);
  act_ = allocate<bf16>(T * F);
  mlp_out_ = allocate<bf16>(T * D);
  logits_ = allocate<float>(T * W);

  // Latent caches: the same deterministic rows on both sides (so a fetched row is the row the
  // device would have held), host copy pinned and mapped for the gather kernel.
  cache_ = allocate<std::uint8_t>(s.latent);
  void* host = nullptr;
  RUNNER_CUDA_CHECK(cudaHostAlloc(&host, s.latent, cudaHostAllocMapped | cudaHostAllocPortable));
  host_cache_ = static_cast<std::uint8_t*>(host);
  void* mapped = nullptr;
  RUNNER_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  host_cache_device_ = static_cast<std::uint8_t*>(mapped);
  const std::uint64_t latent_seed = next_seed_++;
  fill_latent_rows(cache_, layout_.rows(), latent_seed, compute_);
  fill_latent_rows(host_cache_device_, layout_.rows(), latent_seed, compute_);
  keys_ = allocate<std::uint8_t>(static_cast<std::size_t>(layout_.rows()) * ID);
  key_scales_ = allocate<float>(static_cast<std::size_t>(layout_.rows()));
  fill_indexer_keys(keys_, key_scales_, layout_.rows(), next_seed_++, compute_);

  lists_capacity_ = s.lists;
  void* staging = nullptr;
  RUNNER_CUDA_CHECK(cudaHostAlloc(&staging, lists_capacity_ * sizeof(std::int32_t), cudaHostAllocDefault));
  lists_host_ = static_cast<std::int32_t*>(staging);
  lists_ = allocate<std::int32_t>(lists_capacity_);

  void* flags = nullptr;
  RUNNER_CUDA_CHECK(cudaHostAlloc(&flags, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flags_host_ = static_cast<int*>(flags);
  flags_host_[0] = 1;
  flags_host_[1] = 0;
  void* flags_mapped = nullptr;
  RUNNER_CUDA_CHECK(cudaHostGetDevicePointer(&flags_mapped, flags, 0));
  flags_device_ = static_cast<int*>(flags_mapped);

  // Per layer at most 21 compute ops, a fetch, a wait and a write-back (48 events); the head and
  // the final wait 10 more.
  events_.resize(static_cast<std::size_t>(64 * o_.layers + 16));
  for (cudaEvent_t& e : events_) RUNNER_CUDA_CHECK(cudaEventCreate(&e));
  RUNNER_CUDA_CHECK(cudaEventCreate(&base_));
  RUNNER_CUDA_CHECK(cudaEventCreate(&step_base_));
  const auto untimed = [](std::vector<cudaEvent_t>& list, std::size_t n) {
    list.resize(n);
    for (cudaEvent_t& e : list) RUNNER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  };
  untimed(fetch_ready_, static_cast<std::size_t>(o_.layers));
  untimed(fetch_done_, static_cast<std::size_t>(o_.layers));
  untimed(writeback_ready_, static_cast<std::size_t>(o_.layers));
  RUNNER_CUDA_CHECK(cudaEventCreateWithFlags(&writeback_done_, cudaEventDisableTiming));
  RUNNER_CUDA_CHECK(cudaStreamSynchronize(compute_));
}

DecodeModel::~DecodeModel() {
  // Errors are ignored here: the process is ending, and a failed free changes nothing it reports.
  cudaDeviceSynchronize();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (auto* list : {&fetch_ready_, &fetch_done_, &writeback_ready_}) {
    for (cudaEvent_t e : *list) cudaEventDestroy(e);
  }
  for (cudaEvent_t e : {base_, step_base_, writeback_done_}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  for (void* p : device_allocations_) cudaFree(p);
  if (host_cache_ != nullptr) cudaFreeHost(host_cache_);
  if (lists_host_ != nullptr) cudaFreeHost(lists_host_);
  if (flags_host_ != nullptr) cudaFreeHost(flags_host_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  for (cudaStream_t s : {compute_, fetch_, writeback_}) {
    if (s != nullptr) cudaStreamDestroy(s);
  }
}

std::int64_t DecodeModel::row(std::int64_t layer, std::int64_t request, std::int64_t position) const {
  return layout_.row(layer, request, position);
}

// ---- queueing ---------------------------------------------------------------------------------------

void DecodeModel::count_calls(int calls) {
  calls_ += calls;
  if (!released_ && calls_ >= kGateCalls) release();
}

void DecodeModel::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *static_cast<volatile int*>(flags_host_) = 1;
  released_ = true;
}

int DecodeModel::record(StepTimeline& timeline, cudaStream_t stream) {
  const int index = timeline.take_event();
  if (static_cast<std::size_t>(index) >= events_.size()) {
    die(__FILE__, __LINE__, "DecodeModel::record", "the step needs more timing events than the pool holds");
  }
  RUNNER_CUDA_CHECK(cudaEventRecord(events_[static_cast<std::size_t>(index)], stream));
  count_calls(1);
  return index;
}

template <class Launch>
void DecodeModel::op(StepTimeline& timeline, std::string_view name, std::string_view category, int layer, Launch&& launch) {
  const int start = record(timeline, compute_);
  launch();
  count_calls(1);
  const int end = record(timeline, compute_);
  timeline.add(OpRecord{std::string(name), std::string(category), kComputeTid, layer, start, end});
}

void DecodeModel::linear(const bf16* x, std::int64_t x_stride, const bf16* w, void* y, cudaDataType_t y_type,
                         std::int64_t n, std::int64_t k) {
  // Column-major view: Y^T (n x T) = W (k x n, transposed) . X^T (k x T).
  const float one = 1.0F;
  const float zero = 0.0F;
  RUNNER_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), tokens_,
                                   static_cast<int>(k), &one, w, CUDA_R_16BF, static_cast<int>(k), x, CUDA_R_16BF,
                                   static_cast<int>(x_stride), &zero, y, y_type, static_cast<int>(n),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

StepTimeline DecodeModel::enqueue(int step, std::int64_t context, const StepLists& lists, bool record_base) {
  if (lists.data.size() > lists_capacity_ || static_cast<std::int64_t>(lists.layers.size()) != o_.layers) {
    die(__FILE__, __LINE__, "DecodeModel::enqueue", "step lists do not fit the model");
  }
  // The lists go up before the blocking kernel: they are bookkeeping, not part of the step.
  std::memcpy(lists_host_, lists.data.data(), lists.data.size() * sizeof(std::int32_t));
  if (!lists.data.empty()) {
    RUNNER_CUDA_CHECK(cudaMemcpyAsync(lists_, lists_host_, lists.data.size() * sizeof(std::int32_t),
                                      cudaMemcpyHostToDevice, compute_));
  }
  flags_host_[0] = 0;
  flags_host_[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  blocker(flags_device_, flags_device_ + 1, kBlockerTimeoutNs, compute_);
  calls_ = 0;
  released_ = false;
  if (record_base) {
    RUNNER_CUDA_CHECK(cudaEventRecord(base_, compute_));
    have_base_ = true;
  }
  RUNNER_CUDA_CHECK(cudaEventRecord(step_base_, compute_));

  StepTimeline timeline(step);
  const std::int64_t D = o_.hidden;
  op(timeline, opname::embedding, kElementwise, -1, [&] { embedding(ids_, embedding_, x_, tokens_, static_cast<int>(D), compute_); });
  for (int l = 0; l < static_cast<int>(o_.layers); ++l) {
    attention(timeline, l, context, lists.layers[static_cast<std::size_t>(l)]);
    writeback(timeline, l, context);
    mlp(timeline, l);
  }
  op(timeline, opname::final_norm, kNorm, -1,
     [&] { rmsnorm(x_, D, final_norm_, xn_, D, tokens_, static_cast<int>(D), kNormEps, compute_); });
  op(timeline, opname::lm_head, kGemm, -1, [&] { linear(xn_, D, lm_head_, logits_, CUDA_R_32F, o_.vocab, D); });
  op(timeline, opname::sampling, kElementwise, -1,
     [&] { argmax(logits_, static_cast<int>(o_.vocab), ids_, tokens_, compute_); });
  // A step ends when its write-backs have reached host memory (the next step may fetch them).
  const int start = record(timeline, compute_);
  RUNNER_CUDA_CHECK(cudaStreamWaitEvent(compute_, writeback_done_, 0));
  const int end = record(timeline, compute_);
  timeline.add(OpRecord{std::string(opname::wait_writeback), std::string(catname::runner_wait), kComputeTid, -1, start, end});
  if (!released_) release();
  // What was queued must be the simulator's op sequence (names, categories, streams, layers).
  std::vector<bool> fetches;
  for (const LayerLists& layer : lists.layers) fetches.push_back(layer.fetch_rows > 0);
  check_step_ops(timeline, expected_step_ops(o_.overlap, fetches));
  return timeline;
}

void DecodeModel::attention(StepTimeline& timeline, int l, std::int64_t context, const LayerLists& lists) {
  const LayerWeights& w = layers_[static_cast<std::size_t>(l)];
  const std::int64_t D = o_.hidden;
  const std::int64_t Q = o_.q_lora;
  const std::int64_t H = o_.heads;
  const std::int64_t C = o_.kv_lora;
  const std::int64_t IQ = o_.indexer_heads * o_.indexer_dim;
  const std::int64_t IKW = o_.indexer_dim + o_.indexer_heads;
  const std::int64_t R = layout_.rows_per_request;
  const auto ctx = static_cast<int>(context);

  op(timeline, opname::attn_norm, kNorm, l,
     [&] { rmsnorm(x_, D, w.attn_norm, xn_, D, tokens_, static_cast<int>(D), kNormEps, compute_); });
  op(timeline, opname::q_a_kv_a, kGemm, l, [&] { linear(xn_, D, w.qkv, qkv_, CUDA_R_16BF, qkv_width_, D); });
  op(timeline, opname::q_norm, kNorm, l,
     [&] { rmsnorm(qkv_, qkv_width_, w.q_norm, qa_, Q, tokens_, static_cast<int>(Q), kNormEps, compute_); });
  // kv_norm also writes each request's new latent row at position `context` of its device cache.
  op(timeline, opname::kv_norm, kNorm, l, [&] {
    kv_norm_store(qkv_ + Q, qkv_width_, w.kv_norm, cache_ + row(l, 0, context) * kLatentRowBytes,
                  R * kLatentRowBytes, tokens_, kNormEps, compute_);
  });
  op(timeline, opname::q_b, kGemm, l, [&] { linear(qa_, Q, w.q_b, qb_, CUDA_R_16BF, H * qk_head_, Q); });
  op(timeline, opname::indexer_q, kGemm, l, [&] { linear(qa_, Q, w.indexer_q, iq_, CUDA_R_16BF, IQ, Q); });
  op(timeline, opname::indexer_k_w, kGemm, l, [&] { linear(xn_, D, w.indexer_k_w, ikw_, CUDA_R_16BF, IKW, D); });
  op(timeline, opname::indexer_score, kIndexer, l, [&] {
    const std::int64_t first = static_cast<std::int64_t>(l) * o_.batch * R;
    indexer_score(iq_, ikw_, IKW, keys_ + first * o_.indexer_dim, key_scales_ + first, R, ctx, scores_, R, tokens_,
                  compute_);
  });
  // The real top-k over the scores; the entries attended are the access trace's (see README).
  op(timeline, opname::indexer_topk, kIndexer, l, [&] {
    topk(scores_, R, ctx, static_cast<int>(o_.top_k), topk_, o_.top_k, tokens_, compute_);
  });
  op(timeline, opname::q_absorb, kGemm, l, [&] {
    // Per head h: q_latent[t][h] (kv_lora) = q_nope[t][h] (qk_nope) . W_uk[h] (qk_nope x kv_lora).
    const float one = 1.0F;
    const float zero = 0.0F;
    RUNNER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(C), tokens_, static_cast<int>(o_.qk_nope), &one, w.uk,
        CUDA_R_16BF, static_cast<int>(C), o_.qk_nope * C, qb_, CUDA_R_16BF, static_cast<int>(H * qk_head_), qk_head_,
        &zero, q_latent_, CUDA_R_16BF, static_cast<int>(H * C), C, static_cast<int>(H), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
  });

  // As DecodeStepBuilder::add_offload_attention: no misses means nothing to fetch or hide (serial
  // path, no fetch); serial fetches after q_absorb and waits; da attends the hits during the fetch.
  const bool misses = lists.fetch_rows > 0;
  if (!misses || o_.overlap == OverlapMode::serial) {
    if (misses) {
      RUNNER_CUDA_CHECK(cudaEventRecord(fetch_ready_[static_cast<std::size_t>(l)], compute_));
      count_calls(1);
      fetch(timeline, l, lists, opname::fetch);
      wait_fetch(timeline, l);
    }
    op(timeline, opname::sparse_mla, kAttention, l, [&] {
      attend(lists_ + lists.selected, lists_ + lists.selected_count, lists.max_selected, o_latent_, nullptr);
    });
  } else {
    // The fetch may start once q_absorb is done; the hits kernel is queued before the fetch's
    // calls, so that it runs beside the fetch even when issuing the copies takes the host long.
    RUNNER_CUDA_CHECK(cudaEventRecord(fetch_ready_[static_cast<std::size_t>(l)], compute_));
    count_calls(1);
    op(timeline, opname::sparse_mla_hits, kAttention, l,
       [&] { attend(lists_ + lists.hits, lists_ + lists.hit_count, lists.max_hits, o_hits_, lse_hits_); });
    fetch(timeline, l, lists, opname::fetch_overlap);
    wait_fetch(timeline, l);
    op(timeline, opname::sparse_mla_misses, kAttention, l,
       [&] { attend(lists_ + lists.misses, lists_ + lists.miss_count, lists.max_misses, o_misses_, lse_misses_); });
    op(timeline, opname::attention_merge, kElementwise, l, [&] {
      attention_merge(o_hits_, lse_hits_, o_misses_, lse_misses_, o_latent_, tokens_, static_cast<int>(H), compute_);
    });
  }

  op(timeline, opname::v_up, kGemm, l, [&] {
    // Per head h: v[t][h] (v_head) = o_latent[t][h] (kv_lora) . W_uv[h] (kv_lora x v_head).
    const float one = 1.0F;
    const float zero = 0.0F;
    RUNNER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(o_.v_head), tokens_, static_cast<int>(C), &one, w.uv,
        CUDA_R_16BF, static_cast<int>(o_.v_head), C * o_.v_head, o_latent_, CUDA_R_16BF, static_cast<int>(H * C), C,
        &zero, v_, CUDA_R_16BF, static_cast<int>(H * o_.v_head), o_.v_head, static_cast<int>(H), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
  });
  op(timeline, opname::wo, kGemm, l, [&] { linear(v_, H * o_.v_head, w.o, attn_out_, CUDA_R_16BF, D, H * o_.v_head); });
  op(timeline, opname::attn_residual, kElementwise, l,
     [&] { residual_add(x_, attn_out_, static_cast<std::int64_t>(tokens_) * D, compute_); });
}

void DecodeModel::attend(const std::int32_t* rows, const std::int32_t* counts, std::int64_t max_count, bf16* out,
                         float* lse) {
  const float scale = 1.0F / std::sqrt(static_cast<float>(qk_head_));
  sparse_mla(q_latent_, qb_ + o_.qk_nope, o_.heads * qk_head_, qk_head_, cache_, rows, o_.top_k, counts,
             static_cast<int>(max_count), static_cast<int>(o_.heads), scale, mla_scratch_, out, lse, tokens_, compute_);
}

void DecodeModel::fetch(StepTimeline& timeline, int l, const LayerLists& lists, std::string_view name) {
  // fetch_ready_[l] was recorded on the compute stream after q_absorb.
  RUNNER_CUDA_CHECK(cudaStreamWaitEvent(fetch_, fetch_ready_[static_cast<std::size_t>(l)], 0));
  count_calls(1);
  const int start = record(timeline, fetch_);
  if (o_.transfer == TransferPath::gather) {
    gather_rows(host_cache_device_, cache_, lists_ + lists.fetch, lists.fetch_rows, fetch_);
    count_calls(1);
  } else {
    // One cudaMemcpyAsync per contiguous run: the same row range on both sides.
    for (const CopyRun& run : lists.runs) {
      const std::size_t offset = static_cast<std::size_t>(run.first) * kLatentRowBytes;
      RUNNER_CUDA_CHECK(cudaMemcpyAsync(cache_ + offset, host_cache_ + offset,
                                        static_cast<std::size_t>(run.rows) * kLatentRowBytes, cudaMemcpyHostToDevice,
                                        fetch_));
      count_calls(1);
    }
  }
  const int end = record(timeline, fetch_);
  timeline.add(OpRecord{std::string(name), std::string(catname::runner_transfer), kFetchTid, l, start, end});
  RUNNER_CUDA_CHECK(cudaEventRecord(fetch_done_[static_cast<std::size_t>(l)], fetch_));
  count_calls(1);
}

void DecodeModel::wait_fetch(StepTimeline& timeline, int l) {
  // The exposed part of the fetch: how long the compute stream stands still waiting for it.
  const int start = record(timeline, compute_);
  RUNNER_CUDA_CHECK(cudaStreamWaitEvent(compute_, fetch_done_[static_cast<std::size_t>(l)], 0));
  count_calls(1);
  const int end = record(timeline, compute_);
  timeline.add(OpRecord{std::string(opname::wait_fetch), std::string(catname::runner_wait), kComputeTid, l, start, end});
}

void DecodeModel::writeback(StepTimeline& timeline, int l, std::int64_t context) {
  // As the simulator: started after the layer's attention, waited for only at the end of the step.
  RUNNER_CUDA_CHECK(cudaEventRecord(writeback_ready_[static_cast<std::size_t>(l)], compute_));
  RUNNER_CUDA_CHECK(cudaStreamWaitEvent(writeback_, writeback_ready_[static_cast<std::size_t>(l)], 0));
  count_calls(2);
  const int start = record(timeline, writeback_);
  const std::int64_t first = row(l, 0, context);
  if (o_.transfer == TransferPath::gather) {
    scatter_rows(cache_, host_cache_device_, first, layout_.rows_per_request, tokens_, writeback_);
    count_calls(1);
  } else {
    for (int r = 0; r < tokens_; ++r) {  // one run per request
      const std::size_t offset = static_cast<std::size_t>(row(l, r, context)) * kLatentRowBytes;
      RUNNER_CUDA_CHECK(cudaMemcpyAsync(host_cache_ + offset, cache_ + offset, kLatentRowBytes,
                                        cudaMemcpyDeviceToHost, writeback_));
      count_calls(1);
    }
  }
  const int end = record(timeline, writeback_);
  timeline.add(OpRecord{std::string(opname::writeback), std::string(catname::runner_writeback), kWritebackTid, l, start, end});
  if (l + 1 == static_cast<int>(o_.layers)) {
    RUNNER_CUDA_CHECK(cudaEventRecord(writeback_done_, writeback_));
    count_calls(1);
  }
}

void DecodeModel::mlp(StepTimeline& timeline, int l) {
  const LayerWeights& w = layers_[static_cast<std::size_t>(l)];
  const std::int64_t D = o_.hidden;
  const std::int64_t F = o_.ffn;
  op(timeline, opname::ffn_norm, kNorm, l,
     [&] { rmsnorm(x_, D, w.ffn_norm, xn_, D, tokens_, static_cast<int>(D), kNormEps, compute_); });
  op(timeline, opname::gate_up, kGemm, l, [&] { linear(xn_, D, w.gate_up, gate_up_, CUDA_R_16BF, 2 * F, D); });
  op(timeline, opname::act, kElementwise, l, [&] { silu_mul(gate_up_, act_, tokens_, static_cast<int>(F), compute_); });
  op(timeline, opname::down, kGemm, l, [&] { linear(act_, F, w.down, mlp_out_, CUDA_R_16BF, D, F); });
  op(timeline, opname::mlp_residual, kElementwise, l,
     [&] { residual_add(x_, mlp_out_, static_cast<std::int64_t>(tokens_) * D, compute_); });
}

std::vector<double> DecodeModel::finish(const StepTimeline& timeline) {
  for (cudaStream_t s : {compute_, fetch_, writeback_}) RUNNER_CUDA_CHECK(cudaStreamSynchronize(s));
  if (flags_host_[1] != 0) {
    std::fprintf(stderr,
                 "ess-runner: warning: step %d: the blocking kernel timed out before the step was queued; its "
                 "times include host launch gaps\n",
                 timeline.step());
  }
  if (!have_base_) return {};  // a warm-up step before the recorded ones: nothing to resolve
  // Times within the step relative to the step's own base (cudaEventElapsedTime is a float of
  // milliseconds: fine for a step, coarse over a long run), plus the step base's offset.
  float offset = 0.0F;
  RUNNER_CUDA_CHECK(cudaEventElapsedTime(&offset, base_, step_base_));
  std::vector<double> ms(static_cast<std::size_t>(timeline.events_used()));
  for (std::size_t i = 0; i < ms.size(); ++i) {
    float since_step = 0.0F;
    RUNNER_CUDA_CHECK(cudaEventElapsedTime(&since_step, step_base_, events_[i]));
    ms[i] = static_cast<double>(offset) + static_cast<double>(since_step);
  }
  return ms;
}

}  // namespace ess::runner::gpu
