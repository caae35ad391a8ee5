// `ess-sim search max-batch|min-gpus|fit SCENARIO ...`: capacity-planning searches, each probe a
// real simulation; `ess-sim pareto DIR`: the ranked throughput-latency front of a sweep.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/serving/pd_search.h"
#include "sim/config/config_error.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/search.h"

namespace ess {

namespace {

std::string fixed(double v, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

double positive_rate(const std::string& text, const std::string& option) {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v > 0) || !std::isfinite(v)) {
    throw ConfigError(option + " " + text, "", "expected a positive number of tokens per second, e.g. 50000");
  }
  return v;
}

// Where probes write their output: a private folder under the system's temporary directory.
std::filesystem::path probe_dir() {
  return std::filesystem::temp_directory_path() / ("ess-sim-search-" + std::to_string(::getpid()));
}

void print_result(std::ostream& out, const SearchResult& r, const std::string& unit) {
  out << r.question << ": ";
  if (!r.found) {
    out << "none (" << r.message << ")\n";
  } else {
    out << r.answer << " " << unit << " (limited by the " << r.bound << "; " << r.message << ")\n";
    const auto& s = r.answer_summary;
    if (s.is_object()) {
      const auto get = [&](const char* a, const char* b = nullptr) {
        const auto& v = b == nullptr ? s.value(a, nlohmann::ordered_json()) : s.value(a, nlohmann::ordered_json()).value(b, nlohmann::ordered_json());
        return v.is_number() ? v.get<double>() : std::nan("");
      };
      out << "  at it: batch " << static_cast<long long>(get("batch_per_gpu")) << " per GPU on "
          << static_cast<long long>(get("gpus")) << " GPUs, step time mean " << fixed(get("step_time_s", "mean") * 1e3, 2)
          << " ms, P99 " << fixed(get("step_time_s", "p99") * 1e3, 2) << " ms, TPOT "
          << fixed(1e3 / get("otps_per_request"), 2) << " ms, " << fixed(get("tokens_per_s_per_gpu"), 0)
          << " tokens/s per GPU, " << fixed(get("tokens_per_s_total"), 0) << " in total\n";
    }
    if (!r.band.empty()) out << "  calibration band: " << r.band << "\n";
    std::string sets;
    for (const auto& set : r.answer_sets) sets += " --set " + set;
    out << "  run it:" << (sets.empty() ? " (the scenario as given)" : sets) << "\n";
  }
  out << "  " << r.probes.size() << " simulations\n";
}

nlohmann::ordered_json result_json(const SearchResult& r) {
  nlohmann::ordered_json j;
  j["question"] = r.question;
  j["found"] = r.found;
  j["answer"] = r.found ? nlohmann::ordered_json(r.answer) : nlohmann::ordered_json();
  j["bound"] = r.bound;
  j["message"] = r.message;
  j["band"] = r.band;
  j["answer_sets"] = r.answer_sets;
  j["answer_summary"] = r.answer_summary;
  j["probes"] = nlohmann::ordered_json::array();
  for (const auto& p : r.probes) {
    j["probes"].push_back({{"sets", p.sets},
                           {"status", p.outcome.status},
                           {"reason_code", p.outcome.reason_code},
                           {"value", std::isfinite(p.value) ? nlohmann::ordered_json(p.value) : nlohmann::ordered_json()},
                           {"meets", p.meets}});
  }
  return j;
}

struct Common {
  std::string scenario;
  std::vector<std::string> sets;
  std::int64_t steps = 0;
  bool json = false;
  std::string executable = "/proc/self/exe";
};

void add_common(CLI::App* cmd, Common& c, bool simulates) {
  cmd->add_option("SCENARIO", c.scenario, "Scenario JSON file")->required();
  add_set_option(*cmd, c.sets, "of every probe");
  if (simulates) {
    cmd->add_option("--steps", c.steps, "Decode steps per probe (default: workload.decode_steps)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
    cmd->add_option("--executable", c.executable, "")->group("");
  }
  cmd->add_flag("--json", c.json, "Print a JSON object instead of the text");
}

SearchContext context_of(const Common& c, bool quiet) {
  SearchContext ctx;
  ctx.executable = c.executable;
  ctx.scenario = c.scenario;
  ctx.sets = c.sets;
  ctx.steps = c.steps;
  ctx.work_dir = probe_dir();
  ctx.progress = quiet ? nullptr : &std::cerr;
  return ctx;
}

// Removes the probes' folder however the search ends.
struct ProbeDirCleanup {
  ProbeDirCleanup() = default;
  ProbeDirCleanup(const ProbeDirCleanup&) = delete;
  ProbeDirCleanup& operator=(const ProbeDirCleanup&) = delete;
  ~ProbeDirCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(probe_dir(), ec);
  }
};

// Prints a search's result (JSON or text); exit 0 with an answer, 1 without.
int report(std::ostream& out, const SearchResult& r, bool json, const std::string& unit) {
  if (json) {
    out << result_json(r).dump(2) << "\n";
  } else {
    print_result(out, r, unit);
  }
  return r.found ? 0 : 1;
}

struct BatchOptions : Common {
  std::string p99;
  std::string tpot;
};

struct GpuOptions : Common {
  std::string throughput;
  int max_nodes = 64;
};

struct FitOptions : Common {
  int max_nodes = 64;
};

struct ParetoOptions {
  std::string dir;
  std::size_t top = 10;
  bool json = false;
};

void print_fit(std::ostream& out, const FitOptions& f, const FitAdvice& a) {
  if (f.json) {
    nlohmann::ordered_json j;
    j["fits"] = a.fits;
    j["batch_per_gpu"] = a.fits ? nlohmann::ordered_json(a.batch_per_gpu) : nlohmann::ordered_json();
    j["budget"] = a.budget;
    j["suggestions"] = nlohmann::ordered_json::array();
    for (const auto& s : a.suggestions) j["suggestions"].push_back({{"what", s.what}, {"sets", s.sets}});
    out << j.dump(2) << "\n";
  } else if (a.fits) {
    out << f.scenario << " fits: batch " << a.batch_per_gpu << " per GPU\n";
  } else {
    out << f.scenario << " does not fit:\n" << a.budget << "\n";
    if (a.suggestions.empty()) out << "Nothing tried fits (batch, pool ratio, offload, EP/TP degree).\n";
    if (!a.suggestions.empty()) out << "What would fit, each on its own:\n";
    for (const auto& s : a.suggestions) {
      std::string sets;
      for (const auto& set : s.sets) sets += " --set " + set;
      out << "  - " << s.what << ":" << sets << "\n";
    }
  }
}

void print_pareto(std::ostream& out, const ParetoOptions& p, const ParetoTable& t) {
  if (p.json) {
    nlohmann::ordered_json j;
    j["ok_points"] = t.ok_points;
    j["front_points"] = t.front_points;
    j["rows"] = nlohmann::ordered_json::array();
    for (const auto& row : t.rows) {
      j["rows"].push_back({{"point", row.point},
                           {"tokens_per_s_per_gpu", row.tokens_per_s_per_gpu},
                           {"tpot_s", row.tpot_s},
                           {"band_relative", row.record.value("step_time_band_relative", nlohmann::ordered_json())},
                           {"axes", row.record.value("axes", nlohmann::ordered_json::object())}});
    }
    out << j.dump(2) << "\n";
    return;
  }
  out << "Pareto front of " << p.dir << ": " << t.front_points << " of " << t.ok_points
      << " ok points (no other point has both more tokens/s per GPU and a lower TPOT)\n";
  // The calibration band (one sigma, relative) of each point, when the sweep recorded the
  // step_time_band_relative metric: neighbours closer than it are not told apart by the model.
  out << "  rank  point  tokens/s/GPU  TPOT ms   band  batch  axes\n";
  std::size_t rank = 0;
  for (const auto& row : t.rows) {
    std::string axes;
    const nlohmann::ordered_json point_axes = row.record.value("axes", nlohmann::ordered_json::object());
    for (const auto& [path_text, value] : point_axes.items()) {
      axes += (axes.empty() ? "" : "  ") + path_text + "=" + value.dump();
    }
    const nlohmann::ordered_json requests = row.record.value("batch_per_gpu", nlohmann::ordered_json());
    const nlohmann::ordered_json band = row.record.value("step_time_band_relative", nlohmann::ordered_json());
    char band_text[16] = "    -";
    if (band.is_number()) std::snprintf(band_text, sizeof band_text, "%4.1f%%", band.get<double>() * 100.0);
    char line[180];
    std::snprintf(line, sizeof line, "  %4zu  %5zu  %12.1f  %7.2f  %5s  %5s  ", ++rank, row.point,
                  row.tokens_per_s_per_gpu, row.tpot_s * 1e3, band_text,
                  requests.is_number() ? requests.dump().c_str() : "-");
    out << line << axes << "\n";
  }
}

void add_max_batch_command(CLI::App* search, CommandAction& action) {
  auto b = std::make_shared<BatchOptions>();
  auto* batch = search->add_subcommand("max-batch", "Largest batch per GPU whose P99 step time (or TPOT) meets a "
                                                    "target; bisection between 1 and the largest batch that fits");
  add_common(batch, *b, true);
  auto* p99 = batch->add_option("--p99", b->p99, "Target P99 step time, e.g. 500ms");
  auto* tpot = batch->add_option("--tpot", b->tpot, "Target time per output token of a request, e.g. 50ms");
  p99->excludes(tpot);
  batch->callback([b, &action] {
    action = [b](std::ostream& out) {
      if (b->p99.empty() == b->tpot.empty()) {
        throw ConfigError("search max-batch", "", "give exactly one target: --p99 DURATION or --tpot DURATION");
      }
      const bool by_p99 = !b->p99.empty();
      const double target = positive_duration(by_p99 ? b->p99 : b->tpot, by_p99 ? "--p99" : "--tpot", "500ms");
      const ProbeDirCleanup cleanup;
      const SearchResult r = search_max_batch(context_of(*b, b->json),
                                              by_p99 ? LatencyTarget::p99_step_time : LatencyTarget::tpot, target);
      return report(out, r, b->json, "requests per GPU");
    };
  });
}

void add_min_gpus_command(CLI::App* search, CommandAction& action) {
  auto g = std::make_shared<GpuOptions>();
  auto* gpus = search->add_subcommand("min-gpus", "Fewest GPUs (whole nodes, layout scaled with them) whose total "
                                                  "throughput reaches a target");
  add_common(gpus, *g, true);
  gpus->add_option("--throughput", g->throughput, "Target total decode throughput, tokens/s")->required();
  gpus->add_option("--max-nodes", g->max_nodes, "Most nodes to consider (default 64)")->check(CLI::Range(1, 4096));
  gpus->callback([g, &action] {
    action = [g](std::ostream& out) {
      const double target = positive_rate(g->throughput, "--throughput");
      const ProbeDirCleanup cleanup;
      const SearchResult r = search_min_gpus(context_of(*g, g->json), target, g->max_nodes);
      return report(out, r, g->json, "GPUs");
    };
  });
}

void add_pd_command(CLI::App* search, CommandAction& action) {
  auto pd = std::make_shared<PdSearch>();
  auto* pdc = search->add_subcommand("pd", "Fewest GPUs for a disaggregated serving scenario's workload: prefill instances "
                                           "for each decode node count, against the colocated alternative, so that every "
                                           "request completes and a share of them meet serving.slo");
  pdc->add_option("SCENARIO", pd->scenario, "Serving scenario with serving.prefill.mode \"disaggregated\"")->required();
  add_set_option(*pdc, pd->sets);
  pdc->add_option("--max-instances", pd->max_instances, "Most prefill instances to try (default 16)")->check(CLI::Range(1, 4096));
  pdc->add_option("--attainment", pd->attainment, "Share of completed requests that must meet every SLO (default 0.9)")
      ->check(CLI::Range(0.0, 1.0));
  pdc->add_option("--decode-nodes", pd->decode_nodes, "Decode node counts to try, e.g. 1,2 (default: the scenario's); the "
                                                      "layout scales with the nodes")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  pdc->add_flag("--colocated", pd->colocated, "Also try each decode node count prefilling its own prompts in chunks");
  pdc->add_option("--colocated-tokens", pd->colocated_tokens, "Colocated step budget per GPU (default " + std::to_string(kColocatedTokensPerGpu) + ")")
      ->check(CLI::Range(1, 1048576));
  auto json = std::make_shared<bool>(false);
  pdc->add_flag("--json", *json, "Print a JSON object instead of the table");
  auto allow_large = std::make_shared<bool>(false);
  add_allow_large_flag(*pdc, *allow_large);
  pdc->callback([pd, json, allow_large, &action] {
    pd->limits = resource_limits(*allow_large);
    action = [pd, json](std::ostream& out) { return print_search_pd(*pd, *json, out); };
  });
}

void add_fit_command(CLI::App* search, CommandAction& action) {
  auto f = std::make_shared<FitOptions>();
  auto* fit = search->add_subcommand("fit", "Whether a scenario fits in GPU memory and, if not, what would: the "
                                            "largest batch, pool ratio, offload, the smallest EP or TP degree");
  add_common(fit, *f, false);
  fit->add_option("--max-nodes", f->max_nodes, "Most nodes to consider for expert parallelism (default 64)")
      ->check(CLI::Range(1, 4096));
  fit->callback([f, &action] {
    action = [f](std::ostream& out) {
      const FitAdvice a = fit_advice(f->scenario, f->sets, f->max_nodes);
      print_fit(out, *f, a);
      return a.fits ? 0 : 1;
    };
  });
}

void add_pareto_command(CLI::App& app, CommandAction& action) {
  auto p = std::make_shared<ParetoOptions>();
  auto* pareto = app.add_subcommand("pareto", "The Pareto front of a sweep (tokens/s per GPU against TPOT), ranked "
                                              "by throughput");
  pareto->add_option("DIR", p->dir, "Sweep output directory (ess-sim sweep -o DIR)")->required();
  pareto->add_option("--top", p->top, "Rows to print (default 10; 0: the whole front)");
  pareto->add_flag("--json", p->json, "Print a JSON object instead of the table");
  pareto->callback([p, &action] {
    action = [p](std::ostream& out) {
      const auto path = std::filesystem::path(p->dir) / kLedgerName;
      if (!std::filesystem::exists(path)) {
        throw ConfigError(path.string(), "", "no sweep ledger here (run ess-sim sweep SPEC -o " + p->dir + " first)");
      }
      const LedgerContent ledger = read_ledger(path);
      const ParetoTable t = pareto_table(ledger.records, p->top, path.string());
      print_pareto(out, *p, t);
      return 0;
    };
  });
}

}  // namespace

void add_search_command(CLI::App& app, CommandAction& action) {
  auto* search = app.add_subcommand("search", "Capacity-planning searches by bisection over the simulator: the "
                                              "largest batch under a latency target, the fewest GPUs for a "
                                              "throughput, what would make a scenario fit");
  search->require_subcommand(1);

  add_max_batch_command(search, action);
  add_min_gpus_command(search, action);
  add_pd_command(search, action);
  add_fit_command(search, action);
  add_pareto_command(app, action);
}

}  // namespace ess
