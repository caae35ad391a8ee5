#include "sim/sweep/runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"
#include "sim/io/atomic_file.h"
#include "sim/io/child_process.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/points.h"

namespace ess {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_and_remove(const std::filesystem::path& path) {
  std::string text;
  (void)read_whole_file(path, text);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return text;
}

// A point's child process.
struct Running {
  SweepPoint point;
  std::string sha256;
  Clock::time_point start;
  std::filesystem::path out_file, err_file;
  bool timed_out = false;  // killed by --timeout
};

class Progress {
 public:
  Progress(const SweepRunOptions& o, std::size_t total) : o_(o), total_(total), start_(Clock::now()) {}
  void finished(const SweepPoint& p, const PointOutcome& outcome) {
    ++done_;
    if (o_.progress == nullptr) return;
    char what[64];
    if (outcome.status == "ok") {
      // A decode point's mean step; a serving point's (no "summary") TTFT p99.
      const nlohmann::ordered_json::json_pointer mean("/summary/step_time_s/mean");
      const nlohmann::ordered_json::json_pointer ttft("/serving/ttft_s/p99");
      if (outcome.results.contains(mean) && outcome.results.at(mean).is_number()) {
        std::snprintf(what, sizeof what, "%.1f ms", outcome.results.at(mean).get<double>() * 1e3);
      } else if (outcome.results.contains(ttft) && outcome.results.at(ttft).is_number()) {
        std::snprintf(what, sizeof what, "TTFT p99 %.2f s", outcome.results.at(ttft).get<double>());
      } else {
        std::snprintf(what, sizeof what, "ok");
      }
    } else {
      std::snprintf(what, sizeof what, "%s", outcome.reason_code.c_str());
    }
    const double elapsed = seconds_since(start_);
    const double eta = elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_);
    const std::string line = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " + outcome.status +
                             "  " + p.label() + "  " + what + "  (ETA " + rounded_duration(eta) + ")";
    if (o_.progress_is_terminal) {
      *o_.progress << "\r" << line << "\x1b[K" << (done_ == total_ ? "\n" : "") << std::flush;
    } else {
      *o_.progress << line << "\n" << std::flush;
    }
  }

 private:
  const SweepRunOptions& o_;
  std::size_t total_;
  std::size_t done_ = 0;
  Clock::time_point start_;
};

// The first of the spec's constraints whose `when` the point matches, or null.
const SweepConstraint* matching_constraint(const SweepSpec& spec, const SweepPoint& p) {
  for (const auto& c : spec.constraints) {
    bool all = true;
    for (const auto& clause : c.when) {  // not a structured binding: clang 14 cannot capture one
      const auto it = std::find_if(p.axes.begin(), p.axes.end(), [&](const auto& a) { return a.first == clause.first; });
      all = all && it != p.axes.end() &&
            std::find(clause.second.begin(), clause.second.end(), it->second) != clause.second.end();
    }
    if (all) return &c;
  }
  return nullptr;
}

// Starts `executable ARGS` in `cwd`, stdout and stderr to files.
pid_t spawn(const std::string& executable, const std::vector<std::string>& args, const std::filesystem::path& cwd,
            const std::filesystem::path& out_file, const std::filesystem::path& err_file) {
  return start_child(executable, args, cwd, out_file, err_file, "error: cannot execute the ess-sim binary");
}

// Reads DIR/spec.json; empty when absent.
nlohmann::json read_spec_copy(const std::filesystem::path& dir) {
  const auto path = dir / kSweepSpecCopyName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  nlohmann::json j = read_json_file(path);
  if (!j.is_object() || j.value("schema", std::string()) != kSweepDirSchema || !j.contains("spec_sha256") ||
      !j["spec_sha256"].is_string() || !j.contains("spec")) {
    throw ConfigError(path.string(), "", "not a sweep directory's spec.json (expected schema \"" +
                                             std::string(kSweepDirSchema) + "\", spec_sha256 and spec)");
  }
  return j;
}

