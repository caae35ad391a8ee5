#include "sim/serving/cache_transfer.h"

#include <algorithm>
#include <string>

#include "sim/base/error.h"
#include "sim/serving/link_sharing.h"

namespace ess {

CacheLinks::CacheLinks(const Scenario& s, int prefill_gpus)
    : latency_(s.hardware.network.latency.value()), prefill_gpus_(prefill_gpus) {
  if (prefill_gpus < 1) throw InternalError("CacheLinks: no prefill GPU");
  const Hardware& hw = s.hardware;
  const double decode_gpus = static_cast<double>(hw.total_gpus());
  const double nic = hw.network.bandwidth_per_gpu.value();
  capacities_.assign(first_prefill_nic + static_cast<std::size_t>(prefill_gpus), nic);
  capacities_[decode_nics] = nic * decode_gpus;
  capacities_[decode_pcie] = hw.pcie.h2d_bandwidth.value() * decode_gpus;
  capacities_[decode_switches] = hw.pcie.switch_uplink_bandwidth.value() * decode_gpus / static_cast<double>(hw.pcie.gpus_per_switch);
  capacities_[decode_dram] = hw.cpu.dram_bandwidth_per_socket.value() * static_cast<double>(hw.cpu.sockets) * static_cast<double>(hw.nodes);
}

CacheTransfer CacheLinks::transfer(const ServingMemory& memory, std::int64_t prompt_tokens) const {
  CacheTransfer t;
  if (memory.offload()) {
    const Footprint f = memory.offloaded(prompt_tokens);
    t.gpu_bytes = f.hbm;
    t.host_bytes = f.host;
  } else {
    t.gpu_bytes = memory.gpu_only(prompt_tokens).hbm;
  }
  t.seconds = latency_ + finish({PendingTransfer{0.0, 0, t}}).front();
  return t;
}

std::vector<double> CacheLinks::arrivals(const std::vector<PendingTransfer>& transfers) const {
  std::vector<double> done = finish(transfers);
  for (double& d : done) d += latency_;
  return done;
}

std::vector<double> CacheLinks::finish(const std::vector<PendingTransfer>& transfers) const {
  std::vector<LinkFlow> flows;
  std::vector<std::size_t> owner;
  flows.reserve(2 * transfers.size());
  owner.reserve(2 * transfers.size());
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const PendingTransfer& p = transfers[i];
    if (p.prefill_gpu < 0 || p.prefill_gpu >= prefill_gpus_) {
      throw InternalError("CacheLinks: prefill GPU " + std::to_string(p.prefill_gpu) + " of " + std::to_string(prefill_gpus_));
    }
    const std::size_t nic = first_prefill_nic + static_cast<std::size_t>(p.prefill_gpu);
    if (p.cache.gpu_bytes > 0.0) {
      flows.push_back(LinkFlow{p.start, p.cache.gpu_bytes, {nic, decode_nics, decode_pcie}});
      owner.push_back(i);
    }
    if (p.cache.host_bytes > 0.0) {
      flows.push_back(LinkFlow{p.start, p.cache.host_bytes, {nic, decode_nics, decode_switches, decode_dram}});
      owner.push_back(i);
    }
  }
  const std::vector<double> moved = share_links(capacities_, flows);
  std::vector<double> done(transfers.size());
  for (std::size_t i = 0; i < transfers.size(); ++i) done[i] = transfers[i].start;
  for (std::size_t f = 0; f < flows.size(); ++f) done[owner[f]] = std::max(done[owner[f]], moved[f]);
  return done;
}

}  // namespace ess
