// `ess-sim sweep --slurm-array`: the job scripts it writes (array range, CPUs, --resume, the shard
// directories, the merge's dependency on the array), their quoting of paths with spaces and quotes
// (checked by running the scripts under bash with stand-ins for ess-sim, sbatch, squeue and scancel
// that record their arguments), and the option errors. tests/slurm/ submits them to a real Slurm.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/sweep/points.h"
#include "sim/sweep/slurm.h"
#include "sim/sweep/spec.h"
#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"

#ifndef ESS_SIM_BINARY
#error "ESS_SIM_BINARY (the ess-sim binary) must be defined by tests/CMakeLists.txt"
#endif

namespace {

using ess::test::lines_of;

namespace fs = std::filesystem;
using ess::test::read_file;
using ess::test::run_cli;
using ess::test::ScratchDir;

struct Shell {
  int code = -1;
  std::string out;
};

// Runs `command` with /bin/sh, keeping its stdout (stderr too when the command says 2>&1).
Shell sh(const std::string& command) {
  Shell r;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text)) {
    if (l == line) return true;
  }
  return false;
}

void write_executable(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

// A stand-in for ess-sim: prints each argument on its own line.
const std::string kPrintArgs = "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n";

// The start of a stand-in for a Slurm command: appends its name and arguments to `log`.
std::string logging_to(const std::string& log) {
  return "#!/bin/sh\n{ basename \"$0\"; for a in \"$@\"; do printf '  %s\\n' \"$a\"; done; } >> " +
         ess::shell_quote(log) + "\n";
}

// A 6-point spec (3 batches x 2 contexts) at `path`.
fs::path write_spec_at(const fs::path& path, const std::string& name = "six") {
  std::ofstream(path) << R"({"schema": "ess-sim/sweep/v1", "name": ")" << name << R"(", "base": ")" << ESS_SOURCE_DIR
                      << R"(/scenarios/llama2-7b-a100-decode.json", "steps": 1,
    "axes": [{"path": "workload.batch_per_gpu", "values": [1, 2, 4]},
             {"path": "workload.context_length", "values": [512, 1024]}]})";
  return path;
}
fs::path write_spec(const fs::path& dir) { return write_spec_at(dir / "six.json"); }

ess::SlurmArrayOptions options_in(const fs::path& dir) {
  ess::SlurmArrayOptions o;
  o.spec_path = dir / "my spec's.json";
  o.out_dir = dir / "out dir";
  o.scripts_dir = dir / "scripts \"x\"";
  o.executable = (dir / "bin dir" / "ess-sim").string();
  o.shards = 3;
  o.jobs = 4;
  return o;
}

ess::ConfigError scripts_error(const ess::SweepSpec& spec, const ess::SlurmArrayOptions& o) {
  try {
    (void)ess::slurm_array_scripts(spec, 6, o);
  } catch (const ess::ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError");
  throw;
}

}  // namespace

TEST_CASE("slurm array scripts: shell_quote gives one word the shell reads back unchanged", "[slurm]") {
  CHECK(ess::shell_quote("/plain/path-1_2.json") == "/plain/path-1_2.json");
  CHECK(ess::shell_quote("a b") == "'a b'");
  CHECK(ess::shell_quote("it's") == "'it'\\''s'");
  CHECK(ess::shell_quote("") == "''");
  for (const std::string text : {"a b", "it's", "\"x\"", "$HOME `id` \\n", "a*b?[c]", "", "tab\there", "!#;&|<>(){}~"}) {
    INFO(text);
    const auto r = sh("printf '%s' " + ess::shell_quote(text));
    CHECK(r.code == 0);
    CHECK(r.out == text);
  }
}