// The output directory made ready: a spec copy of another spec or shard is refused, an existing
// ledger without --resume too; the spec copy written. Returns the ledger found there.
LedgerContent prepare_out_dir(const SweepSpec& spec, const SweepRunOptions& o, const std::filesystem::path& ledger_path) {
  ensure_directory(o.out_dir);
  const std::string copy = sweep_spec_copy(spec, o.shard_index, o.shard_count);
  if (const auto existing = read_spec_copy(o.out_dir); !existing.is_null()) {
    if (existing["spec_sha256"] != spec.sha256) {
      throw ConfigError((o.out_dir / kSweepSpecCopyName).string(), "/spec_sha256",
                        "this directory holds the sweep of another spec (sha256 " +
                            existing["spec_sha256"].get<std::string>() + ", this spec " + spec.sha256 +
                            "); choose another output directory");
    }
    if (existing.value("shard", std::string()) != nlohmann::json::parse(copy)["shard"].get<std::string>()) {
      throw ConfigError((o.out_dir / kSweepSpecCopyName).string(), "/shard",
                        "this directory holds shard " + existing.value("shard", std::string()) + " of the sweep, not " +
                            std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count));
    }
  }
  LedgerContent ledger = read_ledger(ledger_path);
  if (!o.resume && (!ledger.records.empty() || ledger.torn_tail)) {
    throw ConfigError(ledger_path.string(), "", "a sweep ledger is already here; pass --resume to continue it, or "
                                                "choose another output directory");
  }
  write_file_atomically(o.out_dir / kSweepSpecCopyName, copy);
  return ledger;
}

// Resume: keeps the last ok or invalid record of each point of this shard, drops the rest (failed
// points are re-run, a torn last line is cut), and rewrites the ledger with what is kept.
std::map<std::size_t, nlohmann::ordered_json> keep_finished(const LedgerContent& ledger, std::size_t points,
                                                            const SweepRunOptions& o,
                                                            const std::filesystem::path& ledger_path) {
  std::map<std::size_t, nlohmann::ordered_json> kept;
  for (const auto& r : ledger.records) {
    const auto point = r["point"].get<std::size_t>();
    const auto status = r["status"].get<std::string>();
    if (point < points && point % o.shard_count == o.shard_index && (status == "ok" || status == "invalid")) {
      kept[point] = r;
    }
  }
  if (o.resume && (ledger.torn_tail || kept.size() != ledger.records.size())) {
    std::string text;
    for (const auto& r : ledger.records) {
      const auto point = r["point"].get<std::size_t>();
      if (kept.contains(point) && kept[point] == r) text += ledger_line(r);
    }
    write_file_atomically(ledger_path, text);
  }
  return kept;
}

// The points still to run, each a child process, up to o.jobs at once, each recorded in the ledger
// as it ends.
class PointRunner {
 public:
  PointRunner(const SweepSpec& spec, const SweepRunOptions& o, std::string base_text, std::filesystem::path base_path,
              const std::filesystem::path& ledger_path, std::size_t todo, SweepRunSummary& summary)
      : spec_(spec),
        o_(o),
        base_text_(std::move(base_text)),
        base_path_(std::move(base_path)),
        work_(o.out_dir / ".points"),
        // Cache-simulation results shared by the points (absolute: the points run in the spec's folder).
        store_(std::filesystem::absolute(o.out_dir) / ".access-store"),
        appender_(ledger_path),
        progress_(o, todo),
        summary_(summary) {
    if (todo > 0) ensure_directory(work_);
  }

  void run(std::deque<const SweepPoint*> todo) {
    const std::size_t jobs = std::max<std::size_t>(1, o_.jobs);
    while (!todo.empty() || !running_.empty()) {
      // Start points until `jobs` run; a point the loader rejects is recorded without a child.
      while (!todo.empty() && running_.size() < jobs) {
        const SweepPoint& p = *todo.front();
        todo.pop_front();
        start(p);
      }
      if (!running_.empty()) reap();
    }
    std::error_code ec;
    std::filesystem::remove(work_, ec);
  }

