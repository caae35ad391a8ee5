#include "validate/compare.h"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "sim/base/error.h"
#include "sim/engine/simulation.h"

namespace ess {

namespace {

std::string pct(double f) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << f * 100.0 << "%";
  return s.str();
}

std::string signed_pct(double f) { return (f >= 0 ? "+" : "") + pct(f); }

std::string ms(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(3) << s * 1e3;
  return o.str();
}

nlohmann::ordered_json summary_json(const ErrorSummary& e) {
  return {{"points", e.points}, {"median_abs", e.median_abs}, {"p95_abs", e.p95_abs}, {"max_abs", e.max_abs}, {"bias", e.bias}};
}

}  // namespace

namespace {

std::vector<StepProfile> profile_of(const RunResult& r) {
  std::vector<StepProfile> out(static_cast<std::size_t>(r.steps));
  for (std::size_t s = 0; s < out.size(); ++s) {
    const GpuStepTimes& g = r.gpu_steps[s][0];
    StepProfile& p = out[s];
    p.step_time = r.step_time[s];
    const auto busy = [&g](OpCategory c) { return g.busy[static_cast<std::size_t>(c)]; };
    p.seconds[static_cast<std::size_t>(ValidationCategory::gemm)] = busy(OpCategory::gemm);
    p.seconds[static_cast<std::size_t>(ValidationCategory::norm)] = busy(OpCategory::norm);
    p.seconds[static_cast<std::size_t>(ValidationCategory::indexer)] = busy(OpCategory::indexer);
    p.seconds[static_cast<std::size_t>(ValidationCategory::attention)] = busy(OpCategory::attention);
    p.seconds[static_cast<std::size_t>(ValidationCategory::elementwise)] = busy(OpCategory::elementwise);
    p.seconds[static_cast<std::size_t>(ValidationCategory::transfer)] = g.transfer;
    p.seconds[static_cast<std::size_t>(ValidationCategory::exposed_wait)] = g.exposed;
  }
  return out;
}

}  // namespace

// The simulation runs as many steps as the trace holds; more than the scenario decodes cannot be
// its run (and a hostile step count must not start a simulation of a million steps).
void check_trace_steps(const Scenario& scenario, std::int64_t steps) {
  if (steps < 1 || steps > scenario.workload.decode_steps) {
    throw InputError("the trace holds " + std::to_string(steps) + " decode steps but the scenario " +
                     scenario.origin + " decodes " + std::to_string(scenario.workload.decode_steps) +
                     " (workload.decode_steps): the trace cannot be this scenario's run (for a profiler "
                     "trace of more steps, raise workload.decode_steps with --set)");
  }
}

namespace {

std::optional<ValidationCategory> compute_category(OpCategory c) {
  switch (c) {
    case OpCategory::gemm: return ValidationCategory::gemm;
    case OpCategory::attention: return ValidationCategory::attention;
    case OpCategory::indexer: return ValidationCategory::indexer;
    case OpCategory::norm: return ValidationCategory::norm;
    case OpCategory::elementwise: return ValidationCategory::elementwise;
    case OpCategory::collective:
    case OpCategory::transfer:
    case OpCategory::host: return std::nullopt;  // not kernels the runner counts
  }
  return std::nullopt;
}

}  // namespace

std::vector<StepProfile> simulated_profile(const Scenario& scenario, std::int64_t steps) {
  return simulate_for_validation(scenario, steps).steps;
}

SimulatedRun simulate_for_validation(const Scenario& scenario, std::int64_t steps) {
  check_trace_steps(scenario, steps);
  // GPU 0's ops, as the runner records them; no trace.
  SimulationOptions options{steps, 0};
  options.record_ops_of_gpu = 0;
  // A decode scenario's run (validate refuses a prefill scenario); a serving scenario's decode side.
  Simulation sim(decode_run(scenario), options);
  RunResult r = sim.run();
  SimulatedRun out;
  out.steps = profile_of(r);
  out.ops.resize(out.steps.size());
  for (std::size_t s = 0; s < out.steps.size(); ++s) {
    StepOpTimes& ops = r.op_times[s];
    StepProfile& p = out.steps[s];
    p.events_are_ops = true;
    p.layers = static_cast<std::size_t>(ops.layers);
    for (std::size_t c = 0; c < kOpCategoryCount; ++c) {
      if (const auto v = compute_category(static_cast<OpCategory>(c))) p.events[static_cast<std::size_t>(*v)] += ops.kernels[c];
    }
    out.ops[s] = std::move(ops.seconds);
  }
  return out;
}

std::vector<OpComparison> compare_ops(const std::vector<std::map<std::string, double>>& real,
                                      const std::vector<std::map<std::string, double>>& simulated) {
  if (real.size() != simulated.size()) {
    throw InputError("compare_ops: real and simulated runs differ in steps");
  }
  std::map<std::string, OpComparison> by_name;
  for (std::size_t s = 0; s < real.size(); ++s) {
    for (const auto& [name, sec] : real[s]) by_name[name].real += sec;
    for (const auto& [name, sec] : simulated[s]) by_name[name].simulated += sec;
  }
  std::vector<OpComparison> out;
  for (auto& [name, c] : by_name) {
    c.name = name;
    c.error = c.real > 0.0 ? (c.simulated - c.real) / c.real : 0.0;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const OpComparison& a, const OpComparison& b) { return a.real > b.real; });
  return out;
}

