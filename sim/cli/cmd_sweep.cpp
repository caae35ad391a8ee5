// `ess-sim sweep SPEC -o DIR [--jobs N] [--shard i/n] [--resume]`: run every point of a sweep spec
// as its own `ess-sim run` process into a ledger; `ess-sim sweep-merge DIR... -o OUT`: join shards.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/points.h"
#include "sim/sweep/runner.h"
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

}  // namespace

void add_sweep_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string spec;
    std::string out_dir;
    std::size_t jobs = 0;
    std::string shard = "0/1";
    bool resume = false;
    std::string executable = "/proc/self/exe";
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("sweep", "Run every point of a sweep spec (one ess-sim run process each) into "
                                          "DIR/results.jsonl and DIR/results.csv");
  cmd->add_option("SPEC", o->spec, "Sweep spec JSON file (scenarios/README.md, Sweeps)")->required();
  cmd->add_option("-o,--output", o->out_dir, "Directory for spec.json, results.jsonl and results.csv")->required();
  cmd->add_option("--jobs", o->jobs, "Points run at once (default: the hardware's cores)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  cmd->add_option("--shard", o->shard, "Run only the points whose index % n == i (i/n, default 0/1)");
  cmd->add_flag("--resume", o->resume, "Continue DIR's ledger: keep ok and invalid points, re-run the rest");
  // The binary each point runs; tests (whose own executable is the test program) point it at ess-sim.
  cmd->add_option("--executable", o->executable, "")->group("");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      SweepRunOptions options;
      parse_shard(o->shard, options.shard_index, options.shard_count);
      const SweepSpec spec = load_sweep_spec(o->spec);
      options.out_dir = o->out_dir;
      options.jobs = o->jobs > 0 ? o->jobs : std::max(1u, std::thread::hardware_concurrency());
      options.resume = o->resume;
      options.executable = o->executable;
      options.progress = &std::cerr;
      options.progress_is_terminal = ::isatty(STDERR_FILENO) == 1;
      const auto s = run_sweep(spec, options);
      char wall[32];
      std::snprintf(wall, sizeof wall, "%.1f", s.wall_s);
      out << "sweep " << (spec.name.empty() ? o->spec : spec.name) << ": " << s.points << " points";
      if (options.shard_count > 1) out << " in shard " << o->shard;
      out << " (" << s.kept << " kept from the ledger, " << s.ran << " run) in " << wall << " s\n"
          << "  ok " << s.ok << ", invalid " << s.invalid << ", out_of_memory " << s.out_of_memory
          << ", resource_limit " << s.resource_limit << ", failed " << s.failed << "\n"
          << "  wrote " << o->out_dir << "/" << kLedgerName << " and " << kLedgerCsvName << "\n";
      // Exit 0 when every point has an answer; failed points (crashes) are worth a non-zero exit.
      return s.failed > 0 ? 1 : 0;
    };
  });

  struct MergeOptions {
    std::vector<std::string> dirs;
    std::string out_dir;
    bool allow_missing = false;
  };
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

}  // namespace ess