 private:
  void record(const SweepPoint& p, const PointOutcome& outcome, const std::string& sha, Clock::time_point t0) {
    appender_.append(ledger_line(ledger_record(spec_, p, outcome, sha, seconds_since(t0))));
    progress_.finished(p, outcome);
  }

  void start(const SweepPoint& p) {
    const auto t0 = Clock::now();
    if (const SweepConstraint* c = matching_constraint(spec_, p); c != nullptr) {
      record(p, PointOutcome{"invalid", "constraint", c->reason, {}}, "", t0);
      return;
    }
    const auto sets = p.overrides();
    std::string sha;
    try {
      const Scenario s = load_scenario_text(base_text_, spec_.base, parse_overrides(sets), base_path_.parent_path());
      require_decode_scenario(s, "a sweep");
      sha = sha256_hex(format_resolved(s.resolved));
    } catch (const ConfigError& e) {
      record(p, PointOutcome{"invalid", "invalid_scenario", e.what(), {}}, "", t0);
      return;
    }
    ScenarioChild child;
    child.scenario = spec_.base;
    child.sets = sets;
    child.steps = spec_.steps;
    child.extra_args = {"--access-store", store_.string()};
    const auto args = scenario_child_args(child);
    Running r{p, sha, t0, work_ / ("point-" + std::to_string(p.index) + ".out"),
              work_ / ("point-" + std::to_string(p.index) + ".err")};
    const pid_t pid = spawn(o_.executable, args, spec_.base_dir, r.out_file, r.err_file);
    ++summary_.ran;
    running_.emplace(pid, std::move(r));
  }

  // Waits for a child (with a per-point timeout, polls: a point past it is killed and reaped as a
  // timeout) and records it.
  void reap() {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, o_.timeout_s > 0 ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR) return;
      throw OutputError(o_.out_dir, std::string("waiting for the points: ") + std::strerror(errno));
    }
    if (pid == 0) {
      for (auto& [child, r] : running_) {
        if (!r.timed_out && seconds_since(r.start) > o_.timeout_s) {
          ::kill(child, SIGKILL);
          r.timed_out = true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return;
    }
    const auto it = running_.find(pid);
    if (it == running_.end()) return;  // not one of ours
    Running r = std::move(it->second);
    running_.erase(it);
    const std::string out = read_and_remove(r.out_file);
    const std::string err = read_and_remove(r.err_file);
    PointOutcome outcome = classify_run(WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                        WIFSIGNALED(status) ? WTERMSIG(status) : 0, out, err);
    if (r.timed_out) {
      outcome = PointOutcome{"resource_limit", "timeout",
                             "killed after " + rounded_duration(o_.timeout_s) + " of wall time (sweep --timeout)", {}};
    }
    const std::string sha = outcome.status == "ok" ? outcome.results.value("scenario_sha256", r.sha256) : r.sha256;
    record(r.point, outcome, sha, r.start);
  }

  const SweepSpec& spec_;
  const SweepRunOptions& o_;
  std::string base_text_;
  std::filesystem::path base_path_;
  std::filesystem::path work_;
  std::filesystem::path store_;
  LedgerAppender appender_;
  Progress progress_;
  SweepRunSummary& summary_;
  std::map<pid_t, Running> running_;
};

// The finished ledger, sorted by point, and its CSV view; the counts by status in `summary`.
void finish_ledger(const SweepSpec& spec, const SweepRunOptions& o, const std::filesystem::path& ledger_path,
                   SweepRunSummary& summary) {
  LedgerContent ledger = read_ledger(ledger_path);
  std::map<std::size_t, nlohmann::ordered_json> last;
  for (auto& r : ledger.records) {
    const auto point = r["point"].get<std::size_t>();  // before the move (C++17 evaluates the right side first)
    last[point] = std::move(r);
  }
  std::vector<nlohmann::ordered_json> records;
  for (auto& [point, r] : last) {
    const auto status = r["status"].get<std::string>();
    summary.ok += status == "ok";
    summary.invalid += status == "invalid";
    summary.out_of_memory += status == "out_of_memory";
    summary.resource_limit += status == "resource_limit";
    summary.failed += status == "failed";
    records.push_back(std::move(r));
  }
  write_file_atomically(ledger_path, sorted_ledger_text(records));
  write_file_atomically(o.out_dir / kLedgerCsvName, ledger_csv(spec, records));
}

}  // namespace

