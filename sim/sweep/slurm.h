// A sweep as a Slurm job array: one array task per shard (`ess-sim sweep --shard i/n --resume`), then
// one merge job (`ess-sim sweep-merge`) that starts when every task has succeeded.
//
// `ess-sim sweep SPEC -o OUT --slurm-array SCRIPTS --shards N` writes, and does not submit:
//   SCRIPTS/array.sbatch  #SBATCH --array=0-(N-1); task i runs shard i/N into OUT/shard-i with --resume,
//                         so a requeued or resubmitted task continues its ledger instead of starting over
//   SCRIPTS/merge.sbatch  sweep-merge OUT/shard-0 ... OUT/shard-(N-1) -o OUT
//   SCRIPTS/submit.sh     sbatch the array, then the merge with --dependency=afterok:<array job>
//   SCRIPTS/logs/         each job's output (%x-%A_%a.out for the tasks, %x-%j.out for the merge)
// The binary, the spec and OUT are absolute paths, so the jobs run from any working directory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sweep/spec.h"

namespace ess {

inline constexpr const char* kSlurmArrayScript = "array.sbatch";
inline constexpr const char* kSlurmMergeScript = "merge.sbatch";
inline constexpr const char* kSlurmSubmitScript = "submit.sh";
inline constexpr const char* kSlurmLogsDir = "logs";
// Where submit.sh records the job ids of its last submission ("ARRAY_ID MERGE_ID"), so that a
// second submission can refuse while the first array still runs and cancel its stranded merge.
inline constexpr const char* kSlurmSubmittedFile = "submitted";
// The shard directory of array task i is OUT/<kSlurmShardPrefix>i.
inline constexpr const char* kSlurmShardPrefix = "shard-";

struct SlurmArrayOptions {
  std::filesystem::path spec_path;    // the sweep spec file
  std::filesystem::path out_dir;      // OUT: shard-i/ of each task, the merged ledger and CSV in OUT itself
  std::filesystem::path scripts_dir;  // SCRIPTS
  std::string executable;             // the ess-sim binary the jobs run
  std::size_t shards = 0;             // array tasks, >= 1 and at most the spec's points
  std::size_t jobs = 1;               // each task's --cpus-per-task and its sweep --jobs
  std::string partition;              // empty: the cluster's default partition
  std::string time_limit;             // Slurm's --time ("HH:MM:SS", "D-HH:MM:SS", minutes); empty: the partition's default
  std::vector<std::string> sbatch_options;  // each written as its own "#SBATCH <option>" line in both job scripts
  std::string point_timeout;                // sweep --timeout of each task (already checked); empty: none
};

struct SlurmScripts {
  std::string array;   // array.sbatch
  std::string merge;   // merge.sbatch
  std::string submit;  // submit.sh
};

// `text` as one POSIX shell word: itself when it is only [A-Za-z0-9_@%+=:,./-], else in single quotes
// with each ' written '\''. sbatch's #SBATCH parser reads that form the same way, except that it takes a
// backslash as an escape even inside quotes, which is why the scripts directory may not hold one.
[[nodiscard]] std::string shell_quote(std::string_view text);

// The scripts' text. Pure: no file is read; the paths must already be absolute (ConfigError otherwise)
// and `points` is the spec's point count. Throws ConfigError for an option Slurm would reject.
[[nodiscard]] SlurmScripts slurm_array_scripts(const SweepSpec& spec, std::size_t points,
                                               const SlurmArrayOptions& options);

struct SlurmArrayWritten {
  std::filesystem::path scripts_dir, out_dir;  // absolute
  std::size_t points = 0;
  std::size_t shards = 0;
};

// Validates the spec (its points expand, its base scenario is readable) and what is already in OUT
// (a spec.json of another spec, or a shard directory of another shard count, would make every task
// fail on the cluster), makes the paths absolute, creates OUT and SCRIPTS/logs and writes the three
// scripts atomically, executable. Throws ConfigError (bad input) or OutputError.
SlurmArrayWritten write_slurm_array(const SweepSpec& spec, const SlurmArrayOptions& options);

}  // namespace ess
