#include "models/roofline.h"

#include "models/check.h"
#include "sim/base/error.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ess {

namespace {

// Formats a double with up to 6 significant digits (std::to_string would print 0.000002 for 2 us).
// The negated comparisons below also reject NaN.
void require_efficiency(double e, std::string_view where, std::string_view field) {
  if (!(e > 0.0 && e <= 1.0)) {
    throw InputError(std::string(where) + "." + std::string(field) +
                     " must be in (0, 1] (got " + check::number(e) + ")");
  }
}

}  // namespace

void validate_roofline_params(const RooflineParams& p, std::string_view where) {
  require_efficiency(p.compute_efficiency, where, "compute_efficiency");
  require_efficiency(p.memory_efficiency, where, "memory_efficiency");
  check::non_negative("", std::string(where) + ".compute_ramp", p.compute_ramp.value(), "FLOP");
  check::non_negative("", std::string(where) + ".memory_ramp", p.memory_ramp.value(), "B");
  check::non_negative("", std::string(where) + ".kernel_overhead", p.kernel_overhead.value(), "s");
  if (!(p.transition == 0.0 || (p.transition >= 1.0 && p.transition <= 64.0))) {
    throw InputError(std::string(where) + ".transition must be 0 (the max of the two roofs) or in [1, 64] (got " +
                     check::number(p.transition) + ")");
  }
}

double combine_roofs(double compute, double memory, double transition) {
  if (transition == 0.0 || compute <= 0.0 || memory <= 0.0) return std::max(compute, memory);
  // (c^p + m^p)^(1/p) = hi (1 + (lo/hi)^p)^(1/p): no overflow for large p.
  const double hi = std::max(compute, memory);
  const double lo = std::min(compute, memory);
  return hi * std::pow(1.0 + std::pow(lo / hi, transition), 1.0 / transition);
}

KernelCost roofline(Flops flops, FlopsPerSecond peak, Bytes bytes, BytesPerSecond bandwidth,
                    const RooflineParams& p) {
  validate_roofline_params(p, "RooflineParams");
  if (!(flops.value() >= 0.0)) {
    throw InternalError("roofline: flops must be >= 0 (got " + check::number(flops.value()) + ")");
  }
  if (!(bytes.value() >= 0.0)) {
    throw InternalError("roofline: bytes must be >= 0 (got " + check::number(bytes.value()) + ")");
  }

  KernelCost cost;
  cost.flops = flops;
  cost.bytes = bytes;
  cost.overhead = p.kernel_overhead;
  if (flops.value() > 0.0) {
    if (!(peak.value() > 0.0)) {
      throw InputError("roofline: peak compute must be > 0 FLOP/s for a kernel with " +
                       check::number(flops.value()) + " FLOP (got " + check::number(peak.value()) + ")");
    }
    cost.compute = (flops + p.compute_ramp) / (peak * p.compute_efficiency);
  }
  if (bytes.value() > 0.0) {
    if (!(bandwidth.value() > 0.0)) {
      throw InputError("roofline: bandwidth must be > 0 B/s for a kernel moving " +
                       check::number(bytes.value()) + " B (got " + check::number(bandwidth.value()) + ")");
    }
    cost.memory = (bytes + p.memory_ramp) / (bandwidth * p.memory_efficiency);
  }
  cost.time = Seconds(combine_roofs(cost.compute.value(), cost.memory.value(), p.transition)) + cost.overhead;
  if (cost.compute > cost.memory) {
    cost.bound = Bound::compute;
  } else if (cost.memory > Seconds(0.0)) {
    cost.bound = Bound::memory;
  } else {
    cost.bound = Bound::overhead;
  }
  return cost;
}

KernelCost memory_bound_kernel(Bytes bytes, BytesPerSecond bandwidth, const RooflineParams& p) {
  return roofline(Flops(0.0), FlopsPerSecond(0.0), bytes, bandwidth, p);
}

}  // namespace ess