namespace {

// Kineto traces count GPU kernels, and a library may split one GEMM into a few kernels (split-K
// and its reduction) or fuse a few into one (e.g. the Q and KV down-projections): a factor of 4
// either way covers both, while a trace of another model (61 layers against 4) lies far outside.
constexpr double kKernelsPerOpSlack = 4.0;

std::string category_name(ValidationCategory c) { return std::string(to_string(c)); }

// A trace whose steps cannot be the scenario's (another model, another configuration) is an
// error, not a comparison with a large error.
void check_shapes(const std::vector<StepProfile>& real, const std::vector<StepProfile>& simulated) {
  const auto gemm = static_cast<std::size_t>(ValidationCategory::gemm);
  std::size_t real_gemm_kernels = 0;
  for (const StepProfile& p : real) real_gemm_kernels += p.events[gemm];
  for (std::size_t s = 0; s < real.size(); ++s) {
    const StepProfile& rp = real[s];
    const StepProfile& sp = simulated[s];
    const std::string step = "step " + std::to_string(s) + " of the trace";
    if (rp.layers > 0 && sp.layers > 0 && rp.layers != sp.layers) {
      throw InputError(step + " has events for " + std::to_string(rp.layers) + " layers, the scenario's step " +
                       std::to_string(sp.layers) + ": the trace was recorded for another model");
    }
    if (!sp.events_are_ops) continue;  // the simulation's counts were not recorded
    if (rp.events_are_ops) {
      // ess-runner ops are the simulator's ops one for one (kernels/runner/timeline.cpp); GEMMs and
      // norms do not depend on the cache's behaviour, so their counts must agree exactly.
      for (const ValidationCategory c : {ValidationCategory::gemm, ValidationCategory::norm}) {
        const auto i = static_cast<std::size_t>(c);
        if (rp.events[i] != sp.events[i]) {
          throw InputError(step + " has " + std::to_string(rp.events[i]) + " " + category_name(c) +
                           " ops, a step of the scenario " + std::to_string(sp.events[i]) +
                           ": the trace was recorded for another configuration");
        }
      }
    } else if (real_gemm_kernels > 0) {
      const double real_count = static_cast<double>(rp.events[gemm]);
      const double sim_count = static_cast<double>(sp.events[gemm]);
      if (real_count * kKernelsPerOpSlack < sim_count || real_count > sim_count * kKernelsPerOpSlack) {
        throw InputError(step + " has " + std::to_string(rp.events[gemm]) +
                         " GEMM kernels, a step of the scenario " + std::to_string(sp.events[gemm]) +
                         " GEMMs (more than a factor " + std::to_string(static_cast<int>(kKernelsPerOpSlack)) +
                         " apart): the trace was recorded for another model or configuration");
      }
    }
  }
}

}  // namespace

ValidationReport compare_profiles(const std::vector<StepProfile>& real, const std::vector<StepProfile>& simulated,
                                  double threshold) {
  if (real.empty() || real.size() != simulated.size()) {
    throw InternalError("compare_profiles: need the same, non-zero number of real and simulated steps (got " +
                        std::to_string(real.size()) + " and " + std::to_string(simulated.size()) + ")");
  }
  check_shapes(real, simulated);
  ValidationReport r;
  r.threshold = threshold;
  std::vector<double> sim_steps;
  std::vector<double> real_steps;
  for (std::size_t s = 0; s < real.size(); ++s) {
    if (!(real[s].step_time > 0.0)) {
      throw InputError("step " + std::to_string(s) + " of the trace has no positive step time");
    }
    r.steps.push_back({s, real[s].step_time, simulated[s].step_time,
                       (simulated[s].step_time - real[s].step_time) / real[s].step_time});
    sim_steps.push_back(simulated[s].step_time);
    real_steps.push_back(real[s].step_time);
  }
  r.step_errors = summarize_errors(sim_steps, real_steps);
  for (std::size_t c = 0; c < kValidationCategories; ++c) {
    CategoryError e;
    e.category = static_cast<ValidationCategory>(c);
    std::vector<double> p;
    std::vector<double> m;
    for (std::size_t s = 0; s < real.size(); ++s) {
      const double rv = real[s].seconds[c];
      const double sv = simulated[s].seconds[c];
      if (rv > 0.0) {
        p.push_back(sv);
        m.push_back(rv);
        e.real_total += rv;
        e.simulated_total += sv;
      } else if (sv > 0.0) {
        ++e.only_simulated;
      }
    }
    if (m.empty() && e.only_simulated == 0) continue;  // neither side has this category
    if (!m.empty()) e.errors = summarize_errors(p, m);
    e.steps_compared = m.size();
    r.categories.push_back(e);
  }
  r.passed = r.step_errors.median_abs <= threshold;
  return r;
}

