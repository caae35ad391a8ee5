#include "sim/sweep/slurm.h"

#include <unistd.h>

#include <regex>
#include <system_error>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/io/atomic_file.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/points.h"

namespace ess {

namespace {

// Options the scripts set themselves: given again through --sbatch-option they would break the
// array (an --array on the merge, an --output outside logs/) or contradict --jobs / --partition / --time.
struct ReservedOption {
  const char* long_name;
  char short_name;
  const char* instead;
};
constexpr ReservedOption kReservedOptions[] = {
    {"array", 'a', "the array is one task per shard (--shards)"},
    {"dependency", 'd', "submit.sh makes the merge depend on the array"},
    {"output", 'o', "each job's output goes to SCRIPTS/logs/"},
    {"error", 'e', "each job's output goes to SCRIPTS/logs/"},
    {"open-mode", '\0', "the logs are appended to, so a requeued task keeps its earlier output"},
    {"job-name", 'J', "the jobs are named after the spec"},
    {"cpus-per-task", 'c', "use --jobs, which sets each task's CPUs and its points run at once"},
    {"ntasks", 'n', "each job is one task, the sweep process"},
    {"partition", 'p', "use --partition"},
    {"time", 't', "use --time"},
};

void check_sbatch_option(const std::string& text) {
  const std::string origin = "--sbatch-option " + text;
  if (text.size() < 2 || text[0] != '-') {
    throw ConfigError(origin, "", "expected an sbatch option such as --account=NAME or --mem=4G");
  }
  if (text.find_first_of("\n\r") != std::string::npos) throw ConfigError(origin, "", "expected one line");
  std::string long_name;
  char short_name = '\0';
  if (text[1] == '-') {
    long_name = text.substr(2, text.find_first_of("= \t") - 2);
  } else {
    short_name = text[1];
  }
  for (const auto& r : kReservedOptions) {
    if ((!long_name.empty() && long_name == r.long_name) || (short_name != '\0' && short_name == r.short_name)) {
      throw ConfigError(origin, "", std::string("the generated scripts set --") + r.long_name + " themselves: " +
                                        r.instead);
    }
  }
}

void check_absolute(const std::filesystem::path& path, const char* what) {
  if (!path.is_absolute()) {
    throw ConfigError(path.string(), "", std::string("expected an absolute path for the ") + what);
  }
  if (path.string().find_first_of("\n\r") != std::string::npos) {
    throw ConfigError(path.string(), "",
                      std::string("the ") + what + " path holds a line break, which a #SBATCH line cannot carry");
  }
}

// A job name Slurm shows in squeue: the spec's name with anything but [A-Za-z0-9._-] made '-'.
std::string job_name(const SweepSpec& spec) {
  std::string name = spec.name.empty() ? std::string("sweep") : spec.name.substr(0, 40);
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    if (!keep) c = '-';
  }
  return "ess-" + name;
}

// A directory as a Slurm --output filename pattern prefix: '%' starts a replacement symbol, "%%" is one '%'.
std::string pattern_literal(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

// The #SBATCH lines both job scripts share after their own.
std::string shared_directives(const SlurmArrayOptions& o) {
  std::string text;
  if (!o.partition.empty()) text += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time_limit.empty()) text += "#SBATCH --time=" + o.time_limit + "\n";
  for (const auto& option : o.sbatch_options) text += "#SBATCH " + option + "\n";
  return text;
}

// DIR/spec.json's spec_sha256 and shard, or empty strings when there is none.
std::pair<std::string, std::string> existing_sweep(const std::filesystem::path& dir) {
  const auto path = dir / kSweepSpecCopyName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const nlohmann::json j = read_json_file(path);
  if (!j.is_object() || !j.contains("spec_sha256") || !j["spec_sha256"].is_string()) {
    throw ConfigError(path.string(), "", "not a sweep directory's spec.json (expected schema \"" +
                                             std::string(kSweepDirSchema) + "\" and spec_sha256)");
  }
  return {j["spec_sha256"].get<std::string>(), j.value("shard", std::string())};
}

void make_executable(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::perms p = fs::status(path, ec).permissions();
  fs::perms exec = fs::perms::none;
  if ((p & fs::perms::owner_read) != fs::perms::none) exec |= fs::perms::owner_exec;
  if ((p & fs::perms::group_read) != fs::perms::none) exec |= fs::perms::group_exec;
  if ((p & fs::perms::others_read) != fs::perms::none) exec |= fs::perms::others_exec;
  if (!ec) fs::permissions(path, exec, fs::perm_options::add, ec);
  if (ec) throw OutputError(path, "cannot make " + path.string() + " executable: " + ec.message());
}

}  // namespace

