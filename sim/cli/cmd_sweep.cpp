// `ess-sim sweep SPEC -o DIR [--jobs N] [--shard i/n] [--resume]`: run every point of a sweep spec
// as its own `ess-sim run` process into a ledger; `ess-sim sweep SPEC -o OUT --slurm-array SCRIPTS
// --shards N`: write the Slurm job array that runs it instead (sim/sweep/slurm.h);
// `ess-sim sweep-merge DIR... -o OUT`: join shards.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/io/atomic_file.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/points.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/slurm.h"
#include "sim/sweep/spec.h"

namespace ess {

namespace {

// "i/n" with 0 <= i < n.
void parse_shard(const std::string& text, std::size_t& index, std::size_t& count) {
  const auto slash = text.find('/');
  auto number = [&](const std::string& s) -> std::size_t {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw ConfigError("--shard " + text, "", "expected i/n with 0 <= i < n, e.g. 0/4");
    }
    return std::stoul(s);
  };
  if (slash == std::string::npos) throw ConfigError("--shard " + text, "", "expected i/n with 0 <= i < n, e.g. 0/4");
  index = number(text.substr(0, slash));
  count = number(text.substr(slash + 1));
  if (count == 0 || index >= count) throw ConfigError("--shard " + text, "", "expected i/n with 0 <= i < n, e.g. 0/4");
}

// `--slurm-array`: the scripts, and what to do with them.
int write_slurm(SlurmArrayOptions slurm, std::ostream& out) {
  const SweepSpec spec = load_sweep_spec(slurm.spec_path);
  // The jobs run this very binary, by the path it has now (not the /proc link, which names
  // whichever process reads it).
  if (slurm.executable == "/proc/self/exe") {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw OutputError("/proc/self/exe", "cannot find the ess-sim binary's path: " + ec.message());
    slurm.executable = self.string();
  } else {
    slurm.executable = std::filesystem::absolute(slurm.executable).lexically_normal().string();
  }
  const auto w = write_slurm_array(spec, slurm);
  const std::size_t fewest = w.points / w.shards;
  const std::size_t most = fewest + (w.points % w.shards != 0 ? 1 : 0);
  const std::string each = fewest == most ? std::to_string(most) : std::to_string(fewest) + " to " + std::to_string(most);
  out << "slurm array for sweep " << (spec.name.empty() ? slurm.spec_path.string() : spec.name) << ": " << w.points
      << " points in " << w.shards << " array tasks (" << each << " points each, " << slurm.jobs << " CPU" << (slurm.jobs == 1 ? "" : "s") << " per task)\n"
      << "  wrote " << (w.scripts_dir / kSlurmArrayScript).string() << ", " << kSlurmMergeScript << " and "
      << kSlurmSubmitScript << " (job output in " << (w.scripts_dir / kSlurmLogsDir).string() << "/)\n"
      << "  task i writes " << (w.out_dir / kSlurmShardPrefix).string() << "i/, the merge "
      << (w.out_dir / kLedgerName).string() << " and " << kLedgerCsvName << "\n"
      << "  submit: " << shell_quote((w.scripts_dir / kSlurmSubmitScript).string()) << "\n";
  return 0;
}

struct SweepOptions {
  std::string spec;
  std::string out_dir;
  std::size_t jobs = 0;
  std::string shard = "0/1";
  bool resume = false;
  std::string timeout;
  std::string executable = "/proc/self/exe";
  // --slurm-array
  std::string slurm_dir;
  std::size_t shards = 0;
  std::string partition;
  std::string time_limit;
  std::vector<std::string> sbatch_options;
  bool given_slurm = false, given_shards = false, given_shard = false, given_resume = false;
  std::string given_slurm_only;  // the first of --partition, --time, --sbatch-option given
};

// --slurm-array SCRIPTS: the job array's scripts instead of a run.
int write_slurm_array(const SweepOptions& o, std::ostream& out) {
  if (o.slurm_dir.empty()) throw ConfigError("--slurm-array", "", "expected the directory for the scripts");
  if (!o.given_shards) throw ConfigError("--slurm-array", "", "expected --shards N, the number of array tasks");
  if (o.given_shard) {
    throw ConfigError("--shard", "", "not with --slurm-array: array task i runs shard i/N itself (--shards N)");
  }
  if (o.given_resume) {
    throw ConfigError("--resume", "", "not with --slurm-array, which runs nothing: every array task resumes "
                                      "its shard already");
  }
  SlurmArrayOptions slurm;
  slurm.spec_path = o.spec;
  slurm.out_dir = o.out_dir;
  slurm.scripts_dir = o.slurm_dir;
  slurm.executable = o.executable;
  slurm.shards = o.shards;
  slurm.jobs = o.jobs > 0 ? o.jobs : 1;
  slurm.partition = o.partition;
  slurm.time_limit = o.time_limit;
  slurm.sbatch_options = o.sbatch_options;
  slurm.point_timeout = o.timeout;
  return write_slurm(slurm, out);
}

int run_sweep_command(const SweepOptions& o, std::ostream& out) {
  const double timeout_s = o.timeout.empty() ? 0.0 : positive_duration(o.timeout, "--timeout", "90s or 600s");
  if (o.given_slurm) return write_slurm_array(o, out);
  if (o.given_shards || !o.given_slurm_only.empty()) {
    throw ConfigError(o.given_shards ? "--shards" : o.given_slurm_only, "",
                      "only with --slurm-array SCRIPTS (a Slurm job array)");
  }

  SweepRunOptions options;
  parse_shard(o.shard, options.shard_index, options.shard_count);
  const SweepSpec spec = load_sweep_spec(o.spec);
  options.out_dir = o.out_dir;
  options.jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  options.resume = o.resume;
  options.timeout_s = timeout_s;
  options.executable = o.executable;
  options.progress = &std::cerr;
  options.progress_is_terminal = ::isatty(STDERR_FILENO) == 1;
  const auto s = run_sweep(spec, options);
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f", s.wall_s);
  out << "sweep " << (spec.name.empty() ? o.spec : spec.name) << ": " << s.points << " points";
  if (options.shard_count > 1) out << " in shard " << o.shard;
  out << " (" << s.kept << " kept from the ledger, " << s.ran << " run) in " << wall << " s\n"
      << "  ok " << s.ok << ", invalid " << s.invalid << ", out_of_memory " << s.out_of_memory
      << ", resource_limit " << s.resource_limit << ", failed " << s.failed << "\n"
      << "  wrote " << o.out_dir << "/" << kLedgerName << " and " << kLedgerCsvName << "\n";
  // Exit 0 when every point has an answer; failed points (crashes) are worth a non-zero exit.
  return s.failed > 0 ? 1 : 0;
}

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out_dir;
  bool allow_missing = false;
};

