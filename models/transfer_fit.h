// Calibrating the PCIe transfer models (models/copy.h) from measured copies and gathers.
//
//   copy engine:  time = calls x call_overhead[dir] + latency + bytes / bandwidth[dir]
//   UVA gather:   time = latency + bytes / (bandwidth[dir] x gather_efficiency[dir])
//   SM share:     a kernel beside a running gather takes alone / (1 - gather_sm_fraction)
//
// The copy model is linear in (latency, call_overhead[dir], 1 / bandwidth[dir]): single large
// copies (calls = 1) pin the bandwidth, and scattered rows copied one call per row or per run pin
// the call overhead. Relative non-negative least squares over every copy point at once (the
// latency is shared by both directions). Directions without points keep `base`'s values.
#pragma once

#include <cstdint>
#include <span>

#include "models/copy.h"
#include "models/hardware.h"

namespace ess {

struct CopyPoint {
  CopyDirection direction = CopyDirection::h2d;
  double bytes = 0.0;        // total bytes moved
  std::int64_t calls = 1;    // cudaMemcpyAsync calls issued back to back (>= 1)
  double seconds = 0.0;      // measured, > 0
};

// Fits pcie.{latency, h2d/d2h_bandwidth, h2d/d2h_call_overhead}; returns `base` with them replaced.
// The latency is fitted only when some direction has copies of two different call counts: with
// one call count per direction (a block-size sweep of 1000 copies each, say) the latency cannot be
// told from the call overhead, so it stays base's and the call overhead absorbs nothing of it
// (copy_fit_sets_latency says which).
// Throws FitError if the points cannot separate the terms (e.g. every copy the same size).
[[nodiscard]] PcieSpec fit_pcie_copies(std::span<const CopyPoint> points, std::span<const std::size_t> use,
                                       const PcieSpec& base);
[[nodiscard]] bool copy_fit_sets_latency(std::span<const CopyPoint> points, std::span<const std::size_t> use);

struct GatherPoint {
  CopyDirection direction = CopyDirection::h2d;
  double bytes = 0.0;    // rows x row bytes
  double seconds = 0.0;  // measured, > 0
};

// Fits pcie.gather_{h2d,d2h}_efficiency given base.latency and base's bandwidths (fit the copies
// first). One closed-form relative least-squares coefficient per direction present.
// Throws FitError if a direction's points imply an efficiency outside (0, 1].
[[nodiscard]] PcieSpec fit_gather_efficiency(std::span<const GatherPoint> points, std::span<const std::size_t> use,
                                             const PcieSpec& base);

struct InterferencePoint {
  double alone_seconds = 0.0;        // a kernel alone
  double with_gather_seconds = 0.0;  // the same kernel while a UVA gather runs beside it
};

// pcie.gather_sm_fraction = median over points of 1 - alone / with, clamped to [0, 0.95].
[[nodiscard]] double fit_gather_sm_fraction(std::span<const InterferencePoint> points, std::span<const std::size_t> use);

}  // namespace ess
