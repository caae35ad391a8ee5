// `ess-sim compare A.json B.json [C.json ...] [--seeds N | --seed-list 1,5,9] [--steps S] [--set ...]
// [--jobs J] [--confidence 0.95] [--json] [-o DIR]`: runs scenarios that differ in policy with
// common random numbers (every scenario with the same seeds, one `ess-sim run` child each) and
// prints every metric side by side with the paired difference and its confidence interval.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "models/hardware.h"
#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"
#include "sim/engine/preflight.h"
#include "sim/io/atomic_file.h"
#include "sim/config/json_text.h"
#include "sim/memory/memory_plan.h"
#include "sim/offload/access_trace.h"
#include "sim/sweep/compare.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/runner.h"

namespace ess {

namespace {

constexpr std::size_t kDefaultSeeds = 5;  // 4 degrees of freedom: t(0.975, 4) = 2.78
constexpr const char* kCompareJson = "compare.json";
constexpr const char* kCompareTable = "compare.txt";
// Lines of a failed run's stderr shown with its error.
constexpr std::size_t kStderrTailLines = 20;

// "1,5,9": distinct seeds >= 0, in the order given.
std::vector<std::uint64_t> parse_seed_list(const std::string& text) {
  const ConfigError bad("--seed-list " + text, "", "expected distinct non-negative integer seeds separated by commas, e.g. 1,5,9");
  std::vector<std::uint64_t> seeds;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos) throw bad;
    const auto seed = static_cast<std::uint64_t>(std::stoull(item));
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) throw bad;
    seeds.push_back(seed);
    pos = comma + 1;
  }
  return seeds;
}