std::string format_validation_report(const ValidationReport& r, const MeasuredTrace& trace) {
  std::ostringstream s;
  s << "Validation of " << trace.path << " (" << trace.format << ", " << r.steps.size() << " steps)";
  if (trace.metadata.contains("gpu") && trace.metadata["gpu"].is_string()) s << " on " << trace.metadata["gpu"].get<std::string>();
  s << "\nRelative error (simulated - real) / real.\n\n";
  s << std::left << std::setw(14) << "category" << std::right << std::setw(7) << "steps" << std::setw(12) << "real ms"
    << std::setw(12) << "sim ms" << std::setw(9) << "median" << std::setw(9) << "p95" << std::setw(9) << "max"
    << std::setw(9) << "bias" << "\n";
  double real_total = 0.0;
  double sim_total = 0.0;
  for (const auto& st : r.steps) {
    real_total += st.real;
    sim_total += st.simulated;
  }
  s << std::left << std::setw(14) << "step time" << std::right << std::setw(7) << r.steps.size() << std::setw(12)
    << ms(real_total) << std::setw(12) << ms(sim_total) << std::setw(9) << pct(r.step_errors.median_abs) << std::setw(9)
    << pct(r.step_errors.p95_abs) << std::setw(9) << pct(r.step_errors.max_abs) << std::setw(9)
    << signed_pct(r.step_errors.bias) << "\n";
  for (const auto& c : r.categories) {
    s << std::left << std::setw(14) << to_string(c.category) << std::right << std::setw(7) << c.steps_compared
      << std::setw(12) << ms(c.real_total) << std::setw(12) << ms(c.simulated_total);
    if (c.steps_compared > 0) {
      s << std::setw(9) << pct(c.errors.median_abs) << std::setw(9) << pct(c.errors.p95_abs) << std::setw(9)
        << pct(c.errors.max_abs) << std::setw(9) << signed_pct(c.errors.bias);
    } else {
      s << std::setw(36) << "(absent from the trace)";
    }
    if (c.only_simulated > 0) s << "  only simulated in " << c.only_simulated << " step(s)";
    s << "\n";
  }
  if (!r.ops.empty()) {
    s << "\nper op, summed over layers and steps (ms): real / simulated / error\n";
    for (const auto& op : r.ops) {
      s << "  " << std::left << std::setw(20) << op.name << std::right << std::setw(10) << ms(op.real) << " / "
        << std::setw(10) << ms(op.simulated) << " / "
        << (op.real > 0.0 ? signed_pct(op.error) : std::string("only simulated")) << "\n";
    }
  }
  s << "\nper step (ms): real / simulated / error\n";
  for (const auto& st : r.steps) {
    s << "  step " << std::setw(3) << st.step << "  " << ms(st.real) << " / " << ms(st.simulated) << " / "
      << signed_pct(st.error) << "\n";
  }
  if (!trace.uncategorised.empty()) {
    s << "\nkernels no mapping rule matched (not compared; add rules to the mapping file):\n";
    for (const auto& [name, sec] : trace.uncategorised) s << "  " << ms(sec) << " ms  " << name << "\n";
  }
  if (trace.events_outside_steps > 0) {
    s << "\n" << trace.events_outside_steps << " kernel(s) outside every profiler step were ignored\n";
  }
  s << "\n" << (r.passed ? "PASS" : "FAIL") << ": step-time median |error| " << pct(r.step_errors.median_abs)
    << (r.passed ? " <= " : " > ") << "threshold " << pct(r.threshold) << "\n";
  return s.str();
}

nlohmann::ordered_json validation_json(const ValidationReport& r, const MeasuredTrace& trace) {
  nlohmann::ordered_json j;
  j["schema"] = "ess-sim/validation/v1";
  j["trace"] = {{"path", trace.path}, {"format", trace.format}, {"metadata", trace.metadata}};
  j["threshold"] = r.threshold;
  j["passed"] = r.passed;
  j["step_time"] = summary_json(r.step_errors);
  nlohmann::ordered_json cats = nlohmann::ordered_json::object();
  for (const auto& c : r.categories) {
    cats[std::string(to_string(c.category))] = {{"errors", c.steps_compared > 0 ? summary_json(c.errors) : nullptr},
                                                {"real_seconds", c.real_total},
                                                {"simulated_seconds", c.simulated_total},
                                                {"only_simulated_steps", c.only_simulated}};
  }
  j["categories"] = cats;
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const auto& st : r.steps) {
    steps.push_back({{"step", st.step}, {"real_seconds", st.real}, {"simulated_seconds", st.simulated}, {"error", st.error}});
  }
  j["steps"] = steps;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto& op : r.ops) {
    ops.push_back({{"name", op.name}, {"real_seconds", op.real}, {"simulated_seconds", op.simulated},
                   {"error", op.real > 0.0 ? nlohmann::ordered_json(op.error) : nlohmann::ordered_json(nullptr)}});
  }
  j["ops"] = ops;
  j["uncategorised_kernels"] = trace.uncategorised;
  return j;
}

}  // namespace ess