std::string shell_quote(std::string_view text) {
  static const std::string safe =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";
  if (!text.empty() && text.find_first_not_of(safe) == std::string_view::npos) return std::string(text);
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

SlurmScripts slurm_array_scripts(const SweepSpec& spec, std::size_t points, const SlurmArrayOptions& o) {
  const std::string n = std::to_string(o.shards);
  if (o.shards == 0) throw ConfigError("--shards 0", "", "expected at least 1 shard");
  if (points == 0) throw ConfigError(spec.origin, "/axes", "the spec has no points");
  if (o.shards > points) {
    throw ConfigError("--shards " + n, "", "more shards than the spec's " + std::to_string(points) +
                                               " points (shard i runs the points whose index % n == i); at most " +
                                               std::to_string(points));
  }
  if (o.jobs == 0) throw ConfigError("--jobs 0", "", "expected at least 1 point at a time");
  check_absolute(o.executable, "ess-sim binary");
  check_absolute(o.spec_path, "sweep spec");
  check_absolute(o.out_dir, "output directory");
  check_absolute(o.scripts_dir, "scripts directory");
  if (o.scripts_dir.string().find('\\') != std::string::npos) {
    // sbatch takes a backslash in a #SBATCH line as an escape even inside quotes, and Slurm turns
    // off the %-patterns of an --output name that holds one.
    throw ConfigError("--slurm-array " + o.scripts_dir.string(), "",
                      "the scripts directory holds a backslash, which the logs' #SBATCH --output cannot carry");
  }
  if (!o.partition.empty() && !std::regex_match(o.partition, std::regex("[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*"))) {
    throw ConfigError("--partition " + o.partition, "", "expected a partition name or a comma-separated list");
  }
  // Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
  // days-hours:minutes, days-hours:minutes:seconds (sbatch(1), --time).
  if (!o.time_limit.empty() &&
      !std::regex_match(o.time_limit, std::regex("[0-9]+(:[0-9]{1,2}){0,2}|[0-9]+-[0-9]{1,2}(:[0-9]{1,2}){0,2}"))) {
    throw ConfigError("--time " + o.time_limit, "",
                      "expected a Slurm time limit: HH:MM:SS, D-HH:MM:SS, MM:SS or minutes (e.g. 02:00:00)");
  }
  for (const auto& option : o.sbatch_options) check_sbatch_option(option);

  const std::string exe = shell_quote(o.executable);
  const std::string out = shell_quote(o.out_dir.string());
  const std::string logs_dir = (o.scripts_dir / kSlurmLogsDir).string();
  const std::string logs_pattern = pattern_literal(logs_dir);  // %x job name, %A array job, %a task, %j job
  const std::string name = job_name(spec);
  const std::string jobs = std::to_string(o.jobs);
  const std::string about = "# Sweep " + (spec.name.empty() ? o.spec_path.filename().string() : spec.name) +
                            " (spec sha256 " + spec.sha256 + "): " + std::to_string(points) + " points in " + n +
                            " shards.\n";
  const std::string header = std::string("#!/bin/bash\n# Written by ess-sim ") + ESS_SIM_VERSION +
                             " (ess-sim sweep --slurm-array).\n";

  SlurmScripts s;
  s.array = header + about +
            "# Array task i runs the points whose index % " + n + " == i into OUT/shard-i. With --resume a requeued\n"
            "# or resubmitted task keeps its shard's finished points and runs only the rest.\n"
            "# Submit with submit.sh, which also queues the merge.\n"
            "#SBATCH --job-name=" + name + "\n"
            "#SBATCH --array=0-" + std::to_string(o.shards - 1) + "\n"
            "#SBATCH --ntasks=1\n"
            "#SBATCH --cpus-per-task=" + jobs + "\n"
            "#SBATCH --output=" + shell_quote(logs_pattern + "/%x-%A_%a.out") + "\n"
            "#SBATCH --open-mode=append\n" +
            shared_directives(o) +
            "set -euo pipefail\n"
            "if [[ -z ${SLURM_ARRAY_TASK_ID:-} ]]; then\n"
            "  echo \"array.sbatch: SLURM_ARRAY_TASK_ID is not set; submit this script with sbatch (submit.sh)\" >&2\n"
            "  exit 2\n"
            "fi\n"
            "exec " + exe + " sweep " + shell_quote(o.spec_path.string()) + " -o " + out + "/" + kSlurmShardPrefix +
            "\"$SLURM_ARRAY_TASK_ID\" --shard \"$SLURM_ARRAY_TASK_ID\"/" + n + " --resume --jobs " + jobs +
            (o.point_timeout.empty() ? std::string() : " --timeout " + shell_quote(o.point_timeout)) + "\n";

  s.merge = header + about +
            "# Joins the shards' ledgers into OUT/results.jsonl and OUT/results.csv, what the unsharded sweep\n"
            "# writes. submit.sh queues it to start once every array task has succeeded.\n"
            "#SBATCH --job-name=" + name + "-merge\n"
            "#SBATCH --ntasks=1\n"
            "#SBATCH --cpus-per-task=1\n"
            "#SBATCH --output=" + shell_quote(logs_pattern + "/%x-%j.out") + "\n"
            "#SBATCH --open-mode=append\n" +
            shared_directives(o) +
            "set -euo pipefail\n"
            "out=" + out + "\n"
            "shards=()\n"
            "for ((i = 0; i < " + n + "; i++)); do shards+=(\"$out/" + kSlurmShardPrefix + "$i\"); done\n"
            "exec " + exe + " sweep-merge \"${shards[@]}\" -o \"$out\"\n";

  const std::string scripts = shell_quote(o.scripts_dir.string());
  s.submit = header + about +
             "# Submits the array (one task per shard), then the merge with --dependency=afterok on it, and\n"
             "# prints both job ids. Safe to run again after a partial failure: each task resumes its shard\n"
             "# (finished points are kept), and the last submission's merge, which a failed task leaves\n"
             "# waiting forever, is cancelled. Refused while the last submission's array is still queued or\n"
             "# running: two tasks of one shard must not write one ledger.\n"
             "set -euo pipefail\n"
             "if (($# > 0)); then\n"
             "  echo \"usage: submit.sh (no arguments; regenerate with ess-sim sweep --slurm-array to change options)\" >&2\n"
             "  exit 2\n"
             "fi\n"
             "scripts=" + scripts + "\n"
             "submitted=\"$scripts/" + kSlurmSubmittedFile + "\"\n"
             "if [[ -f $submitted ]]; then\n"
             "  old_array='' old_merge=''\n"
             "  read -r old_array old_merge < \"$submitted\" || true\n"
             "  if [[ -n $old_array && -n $(squeue --noheader --jobs=\"$old_array\" --format=%i 2>/dev/null) ]]; then\n"
             "    echo \"submit.sh: array job $old_array of the last submission is still queued or running;\" \\\n"
             "         \"wait for it or scancel $old_array, then run submit.sh again\" >&2\n"
             "    exit 1\n"
             "  fi\n"
             "  if [[ -n $old_merge ]]; then scancel \"$old_merge\" 2>/dev/null || true; fi\n"
             "fi\n"
             "array_id=$(sbatch --parsable \"$scripts/" + kSlurmArrayScript + "\")\n"
             "array_id=${array_id%%;*}  # --parsable prints id;cluster on a multi-cluster setup\n"
             "echo \"$array_id\" > \"$submitted\"\n"
             "merge_id=$(sbatch --parsable --dependency=afterok:\"$array_id\" \"$scripts/" + kSlurmMergeScript + "\")\n"
             "merge_id=${merge_id%%;*}\n"
             "echo \"$array_id $merge_id\" > \"$submitted\"\n"
             "echo \"array job $array_id: " + n + " tasks, logs in \"" + shell_quote(logs_dir + "/") + "\n"
             "echo \"merge job $merge_id: starts when every task has succeeded, writes \"" +
             shell_quote((o.out_dir / kLedgerCsvName).string()) + "\n";
  return s;
}

SlurmArrayWritten write_slurm_array(const SweepSpec& spec, const SlurmArrayOptions& options) {
  SlurmArrayOptions o = options;
  auto absolute = [](const std::filesystem::path& p) { return std::filesystem::absolute(p).lexically_normal(); };
  o.spec_path = absolute(o.spec_path);
  o.out_dir = absolute(o.out_dir);
  o.scripts_dir = absolute(o.scripts_dir);
  if (!o.out_dir.has_filename()) o.out_dir = o.out_dir.parent_path();  // "/a/b/" -> "/a/b"
  if (!o.scripts_dir.has_filename()) o.scripts_dir = o.scripts_dir.parent_path();
  if (::access(o.executable.c_str(), X_OK) != 0) {
    throw ConfigError(o.executable, "", "the ess-sim binary for the jobs is not an executable file");
  }

  // What the tasks would fail on, found now rather than on the cluster.
  const std::filesystem::path base_path =
      std::filesystem::path(spec.base).is_absolute() ? std::filesystem::path(spec.base) : spec.base_dir / spec.base;
  try {
    (void)read_text_file(base_path);
  } catch (const ConfigError& e) {
    throw ConfigError(spec.origin, "/base", "cannot read the base scenario: " + e.message());
  }
  const std::size_t points = expand_points(spec).size();
  SlurmScripts scripts = slurm_array_scripts(spec, points, o);

  if (const std::string sha = existing_sweep(o.out_dir).first; !sha.empty() && sha != spec.sha256) {
    throw ConfigError((o.out_dir / kSweepSpecCopyName).string(), "/spec_sha256",
                      "the output directory holds the sweep of another spec (sha256 " + sha + ", this spec " +
                          spec.sha256 + "); choose another output directory");
  }
  for (std::size_t i = 0; i < o.shards; ++i) {
    const auto dir = o.out_dir / (kSlurmShardPrefix + std::to_string(i));
    const auto [sha, shard] = existing_sweep(dir);
    const std::string want = std::to_string(i) + "/" + std::to_string(o.shards);
    if (sha.empty()) continue;
    if (sha != spec.sha256) {
      throw ConfigError((dir / kSweepSpecCopyName).string(), "/spec_sha256",
                        "this shard directory holds the sweep of another spec (sha256 " + sha + ", this spec " +
                            spec.sha256 + "); choose another output directory");
    }
    if (shard != want) {
      throw ConfigError((dir / kSweepSpecCopyName).string(), "/shard",
                        "this shard directory holds shard " + shard + ", not " + want +
                            " (an earlier --shards); choose another output directory or the earlier --shards");
    }
  }

  ensure_directory(o.out_dir);
  ensure_directory(o.scripts_dir / kSlurmLogsDir);
  for (const auto& [file, text] : {std::pair{kSlurmArrayScript, &scripts.array},
                                   std::pair{kSlurmMergeScript, &scripts.merge},
                                   std::pair{kSlurmSubmitScript, &scripts.submit}}) {
    const auto path = o.scripts_dir / file;
    write_file_atomically(path, *text);
    make_executable(path);
  }
  return {o.scripts_dir, o.out_dir, points, o.shards};
}

}  // namespace ess
