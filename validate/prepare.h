// `ess-sim validate --prepare`: turns a scenario into a configuration of the GPU ground-truth
// runner (kernels/runner): the runner's command-line arguments and the access trace holding the
// exact top-k selections the simulation of that scenario uses, so both see the same misses.
//
// The runner executes dense MLA + indexer layers with ESS offload on one GPU, so the scenario must
// be: one GPU in total, an MLA model with an indexer and no MoE (e.g. deepseek-v3.2-exp with
// "moe": null and fewer layers), no MTP (workload.mtp.depth 1), cache.mode "offload" with
// cache.pool_entries, sampled_requests equal to the batch (every request simulated exactly),
// overlap serial or da. Anything else is a ConfigError saying which field to change.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/config/scenario.h"

namespace ess {

// The scenario's identity for the runner's trace: SHA-256 of its resolved values (sources
// stripped, so the same configuration loaded from another path has the same identity), without
// the hardware section: a trace can be validated against any calibration of its GPU.
[[nodiscard]] std::string scenario_identity(const Scenario& scenario);

struct RunnerConfig {
  std::string arguments;               // one line: the ess-runner options (without --out)
  std::filesystem::path access_trace;  // written by prepare_runner
};

// Checks the scenario, writes `dir`/`name`.esstrace, `dir`/`name`.args and `dir`/`name`.scenario.json
// (the scenario resolved, overrides included: validate the trace against this file), adds its
// weight GEMMs to `dir`/gemm-shapes.csv (add_gemm_shapes), returns the first two.
[[nodiscard]] RunnerConfig prepare_runner(const Scenario& scenario, const std::filesystem::path& dir,
                                          const std::string& name);

// The shapes file ess-bench reads with --gemm-shapes (format: kernels/bench/gemm_shapes.h).
inline constexpr const char* kGemmShapesFile = "gemm-shapes.csv";

// The rows of the scenario's weight GEMMs (sim/graph/weight_gemms.h, at its tensor-parallel degree
// and MTP depth), "model,tp,name,form,n,k,dtype" each, in the order a step issues them.
[[nodiscard]] std::vector<std::string> gemm_shape_rows(const Scenario& scenario);

// Adds the scenario's rows to `dir`/gemm-shapes.csv (written whole, with its header): rows
// already in the file are kept, none twice, so that preparing several scenarios into one folder
// lists the GEMMs of all of them. Returns the file's path.
std::filesystem::path add_gemm_shapes(const Scenario& scenario, const std::filesystem::path& dir);

}  // namespace ess