// The last `lines` lines of `text`.
std::string tail(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  for (std::size_t seen = 0; seen < lines; ++seen) {
    if (pos == 0) return text;
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return "...\n" + text.substr(pos + 1);
}

// A scenario loaded as every run of it will be (the user's --set and the first seed), with
// everything `run` checks before simulating; any rejection names the file.
nlohmann::ordered_json checked_resolved(const std::string& file, const std::vector<Override>& overrides,
                                        std::int64_t steps, bool allow_large) {
  const Scenario scenario = load_scenario(file, overrides);
  require_decode_scenario(scenario, "compare");
  try {
    (void)preflight(decode_run(scenario), steps, 0, resource_limits(allow_large));
  } catch (const CapacityError& e) {
    throw ConfigError(file, "", e.what());
  } catch (const ResourceError& e) {
    throw ConfigError(file, "", e.what());
  } catch (const UnsupportedError& e) {
    throw ConfigError(file, "", e.what());
  } catch (const AccessTraceError& e) {
    throw ConfigError(file, "", e.what());
  }
  return scenario.resolved;
}

// -o DIR may hold a previous comparison, not another output set (a run's), whose manifest it
// would replace.
void check_output_dir(const std::filesystem::path& dir) {
  const auto path = dir / kManifestName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  const nlohmann::json manifest = read_json_file(path);
  if (!manifest.is_object() || !manifest.contains("files") || !manifest["files"].is_array()) return;
  for (const auto& f : manifest["files"]) {
    const std::string name = f.is_object() && f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>() : "";
    if (name != kCompareJson && name != kCompareTable) {
      throw ConfigError(path.string(), "", "this directory holds another output set (it lists \"" + name +
                                               "\"), not a comparison; choose another -o directory");
    }
  }
}

// Where the runs write their output: a private folder under the system's temporary directory,
// removed however the comparison ends.
struct WorkDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ess-sim-compare-" + std::to_string(::getpid()));
  WorkDir() = default;
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

struct CompareOptions {
  std::vector<std::string> files;
  std::size_t seeds = kDefaultSeeds;
  std::string seed_list;
  std::int64_t steps = 0;
  std::vector<std::string> sets;
  std::size_t jobs = 0;
  double confidence = 0.95;
  bool json = false;
  std::string out_dir;
  bool allow_large = false;
  std::string executable = "/proc/self/exe";
};

void add_compare_options(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("SCENARIOS", o.files, "Two or more scenario JSON files; the first (A) is the reference")->required();
  auto* seeds_option = cmd->add_option("--seeds", o.seeds, "Run every scenario with seeds 1..N (default 5)")
                           ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
  cmd->add_option("--seed-list", o.seed_list, "Run every scenario with these seeds, e.g. 1,5,9")->excludes(seeds_option);
  cmd->add_option("--steps", o.steps, "Decode steps per run (default: each scenario's workload.decode_steps)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  add_set_option(*cmd, o.sets, "of every scenario (not seed)");
  cmd->add_option("--jobs", o.jobs, "Runs at once (default: the hardware's cores)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}));
  cmd->add_option("--confidence", o.confidence, "Confidence level of the intervals, in (0, 1) (default 0.95)");
  cmd->add_flag("--json", o.json, "Print the comparison as JSON instead of the table");
  cmd->add_option("-o,--output", o.out_dir, "Also write DIR/compare.json and DIR/compare.txt (as one set)");
  add_allow_large_flag(*cmd, o.allow_large);
  // The binary each run uses; tests (whose own executable is the test program) point it at ess-sim.
  cmd->add_option("--executable", o.executable, "")->group("");
}

// The seeds (--seed-list, else 1..--seeds), after the checks of the options themselves.
std::vector<std::uint64_t> compare_seeds(const CompareOptions& o) {
  if (o.files.size() < 2) {
    throw ConfigError("compare", "", "expected at least two scenarios to compare, got " + std::to_string(o.files.size()) +
                                         " (ess-sim compare A.json B.json ...)");
  }
  if (!(o.confidence > 0.0 && o.confidence < 1.0)) {
    throw ConfigError("--confidence " + std::to_string(o.confidence), "", "expected a confidence level in (0, 1), e.g. 0.95");
  }
  std::vector<std::uint64_t> seeds;
  if (!o.seed_list.empty()) {
    seeds = parse_seed_list(o.seed_list);
  } else {
    for (std::size_t s = 1; s <= o.seeds; ++s) seeds.push_back(s);
  }
  return seeds;
}

// Every scenario loaded and checked as its first run will be (the user's --set, then the first
// seed), with what B, C, ... change from A; a warning when that is more than a policy.
std::vector<ComparedScenario> load_compared(const CompareOptions& o, std::uint64_t first_seed) {
  std::vector<Override> overrides = parse_overrides(o.sets);
  for (const auto& set : overrides) {
    if (set.path == std::vector<std::string>{"seed"}) {
      throw ConfigError("--set " + set.argument, "", "compare sets each run's seed itself; choose the seeds with "
                                                     "--seeds N or --seed-list 1,5,9");
    }
  }
  overrides.push_back(parse_override("seed=" + std::to_string(first_seed)));
  std::vector<ComparedScenario> scenarios;
  nlohmann::ordered_json first;
  for (std::size_t i = 0; i < o.files.size(); ++i) {
    const auto resolved = checked_resolved(o.files[i], overrides, o.steps, o.allow_large);
    ComparedScenario s{scenario_label(i), o.files[i], {}};
    if (i == 0) {
      first = resolved;
    } else {
      s.differs = resolved_differences(first, resolved);
      std::vector<std::string> outside;
      for (const auto& p : s.differs) {
        if (!is_policy_path(p)) outside.push_back(p);
      }
      if (!outside.empty()) {
        std::string list;
        for (const auto& p : outside) list += " " + p;
        std::cerr << "warning: " << s.label << " (" << s.file << ") differs from A (" << o.files[0]
                  << ") outside /cache, /serving and /execution, in" << list << "; the comparison is of more than a policy\n";
      }
    }
    scenarios.push_back(std::move(s));
  }
  return scenarios;
}

// Every scenario with every seed, seed by seed; the user's --set first, then the seed.
std::vector<ScenarioChild> compare_children(const CompareOptions& o, const std::vector<std::uint64_t>& seeds) {
  std::vector<ScenarioChild> children;
  for (const auto seed : seeds) {
    for (const auto& file : o.files) {
      ScenarioChild child;
      child.scenario = file;
      child.sets = o.sets;
      child.steps = o.steps;
      child.sets.push_back("seed=" + std::to_string(seed));
      if (o.allow_large) child.extra_args.push_back("--allow-large");
      children.push_back(std::move(child));
    }
  }
  return children;
}

struct RunFailure {
  std::size_t index;
  PointOutcome outcome;
};

// The results of every run ([scenario][seed]), with a progress line each on stderr; stops starting
// runs at the first failure, and returns the failures instead.
std::vector<RunFailure> run_compared(const CompareOptions& o, const std::vector<ComparedScenario>& scenarios,
                                     const std::vector<std::uint64_t>& seeds,
                                     std::vector<std::vector<nlohmann::ordered_json>>& results) {
  const std::vector<ScenarioChild> children = compare_children(o, seeds);
  const std::size_t ns = o.files.size();
  std::vector<RunFailure> failures;
  const auto started = std::chrono::steady_clock::now();
  std::size_t done = 0;
  const WorkDir work;
  const std::size_t jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  run_scenario_children(o.executable, children, jobs, {}, work.path, [&](std::size_t i, PointOutcome& outcome) {
    ++done;
    const std::size_t s = i % ns, k = i / ns;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::string what = outcome.status;
    if (outcome.status == "ok") {
      const nlohmann::ordered_json::json_pointer mean("/summary/step_time_s/mean");
      if (outcome.results.contains(mean) && outcome.results.at(mean).is_number()) {
        char ms[48];
        std::snprintf(ms, sizeof ms, "  %.2f ms", outcome.results.at(mean).get<double>() * 1e3);
        what += ms;
      }
    }
    std::cerr << "[" << done << "/" << children.size() << "] " << scenarios[s].label << " seed=" << seeds[k] << "  "
              << what << "  (ETA "
              << rounded_duration(elapsed / static_cast<double>(done) * static_cast<double>(children.size() - done))
              << ")\n"
              << std::flush;
    if (outcome.status != "ok") {
      failures.push_back({i, std::move(outcome)});
      return false;  // the comparison needs every run: start no more
    }
    results[s][k] = std::move(outcome.results);
    return true;
  });
  return failures;
}

// Bad input a run found (the batch does not fit with this seed, say) is exit 2 like any other; a
// run that crashed or failed inside is exit 1, as in sweep.
int report_failures(const std::vector<RunFailure>& failures, const std::vector<ComparedScenario>& scenarios,
                    const std::vector<std::uint64_t>& seeds) {
  const std::size_t ns = scenarios.size();
  bool bad_input = true;
  std::string message;
  for (const auto& f : failures) {
    const auto& sc = scenarios[f.index % ns];
    message += std::string(message.empty() ? "" : "\n") + "the run of " + sc.label + " (" + sc.file + ") with seed " +
               std::to_string(seeds[f.index / ns]) + " failed (" + f.outcome.status +
               (f.outcome.reason_code.empty() ? "" : ", " + f.outcome.reason_code) + ")" +
               (f.outcome.reason_message.empty() ? "" : ":\n" + tail(f.outcome.reason_message, kStderrTailLines));
    bad_input = bad_input && f.outcome.status != "failed";
  }
  if (bad_input) throw ConfigError("compare", "", message + "\nno comparison was made");
  std::cerr << "error: " << message << "\nerror: no comparison was made\n";
  return 1;
}

int run_compare(const CompareOptions& o, std::ostream& out) {
  // Everything that can be wrong with the input is found before the first run.
  const std::vector<std::uint64_t> seeds = compare_seeds(o);
  std::vector<ComparedScenario> scenarios = load_compared(o, seeds.front());
  if (!o.out_dir.empty()) check_output_dir(o.out_dir);
  std::vector<std::vector<nlohmann::ordered_json>> results(o.files.size(),
                                                           std::vector<nlohmann::ordered_json>(seeds.size()));
  const auto failures = run_compared(o, scenarios, seeds, results);
  if (!failures.empty()) return report_failures(failures, scenarios, seeds);

  const Comparison c = compare_results(std::move(scenarios), seeds, results, o.confidence, o.steps);
  const std::string json_text = comparison_json(c).dump(2) + "\n";
  const std::string table = comparison_table(c);
  if (!o.out_dir.empty()) {
    ensure_directory(o.out_dir);
    write_output_set(o.out_dir, {{kCompareJson, json_text}, {kCompareTable, table}}, std::string("ess-sim ") + ESS_SIM_VERSION);
  }
  if (o.json) {
    out << json_text;
  } else {
    out << table;
    if (!o.out_dir.empty()) out << "\n  wrote " << o.out_dir << "/" << kCompareJson << " and " << kCompareTable << "\n";
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Run scenarios that differ in policy on the same seeds (common random numbers: the same arrivals, "
                 "routing and top-k selections) and print every metric side by side with the paired difference "
                 "to the first and its confidence interval");
  add_compare_options(cmd, *o);
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) { return run_compare(*o, out); };
  });
}

}  // namespace ess
