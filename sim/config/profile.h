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

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

// A profile's hardware and the one-line summary of its fit, as `run` prints it.
struct ProfileDocument {
  nlohmann::json hardware;
  std::string calibration;  // calibration_summary() of the document
};
[[nodiscard]] ProfileDocument parse_profile(std::string_view text, const std::string& origin);
[[nodiscard]] ProfileDocument read_profile(const std::string& path);

// "calibrated (base B): k-fold CV median |error| gemm-measured 1.1%, gemm 6.3%, ...; transferred
// from P (N fields), fitted on that GPU" from the profile's calibration.models and
// calibration.transferred; "calibrated" alone when the document records neither.
[[nodiscard]] std::string calibration_summary(const nlohmann::json& profile_document);

}  // namespace ess