TEST_CASE("slurm array scripts: one task per shard, its CPUs, --resume, OUT/shard-i, the binary and spec as given",
          "[slurm]") {
  const auto spec = ess::parse_sweep_spec(
      R"({"schema": "ess-sim/sweep/v1", "name": "big/ctx sweep", "base": "s.json",
          "axes": [{"path": "workload.batch_per_gpu", "values": [1, 2, 3, 4, 5, 6]}]})",
      "spec.json", ".");
  auto o = options_in("/data/run 1");
  o.partition = "cpu,long";
  o.time_limit = "1-02:00:00";
  o.sbatch_options = {"--account=proj 7", "--mem=4G"};
  const auto s = ess::slurm_array_scripts(spec, 6, o);
  INFO(s.array);
  CHECK(lines_of(s.array)[0] == "#!/bin/bash");
  CHECK(has_line(s.array, "#SBATCH --array=0-2"));
  CHECK(has_line(s.array, "#SBATCH --cpus-per-task=4"));
  CHECK(has_line(s.array, "#SBATCH --ntasks=1"));
  CHECK(has_line(s.array, "#SBATCH --job-name=ess-big-ctx-sweep"));  // '/' and ' ' are not in a job name
  CHECK(has_line(s.array, "#SBATCH --output='/data/run 1/scripts \"x\"/logs/%x-%A_%a.out'"));
  CHECK(has_line(s.array, "#SBATCH --open-mode=append"));  // a requeued task adds to its log
  CHECK(has_line(s.array, "#SBATCH --partition=cpu,long"));
  CHECK(has_line(s.array, "#SBATCH --time=1-02:00:00"));
  CHECK(has_line(s.array, "#SBATCH --account=proj 7"));  // as given: the user writes sbatch's syntax
  CHECK(has_line(s.array, "#SBATCH --mem=4G"));
  CHECK(has_line(s.array, "exec '/data/run 1/bin dir/ess-sim' sweep '/data/run 1/my spec'\\''s.json' -o "
                          "'/data/run 1/out dir'/shard-\"$SLURM_ARRAY_TASK_ID\" --shard \"$SLURM_ARRAY_TASK_ID\"/3 "
                          "--resume --jobs 4"));
  // Every #SBATCH line comes before the first command (sbatch stops reading them there).
  bool command_seen = false;
  for (const auto& line : lines_of(s.array)) {
    if (line.rfind("#SBATCH", 0) == 0) CHECK_FALSE(command_seen);
    if (!line.empty() && line[0] != '#') command_seen = true;
  }
  // The merge: one CPU, the same partition, time and options, its own log.
  CHECK(has_line(s.merge, "#SBATCH --job-name=ess-big-ctx-sweep-merge"));
  CHECK(has_line(s.merge, "#SBATCH --cpus-per-task=1"));
  CHECK(has_line(s.merge, "#SBATCH --partition=cpu,long"));
  CHECK(has_line(s.merge, "#SBATCH --account=proj 7"));
  CHECK(has_line(s.merge, "#SBATCH --output='/data/run 1/scripts \"x\"/logs/%x-%j.out'"));
  CHECK(s.merge.find("--array") == std::string::npos);
  // submit.sh: the merge depends on the whole array succeeding.
  CHECK(has_line(s.submit, "merge_id=$(sbatch --parsable --dependency=afterok:\"$array_id\" \"$scripts/merge.sbatch\")"));
  CHECK(has_line(s.submit, "array_id=$(sbatch --parsable \"$scripts/array.sbatch\")"));

  SECTION("one shard is an array of one task") {
    o.shards = 1;
    CHECK(has_line(ess::slurm_array_scripts(spec, 6, o).array, "#SBATCH --array=0-0"));
  }
  SECTION("a '%' in the scripts directory is doubled in --output, where a lone one starts a pattern") {
    o.scripts_dir = "/data/100%";
    CHECK(has_line(ess::slurm_array_scripts(spec, 6, o).array, "#SBATCH --output=/data/100%%/logs/%x-%A_%a.out"));
  }
}

