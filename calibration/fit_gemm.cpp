// The GEMM models: the dense roofline, the measured GEMM table itself, and grouped (MoE) GEMMs.
#include "calibration/fitted_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "models/gemm.h"
#include "models/gemm_fit.h"
#include "sim/base/error.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

std::optional<ModelSpec> make_gemm(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.gemm.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "dense GEMMs Y[m x n] = X[m x k] W[k x n], roofline (used for shapes not measured)";
  s.measured = seconds_of(m.gemm);
  s.fields = roofline_fields("gemm", &KernelParams::gemm);
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    h.kernels.gemm_measured = nullptr;  // the roofline alone
    h.kernels.gemm = fit_gemm(m.gemm, use, h);
  };
  s.predict = [&m](const Hardware& h, std::size_t i) { return gemm(m.gemm[i].shape, h).time.value(); };
  std::map<GemmTable::Key, std::size_t> shape_ids;
  for (const auto& p : m.gemm) {
    const auto id = shape_ids.emplace(GemmTable::Key{p.shape.n, p.shape.k, p.shape.dtype}, shape_ids.size()).first->second;
    s.groups.push_back(id);
  }
  return s;
}

std::optional<ModelSpec> make_gemm_measured(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.gemm.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "the measured GEMM times themselves, interpolated in m for the weight shapes they cover";
  s.measured = seconds_of(m.gemm);
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    auto table = std::make_shared<GemmTable>();
    for (const std::size_t i : use) {
      const GemmPoint& p = m.gemm[i];
      table->add(p.shape.m, p.shape.n, p.shape.k, p.shape.dtype, p.seconds);
    }
    h.kernels.gemm_measured = std::move(table);
  };
  s.predict = [&m](const Hardware& h, std::size_t i) { return gemm(m.gemm[i].shape, h).time.value(); };
  s.write = [](const Hardware& h, nlohmann::json& doc, const std::string& source) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& [key, points] : h.kernels.gemm_measured->shapes) {
      const auto& [n, k, dtype] = key;
      nlohmann::json ms = nlohmann::json::array();
      nlohmann::json ts = nlohmann::json::array();
      for (const auto& [mm, sec] : points) {
        ms.push_back(mm);
        ts.push_back(sec);
      }
      shapes.push_back({{"n", n}, {"k", k}, {"dtype", std::string(to_string(dtype))}, {"m", ms}, {"seconds", ts}});
    }
    doc["kernels"]["gemm_measured"] = {{"value", {{"shapes", shapes}}}, {"source", source}};
  };
  return s;
}

std::optional<ModelSpec> make_grouped_gemm(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.grouped_gemm.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "grouped (MoE expert) GEMMs, every group the same rows, padded to the kernel's row tile";
  s.measured = seconds_of(m.grouped_gemm);
  s.fields = roofline_fields("grouped_gemm", &KernelParams::grouped_gemm);
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.kernels.grouped_gemm = fit_grouped_gemm(m.grouped_gemm, use, h); };
  s.predict = [&m](const Hardware& h, std::size_t i) { return grouped_gemm(m.grouped_gemm[i].shape, h).time.value(); };
  return s;
}

}  // namespace ess::calibration
