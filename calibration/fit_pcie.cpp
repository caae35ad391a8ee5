// The PCIe models: pinned copies (bandwidth, latency, per-call overhead per direction), the UVA gather's
// efficiency and the SM share a running gather takes from a GEMM.
#include "calibration/fitted_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include "models/copy.h"
#include "models/transfer_fit.h"
#include "sim/base/error.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

std::optional<ModelSpec> make_pcie_copy(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.copy.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "cudaMemcpyAsync H2D/D2H, pinned: single copies by size and scattered rows one call per row or run";
  s.measured = seconds_of(m.copy);
  bool dir[2] = {false, false};
  for (const auto& p : m.copy) dir[static_cast<int>(p.direction)] = true;
  if (copy_fit_sets_latency(m.copy, {})) {
    s.fields.push_back(field({"pcie", "latency"}, [](auto& h) -> auto& { return h.pcie.latency; }));
  }
  if (dir[0]) {
    s.fields.push_back(field({"pcie", "h2d_bandwidth"}, [](auto& h) -> auto& { return h.pcie.h2d_bandwidth; }));
    s.fields.push_back(field({"pcie", "h2d_call_overhead"}, [](auto& h) -> auto& { return h.pcie.h2d_call_overhead; }));
  }
  if (dir[1]) {
    s.fields.push_back(field({"pcie", "d2h_bandwidth"}, [](auto& h) -> auto& { return h.pcie.d2h_bandwidth; }));
    s.fields.push_back(field({"pcie", "d2h_call_overhead"}, [](auto& h) -> auto& { return h.pcie.d2h_call_overhead; }));
  }
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.pcie = fit_pcie_copies(m.copy, use, h.pcie); };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const CopyPoint& p = m.copy[i];
    return copy_time(p.direction, Bytes(p.bytes), p.calls, h.pcie).value();
  };
  return s;
}

std::optional<ModelSpec> make_pcie_gather(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.gather.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "UVA gather kernel reading/writing scattered 656-byte rows of pinned host memory";
  s.measured = seconds_of(m.gather);
  bool dir[2] = {false, false};
  for (const auto& p : m.gather) dir[static_cast<int>(p.direction)] = true;
  if (dir[0]) s.fields.push_back(field({"pcie", "gather_h2d_efficiency"}, [](auto& h) -> auto& { return h.pcie.gather_h2d_efficiency; }));
  if (dir[1]) s.fields.push_back(field({"pcie", "gather_d2h_efficiency"}, [](auto& h) -> auto& { return h.pcie.gather_d2h_efficiency; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.pcie = fit_gather_efficiency(m.gather, use, h.pcie); };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const GatherPoint& p = m.gather[i];
    return gather_time(p.direction, Bytes(p.bytes), h.pcie).value();
  };
  return s;
}

std::optional<ModelSpec> make_gather_sm_share(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.interference.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "a GEMM alone and beside a running UVA gather";
  for (const auto& p : m.interference) s.measured.push_back(p.with_gather_seconds);
  s.fields.push_back(field({"pcie", "gather_sm_fraction"}, [](auto& h) -> auto& { return h.pcie.gather_sm_fraction; }));
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.pcie.gather_sm_fraction = fit_gather_sm_fraction(m.interference, use); };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    return m.interference[i].alone_seconds / (1.0 - h.pcie.gather_sm_fraction);
  };
  return s;
}

}  // namespace ess::calibration
