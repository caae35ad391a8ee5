// A sweep's ledger, DIR/results.jsonl: one JSON object per point on one line, appended as points
// finish, so a kill loses at most the points in flight; and its CSV view, DIR/results.csv.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/points.h"
#include "sim/sweep/spec.h"

namespace ess {

inline constexpr const char* kLedgerName = "results.jsonl";
inline constexpr const char* kLedgerCsvName = "results.csv";
inline constexpr const char* kSweepSpecCopyName = "spec.json";
inline constexpr std::string_view kSweepDirSchema = "ess-sim/sweep-dir/v1";

// What became of a point. Statuses: "ok", "invalid" (the scenario loader or preflight rejected the
// combination), "out_of_memory" (the batch does not fit), "resource_limit" (refused by the
// preflight's memory / wall-time estimate), "failed" (anything else: a crash, an internal error).
struct PointOutcome {
  std::string status;
  std::string reason_code;     // empty for ok; else a stable code (below)
  std::string reason_message;  // the tool's message (the budget for out_of_memory)
  nlohmann::ordered_json results;  // results.json of an ok point
};

// Classifies a finished `ess-sim run --json` child: `exit_code` (or -1 when killed by `signal`),
// its stdout and stderr. Codes: invalid_scenario, out_of_memory, resource_limit, internal_error
// (exit 3), exit_N, signal_N, bad_output (exit 0 without a results.json on stdout).
[[nodiscard]] PointOutcome classify_run(int exit_code, int signal, const std::string& out, const std::string& err);

// The ledger object of a point: point, axes, status, reason ({code, message} or null), each metric
// under its column name (null when absent), scenario_sha256, ess_sim_version, wall_s.
[[nodiscard]] nlohmann::ordered_json ledger_record(const SweepSpec& spec, const SweepPoint& point,
                                                   const PointOutcome& outcome, const std::string& scenario_sha256,
                                                   double wall_s);
// One line of the ledger: compact JSON and '\n'.
[[nodiscard]] std::string ledger_line(const nlohmann::ordered_json& record);

struct LedgerContent {
  std::vector<nlohmann::ordered_json> records;  // in file order
  std::size_t valid_bytes = 0;  // bytes up to the end of the last whole line
  bool torn_tail = false;       // the file ended in a partial line (a kill during a write)
};

// Reads a ledger (absent: empty). A last line without its '\n' or that does not parse is a torn
// write and is ignored; any other bad line is a ConfigError naming the file and line.
[[nodiscard]] LedgerContent read_ledger(const std::filesystem::path& path);

// Appends `line` with a single write() on an O_APPEND descriptor and fsync()s it. Throws OutputError.
class LedgerAppender {
 public:
  explicit LedgerAppender(const std::filesystem::path& path);
  ~LedgerAppender();
  LedgerAppender(const LedgerAppender&) = delete;
  LedgerAppender& operator=(const LedgerAppender&) = delete;
  void append(const std::string& line);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// The records sorted by point, one line each (what a finished sweep and sweep-merge write).
[[nodiscard]] std::string sorted_ledger_text(std::vector<nlohmann::ordered_json> records);

// The CSV view: point, each axis path, status, reason_code, reason (first line), each metric
// column, scenario_sha256, ess_sim_version; sorted by point. No wall time, so the same spec and
// binary give a byte-identical CSV.
[[nodiscard]] std::string ledger_csv(const SweepSpec& spec, std::vector<nlohmann::ordered_json> records);

// DIR/spec.json: {"schema", "spec_sha256", "shard": "i/n", "spec": the spec document}.
[[nodiscard]] std::string sweep_spec_copy(const SweepSpec& spec, std::size_t shard_index, std::size_t shard_count);

}  // namespace ess
