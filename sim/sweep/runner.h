// Running a sweep: one `ess-sim run --json` child process per point (SimGrid holds one engine per
// process), up to `jobs` at a time, each finished point appended to the ledger; and merging the
// ledgers of shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/sweep/ledger.h"
#include "sim/sweep/spec.h"

namespace ess {

struct SweepRunOptions {
  std::filesystem::path out_dir;
  std::size_t jobs = 1;
  std::size_t shard_index = 0;
  std::size_t shard_count = 1;
  bool resume = false;
  double timeout_s = 0.0;  // a point running longer is killed: resource_limit, code "timeout" (0: none)
  // The ess-sim binary the points run (the CLI passes /proc/self/exe; tests the built binary).
  std::string executable;
  std::ostream* progress = nullptr;  // one line per finished point (null: silent)
  bool progress_is_terminal = false;  // then one line rewritten in place
};

struct SweepRunSummary {
  std::size_t points = 0;  // in this shard
  std::size_t kept = 0;    // taken from the ledger (--resume)
  std::size_t ran = 0;     // child processes started
  std::size_t ok = 0, invalid = 0, out_of_memory = 0, resource_limit = 0, failed = 0;  // of all points
  double wall_s = 0.0;
};

// Runs the points of shard `shard_index` (those with index % shard_count == shard_index) into
// out_dir: spec.json, results.jsonl (appended as points finish; rewritten sorted by point at the
// end) and results.csv. Refuses a directory holding another spec's sweep (or, without --resume,
// any ledger). Throws ConfigError (bad input) or OutputError.
SweepRunSummary run_sweep(const SweepSpec& spec, const SweepRunOptions& options);

// One `ess-sim run SCENARIO --set ... [--steps N] --json [extra]` child process.
struct ScenarioChild {
  std::string scenario;
  std::vector<std::string> sets;  // dotted.path=value, each after its own --set
  std::int64_t steps = 0;         // 0: the scenario's workload.decode_steps
  std::vector<std::string> extra_args;  // e.g. --allow-large, --access-store DIR
};

// The child's argv[1] on: run SCENARIO --set S ... [--steps N] --json EXTRA...
[[nodiscard]] std::vector<std::string> scenario_child_args(const ScenarioChild& child);

// Runs `children` to completion, up to `jobs` at once, in `cwd` (empty: the current directory),
// their output through files in `work_dir` (created; the files are removed afterwards). As each
// finishes, `finished(index, outcome)` is called in this thread with its classified outcome
// (classify_run); when it returns false no further child is started (those running are still
// waited for and reported). Throws OutputError.
void run_scenario_children(const std::string& executable, const std::vector<ScenarioChild>& children,
                           std::size_t jobs, const std::filesystem::path& cwd, const std::filesystem::path& work_dir,
                           const std::function<bool(std::size_t, PointOutcome&)>& finished);

// Runs one `executable run SCENARIO --set ... [--steps N] --json` child to completion in `cwd` (its
// output through files in `work_dir`, removed afterwards) and classifies it; steps 0 keeps the
// scenario's. For searches, which run points one after another. Throws OutputError.
[[nodiscard]] PointOutcome run_scenario_child(const std::string& executable, const std::string& scenario,
                                              const std::vector<std::string>& sets, std::int64_t steps,
                                              const std::filesystem::path& cwd, const std::filesystem::path& work_dir);

// Joins the ledgers of `dirs` (same spec hash required) into out_dir: spec.json, results.jsonl
// sorted by point, results.csv, the files the unsharded run writes. A point in several ledgers
// keeps its first "ok" record (else its first record). A point in none is an error unless
// `allow_missing`. Returns the number of points written.
std::size_t merge_sweeps(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& out_dir,
                         bool allow_missing);

}  // namespace ess
