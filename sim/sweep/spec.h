// A capacity-planning sweep: a base scenario, the axes its points vary (dotted scenario paths, each
// value a `--set` override), how many decode steps each point simulates and what it records.
//
// Read from JSON as strictly as a scenario: unknown keys are errors with a "did you mean", every
// error is a ConfigError naming the file, the JSON pointer and what was expected. The format is
// documented in scenarios/README.md ("Sweeps").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

inline constexpr std::string_view kSweepSchema = "ess-sim/sweep/v1";

// Decode steps per point when the spec gives none.
inline constexpr std::int64_t kDefaultSweepSteps = 4;
// Most points one spec may expand to: far above a real study, low enough that a typo in a range
// (step 1e-9) is an error rather than hours of runs.
inline constexpr std::size_t kMaxSweepPoints = 1000000;

// A summary field of results.json a sweep can record, and its ledger/CSV column name, which carries
// its unit (`step_time_s.mean` -> `step_time_mean_s`).
struct SweepMetric {
  std::string path;    // dotted path inside results.json "summary"
  std::string column;  // ledger field and CSV column
};

// The ledger columns that code reads by name (the charts, sim/sweep/plot_*.cpp), written once here;
// known_sweep_metrics() gives each its summary path.
namespace sweepcol {
inline constexpr const char* batch_per_gpu = "batch_per_gpu";
inline constexpr const char* context_length = "context_length_tokens";
inline constexpr const char* step_time_mean = "step_time_mean_s";
inline constexpr const char* tokens_per_gpu = "tokens_per_s_per_gpu";
inline constexpr const char* otps_per_request = "otps_per_request_tokens_per_s";
inline constexpr const char* time_gemm = "time_gemm_s";
inline constexpr const char* time_attention = "time_attention_s";
inline constexpr const char* time_indexer = "time_indexer_s";
inline constexpr const char* time_norm = "time_norm_s";
inline constexpr const char* time_elementwise = "time_elementwise_s";
inline constexpr const char* time_collectives = "time_collectives_s";
inline constexpr const char* time_transfers = "time_transfers_s";
inline constexpr const char* time_host = "time_host_s";
inline constexpr const char* time_idle = "time_idle_s";
inline constexpr const char* offload_hidden = "offload_hidden_s";
inline constexpr const char* pcie_h2d = "pcie_h2d_utilization";
inline constexpr const char* pcie_d2h = "pcie_d2h_utilization";
inline constexpr const char* serving_ttft_p99 = "serving_ttft_p99_s";
inline constexpr const char* serving_tpot_p99 = "serving_tpot_p99_s";
inline constexpr const char* serving_throughput = "serving_output_tokens_per_s";
inline constexpr const char* serving_goodput = "serving_goodput_requests_per_s";
}  // namespace sweepcol

// Every numeric summary field of results.json (sim/metrics/results.cpp), in its order. A point whose
// results lack one (offload.* on a GPU-only point) records null.
[[nodiscard]] const std::vector<SweepMetric>& known_sweep_metrics();
// The metrics a spec without "metrics" records.
[[nodiscard]] const std::vector<std::string>& default_sweep_metric_paths();

struct SweepAxis {
  std::string path;                  // dotted scenario path, as in --set
  std::vector<nlohmann::json> values;  // in order; each becomes --set path=<value as JSON>
};

// A combination the sweep skips: every `when` axis has one of its listed values. Skipped points are
// recorded as invalid with reason {code "constraint", message `reason`}, without a run.
struct SweepConstraint {
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> when;  // axis path -> accepted values
  std::string reason;
};

struct SweepSpec {
  std::string origin;                // the spec file (for messages)
  std::string name;
  std::string description;
  std::string base;                  // as written: relative to the spec file's folder (or absolute)
  std::filesystem::path base_dir;    // the spec file's folder
  std::int64_t steps = kDefaultSweepSteps;
  std::vector<SweepAxis> axes;       // in the spec's order
  // Groups of axis indices that advance together (zip); every other axis is a group of one.
  // In the order of each group's first axis in `axes`.
  std::vector<std::vector<std::size_t>> dimensions;
  std::vector<SweepMetric> metrics;
  std::vector<SweepConstraint> constraints;  // in the spec's order; the first that matches names the reason
  nlohmann::json document;           // the spec as parsed
  std::string sha256;                // of the document's canonical form (keys sorted, no spaces)
};

// Parses a spec; `origin` names it in errors, `base_dir` is the folder `base` is relative to.
// Throws ConfigError. Does not read the base scenario.
[[nodiscard]] SweepSpec parse_sweep_spec(std::string_view text, const std::string& origin,
                                         const std::filesystem::path& base_dir);
// The same from a parsed document.
[[nodiscard]] SweepSpec read_sweep_spec(const nlohmann::json& document, const std::string& origin,
                                        const std::filesystem::path& base_dir);
// Reads and parses a spec file.
[[nodiscard]] SweepSpec load_sweep_spec(const std::filesystem::path& path);

}  // namespace ess