void add_sweep_merge_command(CLI::App& app, CommandAction& action) {
  auto m = std::make_shared<MergeOptions>();
  auto* merge = app.add_subcommand("sweep-merge", "Join the ledgers of sweep shards into the ledger and CSV the "
                                                  "unsharded sweep writes");
  merge->add_option("DIR", m->dirs, "Shard output directories (ess-sim sweep -o DIR --shard i/n)")->required();
  merge->add_option("-o,--output", m->out_dir, "Directory for the merged spec.json, results.jsonl and results.csv")
      ->required();
  merge->add_flag("--allow-missing", m->allow_missing, "Write the merge even when some points are in no ledger");
  merge->callback([m, &action] {
    action = [m](std::ostream& out) {
      std::vector<std::filesystem::path> dirs(m->dirs.begin(), m->dirs.end());
      const auto n = merge_sweeps(dirs, m->out_dir, m->allow_missing);
      out << "merged " << dirs.size() << " ledgers: " << n << " points into " << m->out_dir << "/" << kLedgerName
          << " and " << kLedgerCsvName << "\n";
      return 0;
    };
  });
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "Run every point of a sweep spec (one ess-sim run process each) into "
                                          "DIR/results.jsonl and DIR/results.csv");
  cmd->add_option("SPEC", o->spec, "Sweep spec JSON file (scenarios/README.md, Sweeps)")->required();
  cmd->add_option("-o,--output", o->out_dir, "Directory for spec.json, results.jsonl and results.csv")->required();
  cmd->add_option("--jobs", o->jobs, "Points run at once (default: the hardware's cores; with --slurm-array: 1, "
                                     "and each task's CPUs)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  auto* shard = cmd->add_option("--shard", o->shard, "Run only the points whose index % n == i (i/n, default 0/1)");
  auto* resume =
      cmd->add_flag("--resume", o->resume, "Continue DIR's ledger: keep ok and invalid points, re-run the rest");
  // The binary each point runs; tests (whose own executable is the test program) point it at ess-sim.
  cmd->add_option("--timeout", o->timeout, "Kill a point that runs longer (a duration: 90s, 600s); it is recorded "
                                          "as resource_limit with reason timeout and re-run by --resume");
  cmd->add_option("--executable", o->executable, "")->group("");
  const char* slurm_group = "Slurm (write a job array instead of running)";
  auto* slurm_dir = cmd->add_option("--slurm-array", o->slurm_dir,
                                    "Run nothing: write SCRIPTS/array.sbatch (one task per shard, into OUT/shard-i, "
                                    "with --resume), merge.sbatch (into OUT) and submit.sh")
                        ->group(slurm_group);
  auto* shards = cmd->add_option("--shards", o->shards, "Array tasks, one shard each (with --slurm-array)")
                     ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
                     ->group(slurm_group);
  auto* partition = cmd->add_option("--partition", o->partition, "sbatch --partition of the jobs")->group(slurm_group);
  auto* time_limit =
      cmd->add_option("--time", o->time_limit, "sbatch --time of each job (HH:MM:SS, D-HH:MM:SS)")->group(slurm_group);
  auto* sbatch_option = cmd->add_option("--sbatch-option", o->sbatch_options,
                                        "An #SBATCH line for both jobs, e.g. --sbatch-option=--account=NAME "
                                        "(repeatable; give it with '=')")
                            ->expected(1)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                            ->group(slurm_group);
  cmd->callback([o, &action, slurm_dir, shards, partition, time_limit, sbatch_option, shard, resume] {
    // Which options were given, for the checks the action makes (a ConfigError there is exit 2).
    o->given_slurm = slurm_dir->count() > 0;
    o->given_shards = shards->count() > 0;
    o->given_shard = shard->count() > 0;
    o->given_resume = resume->count() > 0;
    for (const auto* option : {partition, time_limit, sbatch_option}) {
      if (option->count() > 0 && o->given_slurm_only.empty()) o->given_slurm_only = option->get_name();
    }
    action = [o](std::ostream& out) { return run_sweep_command(*o, out); };
  });
  add_sweep_merge_command(app, action);
}

}  // namespace ess