TEST_CASE("slurm array scripts: the tasks, the merge and submit.sh run what they say, quoted paths intact",
          "[slurm]") {
  ScratchDir scratch("ess-slurm-scripts");
  const fs::path dir = scratch.path() / "a b's \"dir\"";
  fs::create_directories(dir / "bin dir");
  fs::create_directories(dir / "fake");
  const auto o = options_in(dir);
  write_executable(o.executable, kPrintArgs);
  const std::string log = (dir / "calls.log").string();
  // sbatch: logs its arguments, prints the next job id (41, 42, ...) as --parsable does on a
  // multi-cluster setup ("id;cluster").
  write_executable(dir / "fake" / "sbatch", logging_to(log) +
                                                "n=$(cat \"$(dirname \"$0\")/next\" 2>/dev/null || echo 41)\n"
                                                "echo $((n + 1)) > \"$(dirname \"$0\")/next\"\n"
                                                "echo \"$n;cluster-a\"\n");
  write_executable(dir / "fake" / "scancel", logging_to(log));
  // squeue: lists whatever the file "queued" holds (nothing: no job queued or running).
  write_executable(dir / "fake" / "squeue", "#!/bin/sh\ncat \"$(dirname \"$0\")/queued\" 2>/dev/null\n");
  const std::string path = "PATH=" + ess::shell_quote((dir / "fake").string()) + ":\"$PATH\" ";

  const auto spec = ess::load_sweep_spec(write_spec_at(o.spec_path));
  const auto w = ess::write_slurm_array(spec, o);
  const fs::path scripts = o.scripts_dir;
  CHECK(w.points == 6);
  CHECK(fs::is_directory(scripts / "logs"));
  CHECK(fs::is_directory(o.out_dir));
  for (const char* name : {"array.sbatch", "merge.sbatch", "submit.sh"}) {
    INFO(name);
    CHECK((fs::status(scripts / name).permissions() & fs::perms::owner_exec) != fs::perms::none);
    CHECK(sh("bash -n " + ess::shell_quote((scripts / name).string()) + " 2>&1").out.empty());
  }
  const std::string out = o.out_dir.string();

  SECTION("array task i runs shard i/3 into OUT/shard-i with --resume and --jobs 4") {
    const auto r = sh("SLURM_ARRAY_TASK_ID=2 bash " + ess::shell_quote((scripts / "array.sbatch").string()));
    REQUIRE(r.code == 0);
    CHECK(lines_of(r.out) == std::vector<std::string>{"sweep", o.spec_path.string(), "-o", out + "/shard-2", "--shard",
                                                      "2/3", "--resume", "--jobs", "4"});
    // Run by hand, without the array's task id, it refuses rather than running shard "/3".
    const auto by_hand = sh("env -u SLURM_ARRAY_TASK_ID bash " + ess::shell_quote((scripts / "array.sbatch").string()) + " 2>&1");
    CHECK(by_hand.code == 2);
    CHECK_THAT(by_hand.out, Catch::Contains("SLURM_ARRAY_TASK_ID is not set"));
  }
  SECTION("the merge joins OUT/shard-0..2 into OUT") {
    const auto r = sh("bash " + ess::shell_quote((scripts / "merge.sbatch").string()));
    REQUIRE(r.code == 0);
    CHECK(lines_of(r.out) == std::vector<std::string>{"sweep-merge", out + "/shard-0", out + "/shard-1",
                                                      out + "/shard-2", "-o", out});
  }
  SECTION("submit.sh queues the array, then the merge afterok on it; again after a failure it cancels the stranded merge") {
    const std::string submit = path + ess::shell_quote((scripts / "submit.sh").string()) + " 2>&1";
    const auto first = sh(submit);
    INFO(first.out);
    REQUIRE(first.code == 0);
    CHECK_THAT(first.out, Catch::Contains("array job 41: 3 tasks") && Catch::Contains("merge job 42:") &&
                              Catch::Contains(out + "/results.csv"));
    CHECK(read_file(scripts / "submitted") == "41 42\n");
    CHECK(read_file(log) == "sbatch\n  --parsable\n  " + (scripts / "array.sbatch").string() +
                                "\nsbatch\n  --parsable\n  --dependency=afterok:41\n  " +
                                (scripts / "merge.sbatch").string() + "\n");
    // While the last array is queued or running, a second submission is refused.
    std::ofstream(dir / "fake" / "queued") << "41_2\n";
    const auto busy = sh(submit);
    CHECK(busy.code == 1);
    CHECK_THAT(busy.out, Catch::Contains("array job 41 of the last submission is still queued or running"));
    // Once it is gone (a task failed, so merge 42 waits forever), the new submission cancels 42.
    fs::remove(dir / "fake" / "queued");
    fs::remove(log);
    const auto again = sh(submit);
    REQUIRE(again.code == 0);
    CHECK(read_file(scripts / "submitted") == "43 44\n");
    CHECK(read_file(log) == "scancel\n  42\nsbatch\n  --parsable\n  " + (scripts / "array.sbatch").string() +
                                "\nsbatch\n  --parsable\n  --dependency=afterok:43\n  " +
                                (scripts / "merge.sbatch").string() + "\n");
    CHECK(sh(submit + " extra").code == 2);  // no arguments
  }
}