SweepRunSummary run_sweep(const SweepSpec& spec, const SweepRunOptions& o) {
  const auto started = Clock::now();
  if (o.shard_count == 0 || o.shard_index >= o.shard_count) {
    throw ConfigError("--shard", "", "expected i/n with 0 <= i < n, got " + std::to_string(o.shard_index) + "/" +
                                         std::to_string(o.shard_count));
  }
  const std::filesystem::path base_path =
      std::filesystem::path(spec.base).is_absolute() ? std::filesystem::path(spec.base) : spec.base_dir / spec.base;
  std::string base_text;
  try {
    base_text = read_text_file(base_path);
  } catch (const ConfigError& e) {
    throw ConfigError(spec.origin, "/base", "cannot read the base scenario: " + e.message());
  }
  const auto ledger_path = o.out_dir / kLedgerName;
  const LedgerContent ledger = prepare_out_dir(spec, o, ledger_path);

  const auto all = expand_points(spec);
  std::vector<const SweepPoint*> mine;
  for (const auto& p : all) {
    if (p.index % o.shard_count == o.shard_index) mine.push_back(&p);
  }
  SweepRunSummary summary;
  summary.points = mine.size();
  const auto kept = keep_finished(ledger, all.size(), o, ledger_path);
  summary.kept = kept.size();
  std::deque<const SweepPoint*> todo;
  for (const auto* p : mine) {
    if (!kept.contains(p->index)) todo.push_back(p);
  }
  PointRunner runner(spec, o, std::move(base_text), base_path, ledger_path, todo.size(), summary);
  runner.run(std::move(todo));
  finish_ledger(spec, o, ledger_path, summary);
  summary.wall_s = seconds_since(started);
  return summary;
}

