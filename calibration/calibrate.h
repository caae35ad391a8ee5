// The calibration driver behind `ess-sim calibrate`: fits every cost model the measurements cover,
// cross-validates each fit, and writes a hardware profile (sim/config/profile.h) whose fitted
// values carry their provenance and error.
//
// Order matters only for the PCIe models: the copy fit sets the latency and bandwidths the gather
// efficiency is measured against. Models without measurements keep the base hardware's values
// (and sources), and the report says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/measurements.h"
#include "models/fit.h"
#include "models/hardware.h"

namespace ess {

struct CalibrateOptions {
  std::string base;         // hardware preset name or profile path the profile starts from
  std::string name;         // profile name; empty: "<base>-measured"
  std::string description;  // empty: generated from the inputs
  int folds = 5;            // k of the k-fold cross-validation
  std::uint64_t seed = 1;   // fold assignment
  std::string command;      // the command line, recorded in the profile
  // Profiles whose fitted values carry over to this GPU (transfer_rules()), in priority order: a
  // field is taken from the first donor that fitted it, and a fit of this calibration's own
  // measurements replaces it.
  std::vector<std::string> transfer;
};

// What carries over from a profile fitted on one GPU to another GPU's profile: the fraction of a
// roof a kernel reaches, its size ramps and fixed overheads (properties of the kernel code on the
// same SM architecture), not the peaks, bandwidths and measured times they multiply.
struct TransferRule {
  std::vector<std::string> path;  // the field under "hardware"
  std::string rule;               // why it carries over, in words
  bool same_pcie_generation = false;  // only between GPUs whose pcie.generation is equal
  // A compute efficiency: the donor's value times target / donor gpu.sustained_clock_fraction
  // (capped at 1), since a fraction of the peak holds the clock the donor sustained.
  bool scales_with_clock = false;
};
[[nodiscard]] const std::vector<TransferRule>& transfer_rules();

struct ModelReport {
  std::string model;                // "gemm", "norm", "pcie-copy", ...
  std::string description;          // what was measured, in words
  std::vector<std::string> fields;  // hardware fields the fit sets, e.g. "kernels.gemm.compute_efficiency"
  std::string parameters;           // the fitted values, as written to the profile
  ErrorSummary fit;                 // the written profile's error on every point
  ErrorSummary cross_validated;     // held-out error (k-fold); points == 0 when too few points
  int folds = 0;
  ErrorSummary cross_validated_by_group;  // whole groups (GEMM weight shapes) held out
  int group_folds = 0;                    // 0: not computed
};

struct Calibration {
  Hardware hardware;                    // the profile, read back exactly as a scenario would read it
  std::vector<ModelReport> models;      // fitted models, in a fixed order
  std::vector<std::string> not_fitted;  // models with no measurements (base or transferred values kept)
  std::vector<std::string> transferred; // "<donor name>: <n> fields", one per --transfer profile
  nlohmann::ordered_json profile;       // the profile document
};

// Throws FitError (a model the data cannot determine), MeasurementError or ConfigError (a bad
// base, e.g. an unknown preset).
[[nodiscard]] Calibration calibrate(const MeasurementSet& measurements, const CalibrateOptions& options);

// `words` as one POSIX sh command line, as a profile records the command that wrote it: a word made
// only of characters sh leaves alone (letters, digits and _@%+=:,./-) is written as it is, any
// other is single-quoted with each ' written as '\''. Pasted into sh, the line gives back exactly
// `words`, so `calibration.command` can be run as it stands from the repository root.
[[nodiscard]] std::string shell_command(const std::vector<std::string>& words);

// The per-model error table `ess-sim calibrate` prints.
[[nodiscard]] std::string format_calibration_report(const Calibration& c);

}  // namespace ess
