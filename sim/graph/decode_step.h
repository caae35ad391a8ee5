// The decode-step operator graph: from the model, parallelism and workload, the segments each GPU
// executes in one step, priced by the cost models. No SimGrid here: the engine (sim/engine)
// schedules what this builds. The layout and the blocks shared with the prefill step (embedding,
// MLP, MoE, head) are in step_blocks.h; this adds decode attention (GPU-only or offloaded).
//
// MLA's latent cache is replicated on TP ranks. Each replica serves batch_per_gpu x tp requests;
// each request has mtp.depth query tokens. With two micro-batches every GPU's plan holds both
// passes (lane 0: ceil(batch / 2) requests, lane 1: the rest), each with its own routing.
//
// A step may also prefill a chunk of a prompt (workload.prefill_chunk, as engines mix chunked
// prefill into decode iterations under a token budget): every attention replica runs the chunk's
// new tokens through the projections, MLP and MoE with the decode tokens, their attention core
// (prefill_attention.h) after the decode requests', an LM head row for the chunk's last token and
// the MTP modules over the chunk. Such a step runs eagerly (no CUDA-graph padding) and its MoE
// all-to-all uses DeepEP's normal kernels (thousands of tokens per GPU), routing sampled as in
// prefill. In offload mode the chunk's latent entries are written back to host memory with the
// decode tokens'. With two micro-batches the chunk is split in two like a prefill step's pieces.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "models/attention.h"
#include "models/cost.h"
#include "sim/config/run_request.h"
#include "sim/graph/op.h"
#include "sim/graph/prefill_attention.h"
#include "sim/base/rng.h"
#include "sim/graph/step_blocks.h"

namespace ess {

class DecodeStepBuilder {
 public:
  // `batch_per_gpu` is the resolved batch (the scenario's, or the largest that fits). In offload
  // mode `offloaded` of them keep their latent cache in host memory (the rest are GPU-only) and
  // `cold_fraction` of each offloaded cache is on NVMe.
  // `run` must outlive this.
  DecodeStepBuilder(const DecodeRun& run, std::int64_t batch_per_gpu, std::int64_t offloaded = 0,
                    double cold_fraction = 0.0);
  DecodeStepBuilder(DecodeRun&&, std::int64_t, std::int64_t = 0, double = 0.0) = delete;

  [[nodiscard]] int gpus() const { return gpus_; }
  // Layers with their own weights and caches: the main layers, then the MTP modules in use.
  [[nodiscard]] int layer_count() const { return layers_total_; }
  // "dense", "moe" or "mtp" for each layer index.
  [[nodiscard]] std::string_view layer_kind(int layer) const { return blocks_.layer_kind(layer); }
  // Cached tokens per request at the start of step `step` (grows by the accepted tokens).
  [[nodiscard]] std::int64_t context_at(int step) const;

  // The plan of step `step`; `rng` drives the MoE routing (one stream per step is advised).
  // Offload mode needs `access`: per layer, what the cache simulation found for this step.
  [[nodiscard]] StepPlan build(int step, Rng& rng, const std::vector<LayerAccess>* access = nullptr) const;

 private:
  struct Tokens {
    std::int64_t requests;             // requests of the replica this GPU serves (this micro-batch)
    std::int64_t queries_per_request;  // query tokens per request in this pass
    std::int64_t offloaded = 0;        // offload: requests of this GPU (this micro-batch) in host memory
    // Requests the kernels compute: the CUDA graph's captured batch the engine pads `requests` to
    // (engine.cuda_graph_sizes); attention reads only the real requests' caches.
    std::int64_t padded = 0;
    PrefillWork chunk{};  // a prompt chunk's tokens in this pass (workload.prefill_chunk), or none
    // Decode query tokens the kernels compute.
    [[nodiscard]] std::int64_t total() const { return std::max(requests, padded) * queries_per_request; }
    // Tokens of the projections, MLP and MoE: the decode tokens and the chunk's.
    [[nodiscard]] std::int64_t linear() const { return total() + chunk.queries; }
  };

  // An eager pass (engine.eager_launch_time): every kernel of the compute segments of `gpus` from
  // `from` on (per GPU) takes at least the launch.
  void apply_eager_launches(std::vector<GpuStepPlan>& gpus, const std::vector<std::size_t>& from) const;

  // MLA decode attention of `t` on this GPU, as the engine's kernel computes it.
  [[nodiscard]] MlaShape mla_shape(Tokens t) const;

  // One micro-batch's whole step (embedding, layers, head, MTP drafts) into `gpus`; `requests`:
  // of each replica in this micro-batch.
  void add_pass(std::vector<GpuStepPlan>& gpus, std::int64_t requests, std::int64_t offloaded, std::int64_t context,
                const PrefillWork& chunk, Rng& rng, const std::vector<LayerAccess>* access,
                std::vector<LayerOffload>* records) const;

  // `access`: offload, what the cache simulation found in every layer (empty otherwise).
  void add_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context, int replica,
                     std::span<const LayerAccess> access, LayerOffload* record) const;
  // Offload: indexer, miss fetch and sparse attention of one MLA layer in the configured overlap,
  // with the prefetches this layer waits for and issues.
  void add_offload_attention(std::vector<Segment>& out, int layer, Tokens t, std::int64_t context,
                             std::span<const LayerAccess> access, LayerOffload& record) const;
  // Offload: this GPU's on-demand fetch of one layer (the offloaded requests' misses that no
  // prefetch brought early, of the `selected` entries per query token).
  struct DemandFetch {
    Transfer transfer;
    double misses = 0.0;  // entries fetched, over the GPU's offloaded requests
  };
  [[nodiscard]] DemandFetch demand_fetch(const LayerAccess& access, Tokens t, std::int64_t selected) const;
  // Offload: the layer's parts priced with the cost models alone (no contention), for the overlap
  // policy (decode_step.cpp).
  struct OffloadParts;
  [[nodiscard]] OffloadParts price_offload_parts(Tokens t, std::int64_t context, const Transfer& fetch,
                                                 std::int64_t miss_k) const;
  // Offload: the layer's timeline as overlap policy `used` lays out its pieces, with the prefetch
  // this layer waits for and the one it issues after the first piece (the indexer).
  void add_offload_pieces(std::vector<Segment>& out, int layer, Tokens t, std::span<const LayerAccess> all,
                          const OffloadParts& parts, const Transfer& fetch, const Transfer& prefetched,
                          std::size_t used) const;
  // Offload with prefetch: the transfer prefetching `target`'s entries (no bytes: nothing to do).
  [[nodiscard]] Transfer prefetch_transfer(const LayerAccess& target, Tokens t) const;
  void add_prefetch(std::vector<Segment>& out, int target, Tokens t, std::span<const LayerAccess> access) const;

  const Scenario& s_;
  const ModelConfig& m_;
  const Hardware& hw_;
  const Workload& workload_;
  bool offload_;
  StepBlocks blocks_;
  PrefillAttention chunk_core_;
  std::vector<PrefillPiece> chunk_;  // workload.prefill_chunk per attention replica, or empty
  std::int64_t batch_;
  std::int64_t replica_;  // requests of each replica (batch_ x tensor_parallel, or the run's replica_requests)
  int gpus_;
  int tp_;
  int layers_total_;
  std::int64_t offloaded_;
  double cold_fraction_;
  int prefetch_lookahead_ = 0;      // offload with a prefetching policy: layers ahead, else 0
  std::size_t overlap_ = 0;         // offload: registry index of the scenario's overlap policy
  std::size_t overlap_serial_ = 0;  // registry index of the serial one (a layer with nothing to fetch)
};

}  // namespace ess
