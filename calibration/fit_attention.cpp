// The attention models: published dense MLA peak rates, dense MLA kernel times, sparse MLA and causal prefill.
#include "calibration/fitted_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include "models/attention.h"
#include "models/attention_fit.h"
#include "sim/base/error.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

std::optional<ModelSpec> make_attention_rates(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.attention_rates.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "dense MLA decode peak rates (FLOP/s compute-bound, B/s memory-bound) as published, against the "
                  "datasheet BF16 peak and HBM bandwidth; one figure per parameter, nothing to cross-validate";
  bool kind[2] = {false, false};
  for (const auto& p : m.attention_rates) {
    kind[p.compute ? 1 : 0] = true;
    s.measured.push_back(1.0 / p.rate);
  }
  const auto at = &KernelParams::attention;
  if (kind[1]) s.fields.push_back(roofline_field("attention", at, "compute_efficiency", &RooflineParams::compute_efficiency));
  if (kind[0]) s.fields.push_back(roofline_field("attention", at, "memory_efficiency", &RooflineParams::memory_efficiency));
  s.cross_validate = false;
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.kernels.attention = attention_from_rates(m.attention_rates, use, h); };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const auto& p = m.attention_rates[i];
    const double roof = p.compute ? h.gpu.peak_compute.at(DType::bf16, h.gpu.kind).value() * h.kernels.attention.compute_efficiency
                                  : h.gpu.hbm_bandwidth.value() * h.kernels.attention.memory_efficiency;
    return 1.0 / roof;
  };
  return s;
}

std::optional<ModelSpec> make_dense_attention(const MeasurementSet& m, const Hardware& base) {
  if (m.dense_attention.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "dense MLA decode kernel times (FlashMLA's test: BF16 cache, 64-row tiles), each bound by one roof";
  s.measured = seconds_of(m.dense_attention);
  const auto at = &KernelParams::attention;
  bool bound[2] = {false, false};  // memory, compute: which roofs the fit on every point binds
  {
    Hardware probe = base;
    probe.kernels.attention = fit_dense_attention(m.dense_attention, {}, base);
    for (const auto& p : m.dense_attention) {
      const KernelCost c = dense_mla_attention(p.shape, p.context, probe);
      bound[c.compute >= c.memory ? 1 : 0] = true;
    }
  }
  if (bound[1]) s.fields.push_back(roofline_field("attention", at, "compute_efficiency", &RooflineParams::compute_efficiency));
  if (bound[0]) s.fields.push_back(roofline_field("attention", at, "memory_efficiency", &RooflineParams::memory_efficiency));
  if (m.dense_attention.size() >= 2) {
    s.fields.push_back(roofline_field("attention", at, "kernel_overhead", &RooflineParams::kernel_overhead));
  }
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    h.kernels.attention = fit_dense_attention(m.dense_attention, use, h);
  };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const auto& p = m.dense_attention[i];
    return dense_mla_attention(p.shape, p.context, h).time.value();
  };
  return s;
}

std::optional<ModelSpec> make_sparse_attention(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.sparse_attention.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "sparse MLA decode (FP8 latent cache, top-k entries per query token), compute-bound";
  s.measured = seconds_of(m.sparse_attention);
  const auto sa = &KernelParams::sparse_attention;
  s.fields.push_back(roofline_field("sparse_attention", sa, "compute_efficiency", &RooflineParams::compute_efficiency));
  if (m.sparse_attention.size() >= 2) {
    s.fields.push_back(roofline_field("sparse_attention", sa, "kernel_overhead", &RooflineParams::kernel_overhead));
  }
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    h.kernels.sparse_attention = fit_sparse_attention(m.sparse_attention, use, h);
  };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    const auto& p = m.sparse_attention[i];
    return sparse_mla_attention(p.shape, p.selected, h).time.value();
  };
  return s;
}

std::optional<ModelSpec> make_prefill_attention(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.prefill_attention.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "causal and full prefill attention (FlashAttention-3 forward, BF16), compute-bound: the executed "
                  "FLOP are the key pairs plus row_keys keys per query row";
  s.measured = seconds_of(m.prefill_attention);
  const auto pa = &KernelParams::prefill_attention;
  s.fields.push_back(roofline_field("prefill_attention", pa, "compute_efficiency", &RooflineParams::compute_efficiency));
  if (m.prefill_attention.size() >= 2) {
    s.fields.push_back(field({"kernels", "prefill_attention", "row_keys"},
                             [](auto& h) -> auto& { return h.kernels.prefill_attention_row_keys; }));
  }
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) {
    double row_keys = h.kernels.prefill_attention_row_keys;
    h.kernels.prefill_attention = fit_prefill_attention(m.prefill_attention, use, h, row_keys);
    h.kernels.prefill_attention_row_keys = row_keys;
  };
  s.predict = [&m](const Hardware& h, std::size_t i) {
    return prefill_attention(m.prefill_attention[i].shape, h).time.value();
  };
  return s;
}

}  // namespace ess::calibration
