// A cost model `ess-sim calibrate` can fit: the hardware fields it sets, how it fits them on a subset
// of the measured points, and how it predicts each point through the model functions the simulator
// itself calls (so the cross-validation measures what a simulation will see).
//
// Each model is made by one function in a file of its family (fit_pcie.cpp, fit_gemm.cpp,
// fit_attention.cpp, fit_memory_bound.cpp, fit_collectives.cpp); the registry, fitted_models.cpp,
// lists them in fit order. Adding a model: write its make_<name> (returning nothing when the
// measurements hold none of its points), declare it below and add one line, its name and maker, to
// the registry.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "calibration/measurements.h"
#include "models/hardware.h"
#include "sim/config/quantity.h"

namespace ess::calibration {

// One hardware field a fit sets: its JSON path, how it is written, and access to its value.
struct Field {
  std::vector<std::string> path;
  std::optional<Dimension> dimension;  // empty: a plain number (efficiency, FLOP count, fraction)
  std::function<double(const Hardware&)> get;
  std::function<void(Hardware&, double)> set;

  [[nodiscard]] std::string dotted() const {
    std::string s;
    for (const auto& p : path) s += (s.empty() ? "" : ".") + p;
    return s;
  }
  [[nodiscard]] std::string text(const Hardware& hw) const {
    const double v = get(hw);
    return dimension ? format_quantity(v, *dimension) : shortest_number(v);
  }
};

// A cost model the measurements can calibrate.
struct ModelSpec {
  std::string name;
  std::string description;
  std::vector<double> measured;  // seconds per point
  std::vector<Field> fields;
  // Fits on the given points and writes the parameters into the hardware.
  std::function<void(Hardware&, std::span<const std::size_t>)> fit;
  // The model's prediction for point i on the given hardware (through the model functions the
  // simulator itself calls).
  std::function<double(const Hardware&, std::size_t)> predict;
  // Optional: a group id per point (the GEMM weight shape); then a second cross-validation holds
  // out whole groups, reported as "<name> by shape".
  std::vector<std::size_t> groups;
  // Optional: writes a fitted value that is not a scalar field (the measured GEMM table).
  std::function<void(const Hardware&, nlohmann::json& doc, const std::string& source)> write;
  // False for a model with one figure per parameter (nothing to hold out) or none (reported only).
  bool cross_validate = true;
};

inline double as_double(double v) { return v; }
template <class Tag>
double as_double(Quantity<Tag> q) {
  return q.value();
}

// The field at `path` that `ref` reaches: ref is a generic lambda, [](auto& h) -> auto& { return
// h.pcie.latency; }, so it serves both the const read and the write. The JSON form follows the
// C++ type: seconds, bytes and bandwidths as quantities with units, anything else a plain number.
template <class Ref>
Field field(std::vector<std::string> path, Ref ref) {
  using T = std::remove_cvref_t<decltype(ref(std::declval<Hardware&>()))>;
  Field f;
  f.path = std::move(path);
  if constexpr (std::is_same_v<T, Seconds>) f.dimension = Dimension::seconds;
  if constexpr (std::is_same_v<T, Bytes>) f.dimension = Dimension::bytes;
  if constexpr (std::is_same_v<T, BytesPerSecond>) f.dimension = Dimension::bytes_per_second;
  f.get = [ref](const Hardware& h) { return as_double(ref(h)); };
  f.set = [ref](Hardware& h, double v) { ref(h) = T(v); };
  return f;
}

// hardware.kernels.<kernel>.<key>: member `member` of the roofline parameters `which`.
template <class M>
Field roofline_field(const char* kernel, RooflineParams KernelParams::*which, const char* key,
                     M RooflineParams::*member) {
  return field({"kernels", kernel, key}, [which, member](auto& h) -> auto& { return (h.kernels.*which).*member; });
}

// All six parameters of a full roofline (compute and memory sides, overhead, transition), in the
// order the profiles list them.
inline std::vector<Field> roofline_fields(const char* kernel, RooflineParams KernelParams::*which) {
  return {roofline_field(kernel, which, "compute_efficiency", &RooflineParams::compute_efficiency),
          roofline_field(kernel, which, "compute_ramp", &RooflineParams::compute_ramp),
          roofline_field(kernel, which, "memory_efficiency", &RooflineParams::memory_efficiency),
          roofline_field(kernel, which, "memory_ramp", &RooflineParams::memory_ramp),
          roofline_field(kernel, which, "kernel_overhead", &RooflineParams::kernel_overhead),
          roofline_field(kernel, which, "transition", &RooflineParams::transition)};
}

// The seconds of each point, in order.
template <class Points>
std::vector<double> seconds_of(const Points& points) {
  std::vector<double> v;
  for (const auto& p : points) v.push_back(p.seconds);
  return v;
}

// Makes a model from the measurements, or nothing when they hold none of its points. `base` is the
// hardware before any fit (base preset and transfers).
using MakeModel = std::optional<ModelSpec> (*)(const MeasurementSet& m, const Hardware& base);

// A registry entry.
struct FittedModel {
  const char* name;  // in reports and in the profile's sources: "pcie-copy"
  MakeModel make;
  bool fits = true;  // false: reported beside the fits, sets nothing (never "not fitted")
};

// The registry, in fit order: a later fit may read what an earlier one set (the all-to-all's
// efficiency is a fraction of the NVLink bandwidth the peer copies fit; the measured GEMM table
// is cleared by the roofline's fit, then set by its own).
[[nodiscard]] std::span<const FittedModel> fitted_models();

// Every registered model the measurements hold points for, in fit order, named by its entry.
[[nodiscard]] std::vector<ModelSpec> model_specs(const MeasurementSet& m, const Hardware& base);

// The models (fit_<family>.cpp).
std::optional<ModelSpec> make_pcie_copy(const MeasurementSet& m, const Hardware& base);        // fit_pcie.cpp
std::optional<ModelSpec> make_pcie_gather(const MeasurementSet& m, const Hardware& base);      // fit_pcie.cpp
std::optional<ModelSpec> make_gather_sm_share(const MeasurementSet& m, const Hardware& base);  // fit_pcie.cpp
std::optional<ModelSpec> make_gemm(const MeasurementSet& m, const Hardware& base);             // fit_gemm.cpp
std::optional<ModelSpec> make_gemm_measured(const MeasurementSet& m, const Hardware& base);    // fit_gemm.cpp
std::optional<ModelSpec> make_grouped_gemm(const MeasurementSet& m, const Hardware& base);     // fit_gemm.cpp
std::optional<ModelSpec> make_attention_rates(const MeasurementSet& m, const Hardware& base);  // fit_attention.cpp
std::optional<ModelSpec> make_dense_attention(const MeasurementSet& m, const Hardware& base);  // fit_attention.cpp
std::optional<ModelSpec> make_sparse_attention(const MeasurementSet& m, const Hardware& base); // fit_attention.cpp
std::optional<ModelSpec> make_prefill_attention(const MeasurementSet& m, const Hardware& base); // fit_attention.cpp
std::optional<ModelSpec> make_memory_bound(const MeasurementSet& m, const Hardware& base);     // fit_memory_bound.cpp
std::optional<ModelSpec> make_allreduce(const MeasurementSet& m, const Hardware& base);        // fit_collectives.cpp
std::optional<ModelSpec> make_nvlink_p2p(const MeasurementSet& m, const Hardware& base);       // fit_collectives.cpp
std::optional<ModelSpec> make_alltoall(const MeasurementSet& m, const Hardware& base);         // fit_collectives.cpp
std::optional<ModelSpec> make_expert_alltoall(const MeasurementSet& m, const Hardware& base);  // fit_collectives.cpp
std::optional<ModelSpec> make_alltoall_normal(const MeasurementSet& m, const Hardware& base);  // fit_collectives.cpp

}  // namespace ess::calibration
