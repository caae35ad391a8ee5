// RooflineKernel: the time of one GPU kernel as the larger of its compute roof and its memory roof,
// with calibratable efficiencies, size-dependent ramps and a fixed per-kernel overhead.
//
//   compute = flops > 0 ? (flops + compute_ramp) / (peak * compute_efficiency) : 0
//   memory  = bytes > 0 ? (bytes + memory_ramp) / (bandwidth * memory_efficiency) : 0
//   time    = max(compute, memory) + kernel_overhead                 (transition 0, the presets)
//           = (compute^p + memory^p)^(1/p) + kernel_overhead      (p = transition in [1, 64])
//
// A kernel doing exactly `compute_ramp` FLOP runs at half of `compute_efficiency` x peak (and the
// same for bytes), so small kernels are slower per FLOP than large ones. Every kernel model in
// models/ (GEMM, norm, elementwise, attention, indexer, top-k) reduces to this function.
#pragma once

#include <string_view>

#include "models/cost.h"
#include "models/hardware.h"
#include "models/units.h"

namespace ess {

// The two roofs combined: max(compute, memory) for transition 0, else the p-norm (a zero roof
// contributes nothing either way).
[[nodiscard]] double combine_roofs(double compute, double memory, double transition);

// Throws InputError unless both efficiencies are in (0, 1], both ramps and the
// overhead are >= 0, and the transition is 0 or in [1, 64]. `where` names the parameter set in
// the message, e.g. "hardware.kernels.gemm".
void validate_roofline_params(const RooflineParams& p, std::string_view where);

// Cost of a kernel doing `flops` FLOP at `peak` and moving `bytes` of HBM traffic at `bandwidth`.
// flops >= 0 and bytes >= 0; peak must be > 0 when flops > 0 and bandwidth > 0 when bytes > 0.
// The bound is `compute` if the compute roof is the larger one, else `memory` if the kernel moves
// any bytes, else `overhead` (an empty kernel costs only its overhead).
// Throws InternalError on negative work (the callers compute it from checked shapes), InputError
// on a non-positive rate that is needed or bad params.
[[nodiscard]] KernelCost roofline(Flops flops, FlopsPerSecond peak, Bytes bytes,
                                  BytesPerSecond bandwidth, const RooflineParams& p);

// A kernel with no FLOP counted (norms, elementwise, top-k): roofline(0, -, bytes, bandwidth, p).
[[nodiscard]] KernelCost memory_bound_kernel(Bytes bytes, BytesPerSecond bandwidth,
                                             const RooflineParams& p);

}  // namespace ess
