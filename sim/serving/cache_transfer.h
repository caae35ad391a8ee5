// A disaggregated request's cache on its way from its prefill GPU to the decode node, and the links
// all such transfers share (priced as a fluid: link_sharing.h).
//
// What moves (cache_transfer): GPU-only, the prompt's latent (or KV) and indexer caches onto the
// decode GPU; under ESS, the whole latent cache into the decode node's pinned host memory and the
// GPU's share (the pool, loaded from the prefill's last selections, and the indexer cache) onto
// the GPU. Two flows then, one per destination, that start when the prefill's last step ends.
//
// The links (CacheLinks), one row each:
//   the prefill GPU's NIC (egress)        network.bandwidth_per_gpu, one per prefill GPU
//   the decode node's NICs (ingress)      network.bandwidth_per_gpu x decode GPUs
//   onto the decode GPUs (GPUDirect)      pcie.h2d_bandwidth x decode GPUs            GPU-bound bytes
//   PCIe switches to the CPU              pcie.switch_uplink_bandwidth x switches      host-bound bytes
//   the decode sockets' DRAM              cpu.dram_bandwidth_per_socket x sockets      host-bound bytes
// A transfer arrives network.latency after its last byte has moved.
//
// The decode side's links are pooled over its GPUs, NICs, switches and sockets: the decode GPU is
// chosen when the request is admitted, after its cache has arrived, so transfers are taken as
// spread evenly over the decode node (the least contention they could meet there). Not modelled:
// what else uses those links (the decode steps' ESS fetches on PCIe and DRAM, a multi-node decode's
// all-to-all on the NICs, the next prefill steps' all-to-all on the prefill NICs).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/serving/serving_memory.h"

namespace ess {

struct CacheTransfer {
  double gpu_bytes = 0.0;   // onto the decode GPU
  double host_bytes = 0.0;  // into the decode node's pinned host memory (ESS; else 0)
  double seconds = 0.0;     // alone on the links: latency + the time its flows take with nothing else in flight
  [[nodiscard]] double bytes() const { return gpu_bytes + host_bytes; }
};

// One cache to move: when it may start, from which prefill GPU (over all instances), what it is.
struct PendingTransfer {
  double start = 0.0;
  int prefill_gpu = 0;
  CacheTransfer cache;
};

class CacheLinks {
 public:
  // `s`: the serving scenario (its hardware is the decode side's and each prefill GPU's).
  CacheLinks(const Scenario& s, int prefill_gpus);

  // What a request of `prompt_tokens` moves, and how long it takes alone.
  [[nodiscard]] CacheTransfer transfer(const ServingMemory& memory, std::int64_t prompt_tokens) const;

  // When each transfer has arrived (in input order), every flow sharing the links with those in
  // flight beside it.
  [[nodiscard]] std::vector<double> arrivals(const std::vector<PendingTransfer>& transfers) const;

 private:
  enum Link : std::size_t { decode_nics, decode_pcie, decode_switches, decode_dram, first_prefill_nic };
  [[nodiscard]] std::vector<double> finish(const std::vector<PendingTransfer>& transfers) const;

  std::vector<double> capacities_;
  double latency_ = 0.0;
  int prefill_gpus_ = 0;
};

}  // namespace ess