TEST_CASE("slurm array: ess-sim sweep --slurm-array writes the scripts, runs nothing and says how to submit", "[slurm]") {
  ScratchDir dir("ess-slurm-cli");
  const auto spec = write_spec(dir.path());
  const auto out = dir.path() / "out";
  const auto scripts = dir.path() / "sub" / ".." / "scripts";
  const auto r = run_cli({"sweep", spec.string(), "-o", out.string(), "--slurm-array", scripts.string(), "--shards", "4",
                          "--executable", ESS_SIM_BINARY});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto clean = dir.path() / "scripts";  // made absolute and normal
  CHECK_THAT(r.out, Catch::Contains("6 points in 4 array tasks (1 to 2 points each, 1 CPU per task)") &&
                        Catch::Contains("submit: " + ess::shell_quote((clean / "submit.sh").string())));
  CHECK_FALSE(fs::exists(out / "results.jsonl"));  // nothing ran
  const std::string array = read_file(clean / "array.sbatch");
  CHECK(has_line(array, "#SBATCH --array=0-3"));
  CHECK(has_line(array, "#SBATCH --cpus-per-task=1"));  // --jobs defaults to 1 on a cluster
  CHECK_THAT(array, Catch::Contains("exec " + ess::shell_quote(fs::path(ESS_SIM_BINARY).lexically_normal().string()) +
                                    " sweep " + spec.string()));

  SECTION("without --executable the jobs run this binary by its real path, not /proc/self/exe") {
    REQUIRE(run_cli({"sweep", spec.string(), "-o", out.string(), "--slurm-array", clean.string(), "--shards", "2"}).code == 0);
    const std::string again = read_file(clean / "array.sbatch");
    CHECK(again.find("/proc/self") == std::string::npos);
    CHECK_THAT(again, Catch::Contains("exec " + ess::shell_quote(fs::read_symlink("/proc/self/exe").string()) + " sweep"));
  }
  SECTION("an OUT holding another spec's sweep, or shards of another --shards, is refused now") {
    fs::create_directories(out / "shard-0");
    std::ofstream(out / "shard-0" / "spec.json")
        << R"({"schema": "ess-sim/sweep-dir/v1", "spec_sha256": ")" << ess::load_sweep_spec(spec).sha256
        << R"(", "shard": "0/4", "spec": {}})";
    const auto other_count = run_cli({"sweep", spec.string(), "-o", out.string(), "--slurm-array", clean.string(),
                                      "--shards", "3", "--executable", ESS_SIM_BINARY});
    CHECK(other_count.code == 2);
    CHECK_THAT(other_count.err, Catch::Contains("holds shard 0/4, not 0/3"));
    std::ofstream(out / "spec.json") << R"({"schema": "ess-sim/sweep-dir/v1", "spec_sha256": "abc", "shard": "0/1", "spec": {}})";
    const auto other_spec = run_cli({"sweep", spec.string(), "-o", out.string(), "--slurm-array", clean.string(),
                                     "--shards", "4", "--executable", ESS_SIM_BINARY});
    CHECK(other_spec.code == 2);
    CHECK_THAT(other_spec.err, Catch::Contains("holds the sweep of another spec (sha256 abc"));
  }
}

