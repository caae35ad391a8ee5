// Hardware profiles: the files `ess-sim calibrate` writes (calibration/profiles/*.json, schema
// "ess-sim/hardware-profile/v1"). A profile carries a complete hardware description under
// "hardware" (every value with its source: fitted or inherited from the base preset), plus the
// provenance and the per-model error of the fit. Anywhere a hardware preset is accepted, a
// profile is too:
//
//   scenario:  "hardware": {"profile": "../calibration/profiles/x.json", "nodes": 4}
//              (a relative path is resolved against the scenario file's folder; one given with
//              --set, against the current directory)
//   CLI:       ess-sim cost gemm --hardware calibration/profiles/x.json ...
//   by name:   the profiles shipped in calibration/profiles/ are built in, like the presets
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/cost.h"

namespace ess {

inline constexpr std::string_view kProfileSchema = "ess-sim/hardware-profile/v1";

// True when a --hardware argument names a file rather than a preset: it contains a '/' or ends
// in ".json".
[[nodiscard]] bool names_a_file(std::string_view hardware);

// The "hardware" document of a profile's JSON text. `origin` names the file in errors.
// Throws ConfigError when the text is not JSON, lacks the schema, or has no "hardware" object.
[[nodiscard]] nlohmann::json profile_hardware(std::string_view text, const std::string& origin);

// Reads the profile file at `path` (ConfigError if it cannot be read) and returns profile_hardware.
[[nodiscard]] nlohmann::json read_profile_hardware(const std::string& path);

// The error band of one calibrated parameter set (models/cost.h ParamSet): sigma, the relative
// error of one prediction (1.4826 x the k-fold cross-validated median |relative error|: the
// standard deviation if the errors were normal), and where it comes from.
struct ParamBand {
  double sigma = 0.0;
  std::string source;
  bool operator==(const ParamBand&) const = default;
};
using CalibrationBands = std::array<std::optional<ParamBand>, kParamSetCount>;

// How a profile's hardware was calibrated: the one-line summary `run` prints and the bands.
struct HardwareCalibration {
  std::string summary;  // calibration_summary(); empty for datasheet presets and inline sections
  CalibrationBands bands{};
};

// The error of a value transferred from another GPU, one sigma: 1.4826 x the median |error| of
// FlashMLA's dense H100 rows predicted from the H800 profile alone (5.4%,
// calibration/leave_one_gpu_out.sh; the one kernel family both GPUs measured). Applied to every
// transferred parameter set, whose own transfer error no data measures.
inline constexpr double kTransferSigma = 1.4826 * 0.054;

// The bands of a profile document: each model fitted on its GPU (calibration.models with a
// cross-validated error) gives its parameter sets sigma = 1.4826 x CV median |error| (the largest
// when two models fit one set); each set transferred from a donor (calibration.transferred) and
// not fitted here gets sqrt(donor sigma^2 + kTransferSigma^2). `donor` finds a donor's bands by
// profile name (nullptr: unknown donor, no band). Sets priced by neither have no band.
using DonorBands = std::function<const CalibrationBands*(const std::string& name)>;
[[nodiscard]] CalibrationBands calibration_bands(const nlohmann::json& profile_document, const DonorBands& donor);

// A profile's hardware and its calibration; donors are looked up among the built-in profiles.
struct ProfileDocument {
  nlohmann::json hardware;
  HardwareCalibration calibration;
};
[[nodiscard]] ProfileDocument parse_profile(std::string_view text, const std::string& origin, const DonorBands& donor);
[[nodiscard]] ProfileDocument read_profile(const std::string& path);

// "calibrated (base B): k-fold CV median |error| gemm-measured 1.1%, gemm 6.3%, ...; transferred
// from P (N fields), fitted on that GPU" from the profile's calibration.models and
// calibration.transferred; "calibrated" alone when the document records neither.
[[nodiscard]] std::string calibration_summary(const nlohmann::json& profile_document);

}  // namespace ess