std::vector<std::string> scenario_child_args(const ScenarioChild& child) {
  std::vector<std::string> args = {"run", child.scenario};
  for (const auto& set : child.sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  if (child.steps > 0) args.insert(args.end(), {"--steps", std::to_string(child.steps)});
  args.push_back("--json");
  args.insert(args.end(), child.extra_args.begin(), child.extra_args.end());
  return args;
}

void run_scenario_children(const std::string& executable, const std::vector<ScenarioChild>& children,
                           std::size_t jobs, const std::filesystem::path& cwd, const std::filesystem::path& work_dir,
                           const std::function<bool(std::size_t, PointOutcome&)>& finished) {
  if (children.empty()) return;
  ensure_directory(work_dir);
  struct Files {
    std::size_t index;
    std::filesystem::path out_file, err_file;
  };
  std::map<pid_t, Files> running;
  std::size_t next = 0;
  bool more = true;  // `finished` has not asked to stop
  // The parent's pid in the names: two commands may share a work folder.
  const std::string stem = "child-" + std::to_string(::getpid()) + "-";
  while ((more && next < children.size()) || !running.empty()) {
    while (more && next < children.size() && running.size() < std::max<std::size_t>(1, jobs)) {
      Files f{next, work_dir / (stem + std::to_string(next) + ".out"), work_dir / (stem + std::to_string(next) + ".err")};
      const pid_t pid = spawn(executable, scenario_child_args(children[next]), cwd, f.out_file, f.err_file);
      running.emplace(pid, std::move(f));
      ++next;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw OutputError(work_dir, std::string("waiting for the runs: ") + std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const Files f = std::move(it->second);
    running.erase(it);
    const std::string out = read_and_remove(f.out_file);
    const std::string err = read_and_remove(f.err_file);
    PointOutcome outcome = classify_run(WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                        WIFSIGNALED(status) ? WTERMSIG(status) : 0, out, err);
    if (!finished(f.index, outcome)) more = false;
  }
}

PointOutcome run_scenario_child(const std::string& executable, const std::string& scenario,
                                const std::vector<std::string>& sets, std::int64_t steps,
                                const std::filesystem::path& cwd, const std::filesystem::path& work_dir) {
  ScenarioChild child;
  child.scenario = scenario;
  child.sets = sets;
  child.steps = steps;
  PointOutcome result;
  run_scenario_children(executable, {child}, 1, cwd, work_dir,
                        [&result](std::size_t, PointOutcome& outcome) {
                          result = std::move(outcome);
                          return true;
                        });
  return result;
}

std::size_t merge_sweeps(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& out_dir,
                         bool allow_missing) {
  if (dirs.empty()) throw ConfigError("sweep-merge", "", "expected at least one sweep directory");
  nlohmann::json first;
  std::map<std::size_t, nlohmann::ordered_json> chosen;
  for (const auto& dir : dirs) {
    const auto copy = read_spec_copy(dir);
    if (copy.is_null()) {
      throw ConfigError(dir.string(), "", "not a sweep directory: no " + std::string(kSweepSpecCopyName));
    }
    if (first.is_null()) {
      first = copy;
    } else if (copy["spec_sha256"] != first["spec_sha256"]) {
      throw ConfigError((dir / kSweepSpecCopyName).string(), "/spec_sha256",
                        "comes from another spec (sha256 " + copy["spec_sha256"].get<std::string>() + ") than " +
                            (dirs.front() / kSweepSpecCopyName).string() + " (" +
                            first["spec_sha256"].get<std::string>() + ")");
    }
    for (auto& r : read_ledger(dir / kLedgerName).records) {
      const auto point = r["point"].get<std::size_t>();
      const auto it = chosen.find(point);
      if (it == chosen.end()) {
        chosen.emplace(point, std::move(r));
      } else if (it->second["status"] != "ok" && r["status"] == "ok") {
        it->second = std::move(r);
      }
    }
  }
  const SweepSpec spec = read_sweep_spec(first["spec"], (dirs.front() / kSweepSpecCopyName).string() + " (spec)", {});
  if (spec.sha256 != first["spec_sha256"].get<std::string>()) {
    throw ConfigError((dirs.front() / kSweepSpecCopyName).string(), "/spec_sha256", "does not match its spec");
  }
  const auto points = expand_points(spec);
  std::vector<std::size_t> missing;
  for (const auto& p : points) {
    if (!chosen.contains(p.index)) missing.push_back(p.index);
  }
  for (const auto& [point, r] : chosen) {
    if (point >= points.size()) {
      throw ConfigError("sweep-merge", "", "a ledger holds point " + std::to_string(point) + " but the spec has only " +
                                               std::to_string(points.size()) + " points");
    }
  }
  if (!missing.empty() && !allow_missing) {
    std::string list;
    for (std::size_t i = 0; i < missing.size() && i < 10; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 10) list += ", ...";
    throw ConfigError("sweep-merge", "", std::to_string(missing.size()) + " of " + std::to_string(points.size()) +
                                             " points are in no ledger (" + list +
                                             "); run the missing shards or pass --allow-missing");
  }
  std::vector<nlohmann::ordered_json> records;
  for (auto& [point, r] : chosen) records.push_back(std::move(r));
  ensure_directory(out_dir);
  write_file_atomically(out_dir / kSweepSpecCopyName, sweep_spec_copy(spec, 0, 1));
  write_file_atomically(out_dir / kLedgerName, sorted_ledger_text(records));
  write_file_atomically(out_dir / kLedgerCsvName, ledger_csv(spec, records));
  return records.size();
}

}  // namespace ess