TEST_CASE("slurm array: options are checked before anything is written", "[slurm]") {
  ScratchDir dir("ess-slurm-errors");
  const auto spec = write_spec(dir.path());
  const std::string out = (dir.path() / "out").string();
  const std::string scripts = (dir.path() / "scripts").string();
  auto sweep = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep", spec.string(), "-o", out, "--executable", ESS_SIM_BINARY};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--shards", "2"}, "--shards: only with --slurm-array"},
      {{"--partition", "cpu"}, "--partition: only with --slurm-array"},
      {{"--time", "01:00:00"}, "--time: only with --slurm-array"},
      {{"--sbatch-option=--mem=1G"}, "--sbatch-option: only with --slurm-array"},
      {{"--slurm-array", scripts}, "expected --shards N"},
      {{"--slurm-array", scripts, "--shards", "0"}, "--shards"},  // CLI11's range check
      {{"--slurm-array", scripts, "--shards", "7"}, "more shards than the spec's 6 points"},
      {{"--slurm-array", scripts, "--shards", "2", "--shard", "0/2"}, "--shard: not with --slurm-array"},
      {{"--slurm-array", scripts, "--shards", "2", "--resume"}, "--resume: not with --slurm-array"},
      {{"--slurm-array", scripts, "--shards", "2", "--time", "2h"}, "expected a Slurm time limit"},
      {{"--slurm-array", scripts, "--shards", "2", "--time", "1:2:3:4"}, "expected a Slurm time limit"},
      {{"--slurm-array", scripts, "--shards", "2", "--partition", "a b"}, "expected a partition name"},
      {{"--slurm-array", scripts, "--shards", "2", "--sbatch-option=--array=0-9"}, "set --array themselves"},
      {{"--slurm-array", scripts, "--shards", "2", "--sbatch-option=-o x.log"}, "set --output themselves"},
      {{"--slurm-array", scripts, "--shards", "2", "--sbatch-option=-c4"}, "use --jobs"},
      {{"--slurm-array", scripts, "--shards", "2", "--sbatch-option=mem=1G"}, "expected an sbatch option"},
      {{"--slurm-array", "", "--shards", "2"}, "expected the directory for the scripts"},
  };
  for (const auto& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    INFO(joined);
    const auto r = sweep(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
  CHECK_FALSE(fs::exists(scripts));
  // Accepted forms of --time (sbatch(1)): minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
  for (const std::string t : {"30", "30:00", "02:00:00", "2-12", "2-12:30", "2-12:30:00"}) {
    INFO(t);
    CHECK(sweep({"--slurm-array", scripts, "--shards", "2", "--time", t}).code == 0);
  }
  SECTION("a bad spec or an unreadable base scenario fails now, not on the cluster") {
    const auto bad = dir.path() / "bad.json";
    std::ofstream(bad) << R"({"schema": "ess-sim/sweep/v1", "base": "s.json", "stpes": 2, "axes": [{"path": "a", "values": [1]}]})";
    const auto r = run_cli({"sweep", bad.string(), "-o", out, "--slurm-array", scripts, "--shards", "1"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("/stpes") && Catch::Contains("did you mean \"steps\""));
    const auto no_base = dir.path() / "no-base.json";
    std::ofstream(no_base) << R"({"schema": "ess-sim/sweep/v1", "base": "missing.json", "axes": [{"path": "a", "values": [1]}]})";
    const auto nb = run_cli({"sweep", no_base.string(), "-o", out, "--slurm-array", scripts, "--shards", "1"});
    CHECK(nb.code == 2);
    CHECK_THAT(nb.err, Catch::Contains("at /base: cannot read the base scenario"));
  }
  SECTION("the pure generator wants absolute paths and no backslash in the scripts directory") {
    const auto s = ess::load_sweep_spec(spec);
    auto o = options_in("/abs");
    o.out_dir = "relative/out";
    CHECK_THAT(scripts_error(s, o).what(), Catch::Contains("expected an absolute path for the output directory"));
    o = options_in("/abs");
    o.scripts_dir = "/abs/back\\slash";
    CHECK_THAT(scripts_error(s, o).what(), Catch::Contains("holds a backslash"));
    o = options_in("/abs");
    o.spec_path = "/abs/line\nbreak.json";
    CHECK_THAT(scripts_error(s, o).what(), Catch::Contains("line break"));
  }
}
