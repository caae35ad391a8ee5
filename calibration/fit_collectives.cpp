// The collective and link models: NCCL all-reduce, NVLink peer copies, NCCL all-to-all, DeepEP's
// expert all-to-all, and the DeepEP normal kernels' bandwidth (reported, not fitted).
#include "calibration/fitted_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include "models/collective.h"
#include "models/collective_fit.h"
#include "models/fit.h"
#include "sim/base/error.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

std::optional<ModelSpec> make_allreduce(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.allreduce.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "NCCL all-reduce within one node";
  s.measured = seconds_of(m.allreduce);
  s.fields.push_back(field({"collectives", "allreduce_bus_bandwidth"}, [](auto& h) -> auto& { return h.collectives.allreduce_bus_bandwidth; }));
  s.fields.push_back(field({"collectives", "allreduce_latency"}, [](auto& h) -> auto& { return h.collectives.allreduce_latency; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    const AlphaBeta ab = fit_allreduce(m.allreduce, use);
    h.collectives.allreduce_latency = ab.latency;
    h.collectives.allreduce_bus_bandwidth = ab.bandwidth;
  };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    return allreduce_time(m.allreduce[i].gpus, Bytes(m.allreduce[i].bytes), h).value();
  };
  return s;
}

std::optional<ModelSpec> make_nvlink_p2p(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.p2p.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "GPU-to-GPU copies within one node (NCCL send/recv or cudaMemcpyPeer)";
  s.measured = seconds_of(m.p2p);
  s.fields.push_back(field({"nvlink", "bandwidth"}, [](auto& h) -> auto& { return h.nvlink.bandwidth; }));
  s.fields.push_back(field({"nvlink", "latency"}, [](auto& h) -> auto& { return h.nvlink.latency; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    const AlphaBeta ab = fit_p2p(m.p2p, use);
    h.nvlink.latency = ab.latency;
    h.nvlink.bandwidth = ab.bandwidth;
  };
  s.predict = [&m](const Hardware& h, std::size_t i) { return p2p_time(Bytes(m.p2p[i].bytes), h.nvlink).value(); };
  return s;
}

std::optional<ModelSpec> make_alltoall(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.alltoall.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "NCCL all-to-all within one node";
  s.measured = seconds_of(m.alltoall);
  s.fields.push_back(field({"collectives", "alltoall_nvlink_efficiency"}, [](auto& h) -> auto& { return h.collectives.alltoall_nvlink_efficiency; }));
  s.fields.push_back(field({"collectives", "alltoall_latency"}, [](auto& h) -> auto& { return h.collectives.alltoall_latency; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    const AlphaBeta ab = fit_alltoall(m.alltoall, use);
    // The engine carries the all-to-all at a fraction of nvlink.bandwidth (fitted above when
    // peer copies were measured).
    const double efficiency = ab.bandwidth.value() / h.nvlink.bandwidth.value();
    if (!(efficiency > 0.0 && efficiency <= 1.0)) {
      throw FitError("all-to-all: the fitted bandwidth " + format_quantity(ab.bandwidth.value(), Dimension::bytes_per_second) +
                     " is not within (0, 1] of nvlink.bandwidth " +
                     format_quantity(h.nvlink.bandwidth.value(), Dimension::bytes_per_second));
    }
    h.collectives.alltoall_latency = ab.latency;
    h.collectives.alltoall_nvlink_efficiency = efficiency;
  };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    return alltoall_time(m.alltoall[i].gpus, Bytes(m.alltoall[i].bytes), h).value();
  };
  return s;
}

std::optional<ModelSpec> make_expert_alltoall(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.expert_alltoall.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "DeepEP low-latency dispatch and combine vs EP size, carried as the engine does (NVLink port within a "
                  "node, NIC across nodes, concurrently)";
  s.measured = seconds_of(m.expert_alltoall);
  bool intra = false;
  bool inter = false;
  for (const auto& p : m.expert_alltoall) {
    intra = intra || std::min(p.expert_parallel, p.gpus_per_node) > 1;
    inter = inter || p.expert_parallel > p.gpus_per_node;
  }
  if (intra) s.fields.push_back(field({"collectives", "alltoall_nvlink_efficiency"}, [](auto& h) -> auto& { return h.collectives.alltoall_nvlink_efficiency; }));
  if (inter) s.fields.push_back(field({"collectives", "alltoall_network_efficiency"}, [](auto& h) -> auto& { return h.collectives.alltoall_network_efficiency; }));
  s.fields.push_back(field({"collectives", "alltoall_latency"}, [](auto& h) -> auto& { return h.collectives.alltoall_latency; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    const AlltoallFit f = fit_expert_alltoall(m.expert_alltoall, use, h);
    h.collectives.alltoall_nvlink_efficiency = f.nvlink_efficiency;
    h.collectives.alltoall_network_efficiency = f.network_efficiency;
    h.collectives.alltoall_latency = f.latency;
  };
  s.predict = [&m](const Hardware& h, std::size_t i) { return expert_alltoall_time(m.expert_alltoall[i], h).value(); };
  return s;
}

std::optional<ModelSpec> make_alltoall_normal(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.alltoall_normal.empty()) return std::nullopt;
  // Reported beside the low-latency fit: the normal (high-throughput) kernels' bottleneck
  // bandwidth against the port bandwidths the profile gives the engine. Nothing is fitted.
  ModelSpec s;
  s.description = "DeepEP normal kernels' bottleneck bandwidth (seconds per byte) against the fitted port bandwidths; "
                  "reported, not fitted";
  for (const auto& p : m.alltoall_normal) s.measured.push_back(1.0 / p.rate);
  s.cross_validate = false;
  s.fit = [](Hardware&, std::span<const std::size_t>) {};
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const auto& p = m.alltoall_normal[i];
    return 1.0 / (p.intranode ? alltoall_intranode_bandwidth(h) : alltoall_internode_bandwidth(h)).value();
  };
  return s;
}

}  // namespace ess::calibration
