#include "sim/metrics/prefill_results.h"

#include <algorithm>

#include "sim/graph/prefill_step.h"
#include "sim/metrics/bands.h"
#include "sim/metrics/results.h"

namespace ess {

double prefill_tokens_per_s_per_gpu(const PrefillRun& run, const RunResult& r) {
  return static_cast<double>(run.work.tokens_per_gpu) / step_stats(r.step_time).mean;
}

nlohmann::ordered_json prefill_results_json(const Scenario& s, const RunResult& r, const std::string& version,
                                            const std::string& scenario_sha256) {
  const StepStats st = step_stats(r.step_time);
  const PrefillRun run = prefill_run(s);
  const double per_gpu = prefill_tokens_per_s_per_gpu(run, r);
  const auto pieces = run_pieces(run);
  nlohmann::ordered_json j = results_head(s, version, scenario_sha256);
  nlohmann::ordered_json sum;
  sum["phase"] = "prefill";
  add_machine(sum, s);
  sum["engine"] = engine_summary(s.engine, std::nullopt);
  add_layout(sum, s, r);
  sum["prompt_length"] = s.prefill->prompt_length;
  sum["tokens_per_gpu"] = s.prefill->tokens_per_gpu;
  sum["prompts_per_replica"] = pieces.size();
  sum["mtp_depth"] = s.workload.mtp.depth;
  sum["steps"] = r.steps;
  sum["step_time_s"] = {{"mean", st.mean}, {"p50", st.p50}, {"p99", st.p99}, {"min", st.min}, {"max", st.max}};
  sum["prompt_tokens_per_s_per_gpu"] = per_gpu;
  sum["prompt_tokens_per_s_node"] = per_gpu * s.hardware.gpu.count;
  sum["prompt_tokens_per_s_total"] = per_gpu * r.gpus;
  const StepBand band = step_band(r, s.hardware_bands);
  sum["band"] = band_json(band, per_gpu);
  sum["execution"] = {{"micro_batches", s.execution.micro_batches}, {"step_overhead_s", s.execution.step_overhead.value()}};
  sum["communication"] = communication_summary(r);
  sum["time_by_category_s"] = time_by_category(r);
  sum["simgrid_activities"] = r.activities;
  j["summary"] = sum;
  j["band_by_params"] = band_breakdown_json(band, s.hardware_bands);
  j["steps"] = steps_json(r);
  j["layers"] = layers_json(s, r);
  return j;
}

std::string prefill_results_table(const Scenario& s, const RunResult& r) {
  const StepStats st = step_stats(r.step_time);
  const PrefillRun run = prefill_run(s);
  const double per_gpu = prefill_tokens_per_s_per_gpu(run, r);
  const auto pieces = run_pieces(run);
  std::string out = run_title(s, r, "prefill of ");
  out += "  engine " + s.engine.name + " (" + s.engine.version + "), EPLB " + (s.engine.eplb ? "on" : "off") +
         (s.model.moe ? ", expert skew " + fmt("%.3f", s.workload.expert_skew) + " / drift " + fmt("%.3f", s.workload.expert_drift)
                      : std::string()) +
         "\n";
  out += "  " + std::to_string(s.prefill->tokens_per_gpu) + " prompt tokens per GPU per step: " + std::to_string(pieces.size()) +
         " prompt(s) of up to " + std::to_string(s.prefill->prompt_length) + " tokens per replica, " +
         std::to_string(r.steps) + " steps\n\n";
  out += "  step time         mean " + fmt("%.3f", st.mean * 1e3) + " ms   p50 " + fmt("%.3f", st.p50 * 1e3) + " ms   max " +
         fmt("%.3f", st.max * 1e3) + " ms\n";
  const StepBand band = step_band(r, s.hardware_bands);
  out += band.calibrated ? "  calibration band  +/- " + fmt("%.3f", band.sigma * 1e3) + " ms (" +
                               fmt("%.1f", band.relative() * 100.0) + "%)\n"
                         : "  calibration band  none: uncalibrated hardware\n";
  out += "  throughput        " + fmt("%.0f", per_gpu * s.hardware.gpu.count) + " prompt tokens/s per node, " +
         fmt("%.0f", per_gpu) + " per GPU\n\n";
  out += collectives_line(communication_summary(r), s.execution.micro_batches);
  out += "  time per step, mean over GPUs (ms)\n";
  const auto cats = time_by_category(r);
  for (const auto& [name, v] : cats.items()) {
    out += "    " + name + std::string(16 - std::min<std::size_t>(15, name.size()), ' ') + fmt("%8.3f", v.get<double>() * 1e3) +
           "  " + fmt("%5.1f", st.mean > 0 ? v.get<double>() / st.mean * 100.0 : 0.0) + "%\n";
  }
  return out;
}

}  // namespace ess
