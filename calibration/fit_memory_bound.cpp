// The memory-bound kernels' roofline (norms, elementwise and top-k), fitted on RMSNorm and LayerNorm.
#include "calibration/fitted_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include "models/norm.h"
#include "models/norm_fit.h"
#include "sim/base/error.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

std::optional<ModelSpec> make_memory_bound(const MeasurementSet& m, const Hardware& /*base*/) {
  if (m.norm.empty()) return std::nullopt;
  ModelSpec s;
  s.description = "RMSNorm and LayerNorm kernels (norms, elementwise and top-k share these parameters)";
  s.measured = seconds_of(m.norm);
  const auto mb = &KernelParams::memory_bound;
  s.fields = {roofline_field("memory_bound", mb, "memory_efficiency", &RooflineParams::memory_efficiency),
              roofline_field("memory_bound", mb, "memory_ramp", &RooflineParams::memory_ramp),
              roofline_field("memory_bound", mb, "kernel_overhead", &RooflineParams::kernel_overhead)};
  s.fit = [&m](Hardware& h, std::span<const std::size_t> use) { h.kernels.memory_bound = fit_memory_bound(m.norm, use, h); };
  s.predict = [&m](const Hardware& h, std::size_t i) { return norm(m.norm[i].shape, h).time.value(); };
  return s;
}

}  // namespace ess::calibration
