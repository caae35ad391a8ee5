// What a kernel cost model returns: the time and why.
#pragma once

#include <cstddef>
#include <string_view>

#include "models/units.h"

namespace ess {

enum class Bound { compute, memory, overhead };

[[nodiscard]] constexpr std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::overhead: return "overhead";
  }
  return "?";
}

// The calibrated parameter set a cost was priced with (models/hardware.h): what the calibration's
// error band of that set applies to (sim/config/profile.h, calibration_bands). `none`: priced by no
// calibratable model (a user-given time).
enum class ParamSet {
  none,
  gemm,            // hardware.kernels.gemm
  gemm_measured,   // hardware.kernels.gemm_measured (a measured shape)
  grouped_gemm,    // hardware.kernels.grouped_gemm
  attention,       // hardware.kernels.attention
  sparse_attention,
  prefill_attention,  // hardware.kernels.prefill_attention
  indexer,
  memory_bound,
  alltoall,        // hardware.collectives.alltoall_*
  allreduce,       // hardware.collectives.allreduce_*
  pcie_copy,       // hardware.pcie.{h2d,d2h}_*
  pcie_gather,     // hardware.pcie.gather_*
  nvlink,          // hardware.nvlink.*
};
inline constexpr std::size_t kParamSetCount = 14;

// "kernels.gemm", "collectives.alltoall", ... ("none" for none).
[[nodiscard]] std::string_view to_string(ParamSet p);
// The parameter set a hardware field belongs to ("hardware.kernels.gemm.compute_efficiency" or
// "kernels.gemm.compute_efficiency" -> gemm); none for fields no cost model is calibrated by.
[[nodiscard]] ParamSet param_set_of_field(std::string_view field);

struct KernelCost {
  Seconds time;      // total: max(compute, memory) + overhead, or measured (see `measured`)
  Seconds compute;   // compute-roof time (0 for bytes-only kernels)
  Seconds memory;    // memory-roof time
  Seconds overhead;  // fixed per-kernel time
  Flops flops;       // work counted by the model
  Bytes bytes;       // HBM traffic counted by the model
  Bound bound = Bound::memory;
  // True when `time` comes from measurements of this very shape (a profile's measured GEMM table,
  // models/gemm_table.h) rather than from the roofline terms above.
  bool measured = false;
  ParamSet params = ParamSet::none;  // set by each public cost function
};

// `c` tagged with the parameter set that priced it.
[[nodiscard]] inline KernelCost with_params(KernelCost c, ParamSet p) {
  c.params = p;
  return c;
}

}  // namespace ess
