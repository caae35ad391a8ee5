#include "sim/metrics/results.h"

#include "sim/metrics/bands.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/base/op_names.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"
namespace ess {

namespace {

constexpr std::array<OpCategory, kOpCategoryCount> kCategories = {
    OpCategory::gemm,        OpCategory::attention,  OpCategory::indexer,  OpCategory::norm,
    OpCategory::elementwise, OpCategory::collective, OpCategory::transfer,  OpCategory::host,
};

double percentile(std::vector<double> sorted, double p) {
  // Nearest rank: the smallest value with at least p of the samples at or below it.
  const auto n = sorted.size();
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
  return sorted[std::clamp<std::size_t>(rank, 1, n) - 1];
}

// Idle of one GPU in one step: the step time not spent in any category (waiting at collectives
// for the other GPUs, or finishing before the slowest GPU).
double idle_of(const GpuStepTimes& g, double step_time) {
  const double busy = std::accumulate(g.busy.begin(), g.busy.end(), 0.0);
  return std::max(0.0, step_time - busy);
}

nlohmann::ordered_json categories_json(const CategoryTimes& busy, double idle) {
  nlohmann::ordered_json j;
  for (auto c : kCategories) j[std::string(to_string(c))] = busy[static_cast<std::size_t>(c)];
  j["idle"] = idle;
  return j;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// A per-GPU step field summed over every step and every GPU.
double sum_over_gpu_steps(const RunResult& r, double GpuStepTimes::*field) {
  double sum = 0.0;
  for (const auto& step : r.gpu_steps) {
    for (const auto& g : step) sum += g.*field;
  }
  return sum;
}

// Prefetched bytes the selection did not use: the layer's prefetch bytes in proportion to its unused
// entries (every prefetched entry of a layer has the same size and is moved for every offloaded request).
double wasted_prefetch_bytes(const LayerTimes& lt) {
  return lt.prefetched > 0 ? lt.prefetch_bytes * (lt.prefetched - lt.prefetch_used) / lt.prefetched : 0.0;
}

nlohmann::ordered_json layer_offload_json(const RunResult& r, const LayerTimes& lt, bool prefetching) {
  const auto steps = static_cast<double>(r.steps);
  const double samples = steps * r.gpus;
  nlohmann::ordered_json o;
  // Per offloaded request (cache simulation), per step.
  o["misses_per_request"] = lt.misses / steps;
  o["misses_stderr"] = std::sqrt(lt.misses_var) / steps;
  o["hits_per_request"] = lt.hits / steps;
  // Per GPU, per step (every GPU added its own bytes each step).
  o["h2d_bytes"] = lt.h2d_bytes / samples;
  o["d2h_bytes"] = lt.d2h_bytes / samples;
  o["transfer_s"] = lt.transfer / samples;
  o["exposed_s"] = lt.exposed / samples;
  // Time queued behind other transfers is exposed but not transfer time: it hides nothing.
  const double hidden = lt.transfer - (lt.exposed - lt.fetch_queue_wait);
  o["hidden_s"] = hidden / samples;
  o["overlap_ratio"] = lt.transfer > 0 ? hidden / lt.transfer : 1.0;
  o["compute_lost_to_gather_s"] = lt.lost_to_gather / samples;
  nlohmann::ordered_json overlaps = nlohmann::ordered_json::object();
  const auto policies = overlap_policies();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (!overlap_is_concrete(i)) continue;
    overlaps[std::string(policies[i].name)] = i < lt.overlap_steps.size() ? lt.overlap_steps[i] : 0;
  }
  o["overlap_steps"] = std::move(overlaps);
  if (prefetching) {
    // Per offloaded request per step (entries); per GPU per step (bytes, times).
    o["prefetched_per_request"] = lt.prefetched / steps;
    o["prefetch_used_per_request"] = lt.prefetch_used / steps;
    o["prefetch_accuracy"] = lt.prefetched > 0 ? lt.prefetch_used / lt.prefetched : 0.0;
    o["prefetch_coverage"] = lt.misses > 0 ? lt.prefetch_used / lt.misses : 0.0;
    o["prefetch_bytes"] = lt.prefetch_bytes / samples;
    o["prefetch_wasted_bytes"] = wasted_prefetch_bytes(lt) / samples;
    o["prefetch_transfer_s"] = lt.prefetch_transfer / samples;
    o["prefetch_exposed_s"] = lt.prefetch_wait / samples;
    o["prefetch_late"] = lt.prefetch_late;
  }
  return o;
}

bool prefetches(const Scenario& s) {
  return s.cache.mode == CacheMode::offload &&
         registered(prefetch_policies(), "prefetch", s.cache.prefetch.policy).make()->prefetches();
}

// The prefetch block of the offload summary: what was prefetched, how much of it the selections
// used, what it cost on the link, and how much of its transfer the GPUs waited for.
nlohmann::ordered_json prefetch_summary(const Scenario& s, const RunResult& r, double misses) {
  const auto& c = s.cache.prefetch;
  double prefetched = 0.0;
  double used = 0.0;
  double bytes = 0.0;
  double wasted = 0.0;
  int late = 0;
  int count = 0;
  for (const auto& l : r.layers) {
    prefetched += l.prefetched;
    used += l.prefetch_used;
    bytes += l.prefetch_bytes;
    wasted += wasted_prefetch_bytes(l);
    late += l.prefetch_late;
    count += l.prefetches;
  }
  const auto steps = static_cast<double>(r.steps);
  const double samples = steps * r.gpus;
  const double transfer = sum_over_gpu_steps(r, &GpuStepTimes::prefetch_transfer);
  const double wait = sum_over_gpu_steps(r, &GpuStepTimes::prefetch_wait);
  const double h2d = std::accumulate(r.step_h2d_bytes.begin(), r.step_h2d_bytes.end(), 0.0);
  nlohmann::ordered_json o;
  o["policy"] = c.policy;
  o["predictor"] = c.predictor;
  o["lookahead"] = c.lookahead;
  o["buffer_entries"] = c.buffer_entries;
  // Per offloaded request per step, summed over layers.
  o["prefetched_per_request_per_step"] = prefetched / steps;
  o["used_per_request_per_step"] = used / steps;
  // accuracy: used / prefetched; coverage: misses fetched early / all misses.
  o["accuracy"] = prefetched > 0 ? used / prefetched : 0.0;
  o["coverage"] = misses > 0 ? used / misses : 0.0;
  // Per step, all GPUs.
  o["prefetch_bytes_per_step"] = bytes / steps;
  o["wasted_bytes_per_step"] = wasted / steps;
  o["on_demand_bytes_per_step"] = (h2d - bytes) / steps;
  // Per step, mean over GPUs: prefetch transfer time, the part the GPUs waited for, the rest hidden.
  o["transfer_s"] = transfer / samples;
  o["exposed_s"] = wait / samples;
  o["hidden_s"] = std::max(0.0, transfer - wait) / samples;
  // Prefetches not complete when their layer needed them.
  o["late"] = late;
  o["late_fraction"] = count > 0 ? static_cast<double>(late) / count : 0.0;
  // On-demand fetches' time queued behind other transfers of their GPU (prefetches under a shared queue).
  o["on_demand_queue_s"] = sum_over_gpu_steps(r, &GpuStepTimes::fetch_queue_wait) / samples;
  return o;
}

}  // namespace

nlohmann::ordered_json offload_summary(const Scenario& s, const RunResult& r) {
  const auto& p = r.memory.placement;
  const auto& c = s.cache;
  double misses = 0.0;
  double var = 0.0;
  for (const auto& l : r.layers) {
    misses += l.misses;
    var += l.misses_var;
  }
  const double transfer = sum_over_gpu_steps(r, &GpuStepTimes::transfer);
  const double exposed = sum_over_gpu_steps(r, &GpuStepTimes::exposed);
  const double lost = sum_over_gpu_steps(r, &GpuStepTimes::lost_to_gather);
  const double writeback_wait = sum_over_gpu_steps(r, &GpuStepTimes::writeback_wait);
  const double samples = static_cast<double>(r.steps) * r.gpus;
  const double total_time = std::accumulate(r.step_time.begin(), r.step_time.end(), 0.0);
  const double h2d = std::accumulate(r.step_h2d_bytes.begin(), r.step_h2d_bytes.end(), 0.0);
  const double d2h = std::accumulate(r.step_d2h_bytes.begin(), r.step_d2h_bytes.end(), 0.0);
  const auto& pcie = s.hardware.pcie;
  nlohmann::ordered_json o;
  o["pool_ratio"] = c.pool_ratio ? nlohmann::ordered_json(*c.pool_ratio) : nlohmann::ordered_json(nullptr);
  o["pool_entries_per_request_layer"] = p.pool_entries;
  o["pinned_recent"] = c.pinned_recent;
  o["eviction"] = c.eviction;
  o["transfer_path"] = std::string(to_string(c.transfer));
  o["overlap"] = c.overlap;
  o["access_model"] = c.access.model;
  o["sampled_requests"] = c.sampled_requests;
  o["offloaded_requests_per_gpu"] = p.offloaded;
  // Memory protection: requests kept GPU-only because host memory passed its threshold; all are
  // admitted with the batch, at step 0.
  o["fallback_requests_per_gpu"] = p.fallback;
  o["fallback_at_step"] = p.fallback > 0 ? nlohmann::ordered_json(0) : nlohmann::ordered_json(nullptr);
  o["host_memory"] = {{"capacity_per_socket", p.host_capacity_per_socket.value()},
                      {"threshold", c.host_memory_threshold},
                      {"latent_cache_per_socket", p.host_latent_per_socket.value()}};
  if (c.nvme) o["nvme"] = {{"latent_cache_per_node", p.nvme_latent_per_node.value()}, {"cold_fraction", p.cold_fraction}};
  // Per step, per offloaded request, summed over layers (cache simulation, with its sampling error).
  o["misses_per_request_per_step"] = misses / static_cast<double>(r.steps);
  o["misses_stderr"] = std::sqrt(var) / static_cast<double>(r.steps);
  // Per step, all GPUs.
  o["h2d_bytes_per_step"] = h2d / static_cast<double>(r.steps);
  o["d2h_bytes_per_step"] = d2h / static_cast<double>(r.steps);
  // Per step, mean over GPUs.
  o["transfer_s"] = transfer / samples;
  o["exposed_s"] = exposed / samples;
  const double hidden = transfer - (exposed - sum_over_gpu_steps(r, &GpuStepTimes::fetch_queue_wait));
  o["hidden_s"] = hidden / samples;
  o["overlap_ratio"] = transfer > 0 ? hidden / transfer : 1.0;
  o["compute_lost_to_gather_s"] = lost / samples;
  o["writeback_wait_s"] = writeback_wait / samples;
  // Share of each GPU link's capacity used over the run, per direction.
  o["pcie_utilization"] = {{"h2d", total_time > 0 ? h2d / r.gpus / (total_time * pcie.h2d_bandwidth.value()) : 0.0},
                           {"d2h", total_time > 0 ? d2h / r.gpus / (total_time * pcie.d2h_bandwidth.value()) : 0.0}};
  if (prefetches(s)) o["prefetch"] = prefetch_summary(s, r, misses);
  return o;
}

nlohmann::ordered_json communication_summary(const RunResult& r) {
  const double comm = sum_over_gpu_steps(r, &GpuStepTimes::comm);
  const double exposed = sum_over_gpu_steps(r, &GpuStepTimes::comm_exposed);
  const double lost = sum_over_gpu_steps(r, &GpuStepTimes::lost_to_collectives);
  const double samples = static_cast<double>(r.steps) * r.gpus;
  nlohmann::ordered_json o;
  // Per step, mean over GPUs: collectives from arrival to end (both micro-batches), the part the
  // compute stream waited for, and the rest (hidden behind the other micro-batch's compute); the
  // compute time lost to the SMs collectives held beside it (counted as collectives).
  o["collectives_s"] = comm / samples;
  o["exposed_s"] = exposed / samples;
  o["hidden_s"] = std::max(0.0, comm - exposed) / samples;
  o["hidden_ratio"] = comm > 0 ? std::max(0.0, comm - exposed) / comm : 0.0;
  o["compute_lost_to_collectives_s"] = lost / samples;
  return o;
}

std::string collectives_line(const nlohmann::ordered_json& c, int micro_batches) {
  if (c["collectives_s"].get<double>() <= 0) return "";
  const double lost = c["compute_lost_to_collectives_s"].get<double>();
  return "  collectives       " + fmt("%8.3f", c["collectives_s"].get<double>() * 1e3) + " ms per step: " +
         fmt("%.3f", c["hidden_s"].get<double>() * 1e3) + " hidden, " + fmt("%.3f", c["exposed_s"].get<double>() * 1e3) +
         " exposed" + (micro_batches == 2 ? " (two-batch overlap)" : " (one micro-batch)") +
         (lost > 0 ? "; compute beside them slowed " + fmt("%.3f", lost * 1e3) + " ms by their SMs" : "") + "\n\n";
}

StepStats step_stats(const std::vector<double>& t) {
  StepStats s;
  if (t.empty()) return s;
  std::vector<double> sorted = t;
  std::sort(sorted.begin(), sorted.end());
  s.mean = mean(t);
  s.p50 = percentile(sorted, 0.50);
  s.p99 = percentile(sorted, 0.99);
  s.min = sorted.front();
  s.max = sorted.back();
  return s;
}

nlohmann::ordered_json time_by_category(const RunResult& r) {
  CategoryTimes busy{};
  double idle = 0.0;
  double n = 0.0;
  for (std::size_t s = 0; s < r.gpu_steps.size(); ++s) {
    for (const auto& g : r.gpu_steps[s]) {
      for (std::size_t c = 0; c < busy.size(); ++c) busy[c] += g.busy[c];
      idle += idle_of(g, r.step_time[s]);
      n += 1.0;
    }
  }
  for (auto& b : busy) b /= n;
  return categories_json(busy, idle / n);
}

nlohmann::ordered_json results_head(const Scenario& s, const std::string& version, const std::string& scenario_sha256) {
  nlohmann::ordered_json j;
  j["schema"] = kResultsSchema;
  j["ess_sim_version"] = version;
  j["scenario_sha256"] = scenario_sha256;
  j["scenario"] = {{"name", s.name}, {"file", s.origin}};
  j["seed"] = s.seed;
  return j;
}

void add_machine(nlohmann::ordered_json& summary, const Scenario& s) {
  summary["model"] = s.model.name;
  summary["hardware"] = s.hardware.name;
  // How the hardware's cost models were calibrated (null: a datasheet preset, uncalibrated).
  summary["hardware_calibration"] = s.hardware_calibration.empty() ? nlohmann::ordered_json(nullptr)
                                                                   : nlohmann::ordered_json(s.hardware_calibration);
}

void add_layout(nlohmann::ordered_json& summary, const Scenario& s, const RunResult& r) {
  // The expert-load model's parameters (sim/graph/expert_routing.h).
  summary["expert_load"] = {{"skew", s.workload.expert_skew}, {"drift", s.workload.expert_drift}};
  summary["gpus"] = r.gpus;
  summary["gpus_per_node"] = s.hardware.gpu.count;
  summary["parallelism"] = {{"attention_dp", s.parallelism.attention_dp},
                            {"tensor_parallel", s.parallelism.tensor_parallel},
                            {"expert_parallel", s.parallelism.expert_parallel},
                            {"moe_tensor_parallel", s.parallelism.moe_tensor_parallel},
                            {"redundant_experts", s.parallelism.redundant_experts}};
}

std::string run_title(const Scenario& s, const RunResult& r, const std::string& what) {
  std::string out = (s.name.empty() ? s.origin : s.name) + ": " + what + s.model.name + " on " + std::to_string(r.gpus) + " x " +
                    s.hardware.name + " (" + s.parallelism.describe() + ")\n";
  out += "  hardware " + s.hardware.name + ": " +
         (s.hardware_calibration.empty()
              ? "uncalibrated (datasheet numbers and estimated efficiencies; `ess-sim calibrate` fits a profile)"
              : s.hardware_calibration) +
         "\n";
  return out;
}

nlohmann::ordered_json steps_json(const RunResult& r) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < r.step_time.size(); ++k) {
    CategoryTimes busy{};
    double idle = 0.0;
    for (const auto& g : r.gpu_steps[k]) {
      for (std::size_t c = 0; c < busy.size(); ++c) busy[c] += g.busy[c] / r.gpus;
      idle += idle_of(g, r.step_time[k]) / r.gpus;
    }
    double comm = 0.0;
    double exposed = 0.0;
    for (const auto& g : r.gpu_steps[k]) {
      comm += g.comm / r.gpus;
      exposed += g.comm_exposed / r.gpus;
    }
    steps.push_back({{"step", k}, {"context", r.step_context[k]}, {"time_s", r.step_time[k]},
                     {"by_category_s", categories_json(busy, idle)},
                     {"collectives_s", {{"total", comm}, {"exposed", exposed}, {"hidden", std::max(0.0, comm - exposed)}}}});
  }

  return steps;
}

nlohmann::ordered_json layers_json(const Scenario& s, const RunResult& r) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  const double samples = static_cast<double>(r.steps) * r.gpus;  // per step per GPU averages
  for (std::size_t l = 0; l < r.layers.size(); ++l) {
    const auto& lt = r.layers[l];
    CategoryTimes busy{};
    for (std::size_t c = 0; c < busy.size(); ++c) busy[c] = lt.busy[c] / samples;
    const double time = std::accumulate(busy.begin(), busy.end(), 0.0) + lt.wait / samples;
    const bool head = lt.kind == layerkind::head;
    nlohmann::ordered_json layer = {{"layer", head ? -1 : static_cast<int>(l)},
                                    {"kind", lt.kind},
                                    {"time_s", time},
                                    {"by_category_s", categories_json(busy, lt.wait / samples)},
                                    {"flops", lt.flops.value() / samples},
                                    {"hbm_bytes", lt.bytes.value() / samples}};
    if (r.offload && !head) layer["offload"] = layer_offload_json(r, lt, prefetches(s));
    layers.push_back(layer);
  }
  return layers;
}

nlohmann::ordered_json results_json(const Scenario& s, const RunResult& r, const std::string& version,
                                    const std::string& scenario_sha256) {
  const StepStats st = step_stats(r.step_time);
  const double acceptance = s.workload.mtp.acceptance;
  const double per_gpu = static_cast<double>(r.batch_per_gpu) * acceptance / st.mean;

  nlohmann::ordered_json j = results_head(s, version, scenario_sha256);
  nlohmann::ordered_json sum;
  add_machine(sum, s);
  // The serving engine and what it chose (scenarios/engines/).
  sum["engine"] = engine_summary(s.engine, r.batch_per_gpu * s.parallelism.tensor_parallel);
  add_layout(sum, s, r);
  sum["batch_per_gpu"] = r.batch_per_gpu;
  sum["batch_is_max"] = !s.workload.batch_per_gpu.has_value();
  sum["context_length"] = s.workload.context_length;
  sum["mtp_depth"] = s.workload.mtp.depth;
  sum["accepted_tokens_per_step"] = acceptance;
  sum["steps"] = r.steps;
  sum["step_time_s"] = {{"mean", st.mean}, {"p50", st.p50}, {"p99", st.p99}, {"min", st.min}, {"max", st.max}};
  // Throughput = GPUs x batch per GPU x accepted tokens per step / mean step time.
  sum["tokens_per_s_per_gpu"] = per_gpu;
  sum["tokens_per_s_node"] = per_gpu * s.hardware.gpu.count;
  sum["tokens_per_s_total"] = per_gpu * r.gpus;
  sum["otps_per_request"] = acceptance / st.mean;
  if (const auto& c = s.workload.prefill_chunk) {
    // Every step also prefills a chunk per GPU (per replica under TP): its prompt tokens per second.
    sum["prefill_chunk"] = {{"tokens", c->tokens},
                            {"cached", c->cached},
                            {"prompt_tokens_per_s_per_gpu", static_cast<double>(c->tokens) / st.mean}};
  }
  // The calibration band of the step time and throughput (sim/metrics/bands.h).
  const StepBand band = step_band(r, s.hardware_bands);
  sum["band"] = band_json(band, per_gpu);
  nlohmann::ordered_json mem;
  mem["hbm_capacity"] = r.memory.capacity.value();
  for (const auto& line : r.memory.lines) mem[line.name] = line.bytes.value();
  mem["free"] = r.memory.free().value();
  sum["memory_gpu_bytes"] = mem;
  sum["execution"] = {{"micro_batches", s.execution.micro_batches}, {"step_overhead_s", s.execution.step_overhead.value()}};
  sum["communication"] = communication_summary(r);
  sum["time_by_category_s"] = time_by_category(r);
  if (r.offload) sum["offload"] = offload_summary(s, r);
  sum["simgrid_activities"] = r.activities;
  j["summary"] = sum;
  j["band_by_params"] = band_breakdown_json(band, s.hardware_bands);

  j["steps"] = steps_json(r);
  j["layers"] = layers_json(s, r);
  return j;
}

std::string results_table(const Scenario& s, const RunResult& r) {
  const StepStats st = step_stats(r.step_time);
  const double acceptance = s.workload.mtp.acceptance;
  const double per_gpu = static_cast<double>(r.batch_per_gpu) * acceptance / st.mean;
  std::string out = run_title(s, r, "");
  const std::int64_t replica_batch = r.batch_per_gpu * s.parallelism.tensor_parallel;  // a CUDA graph runs per replica
  const std::int64_t graph = s.engine.graph_batch(replica_batch);
  out += "  engine " + s.engine.name + " (" + s.engine.version + "): MLA kernel " + std::string(s.engine.mla_kernel->name) +
         " (" + std::to_string(s.engine.mla_kernel->row_tile) + "-row tiles, " + std::string(to_string(s.engine.mla_kernel->mma)) +
         " MMA), " + fmt("%.2f", s.engine.kernel_gap.value() * 1e6) + " us between kernels, EPLB " +
         (s.engine.eplb ? "on" : "off") +
         (graph > replica_batch
              ? ", CUDA graph pads " + std::to_string(replica_batch) + " requests to " + std::to_string(graph)
              : std::string()) +
         (s.model.moe ? ", expert skew " + fmt("%.3f", s.workload.expert_skew) + " / drift " + fmt("%.3f", s.workload.expert_drift)
                      : std::string()) +
         "\n";
  out += "  context " + std::to_string(s.workload.context_length) + " tokens, MTP depth " +
         std::to_string(s.workload.mtp.depth) + " (" + fmt("%.2f", acceptance) + " accepted per step), " +
         std::to_string(r.steps) + " steps\n\n";
  out += "  batch per GPU     " + std::to_string(r.batch_per_gpu) +
         (s.workload.batch_per_gpu ? "\n" : "  (largest that fits)\n");
  out += "  step time         mean " + fmt("%.3f", st.mean * 1e3) + " ms   p50 " + fmt("%.3f", st.p50 * 1e3) +
         " ms   p99 " + fmt("%.3f", st.p99 * 1e3) + " ms\n";
  const StepBand band = step_band(r, s.hardware_bands);
  if (band.calibrated) {
    out += "  calibration band  +/- " + fmt("%.3f", band.sigma * 1e3) + " ms (" + fmt("%.1f", band.relative() * 100.0) +
           "%, one sigma of the fitted models' cross-validated errors)";
    out += band.unbanded_fraction > 0.005
               ? "; " + fmt("%.0f", band.unbanded_fraction * 100.0) + "% of the step is priced by models without a band\n"
               : "\n";
  } else {
    out += "  calibration band  none: uncalibrated hardware (a profile from `ess-sim calibrate` gives one)\n";
  }
  out += "  throughput        " + fmt("%.0f", per_gpu * s.hardware.gpu.count) + " tokens/s per node, " +
         fmt("%.1f", per_gpu) + " per GPU, " + fmt("%.2f", acceptance / st.mean) + " per request\n";
  if (const auto& c = s.workload.prefill_chunk) {
    out += "  prefill chunk     " + std::to_string(c->tokens) + " prompt tokens per GPU per step after " + std::to_string(c->cached) +
           " cached: " + fmt("%.0f", static_cast<double>(c->tokens) / st.mean) + " prompt tokens/s per GPU beside the decode tokens\n";
  }
  out += "\n";
  out += "  memory per GPU (GB)\n";
  for (const auto& line : r.memory.lines) out += "    " + line.name + std::string(16 - std::min<std::size_t>(15, line.name.size()), ' ') + fmt("%8.2f", line.bytes.value() / 1e9) + "\n";
  out += "    free            " + fmt("%8.2f", r.memory.free().value() / 1e9) + "   of " +
         fmt("%.2f", r.memory.capacity.value() / 1e9) + " HBM\n\n";
  if (r.offload) {
    const auto o = offload_summary(s, r);
    out += "  offload (" + o["transfer_path"].get<std::string>() + ", overlap " + o["overlap"].get<std::string>() + ", pool " +
           std::to_string(o["pool_entries_per_request_layer"].get<std::int64_t>()) + " entries per request and layer)\n";
    out += "    misses          " + fmt("%8.0f", o["misses_per_request_per_step"].get<double>()) + " per request per step (+/- " +
           fmt("%.0f", o["misses_stderr"].get<double>()) + " sampling error)\n";
    out += "    PCIe h2d        " + fmt("%8.3f", o["h2d_bytes_per_step"].get<double>() / r.gpus / 1e9) + " GB per GPU per step, " +
           fmt("%.1f", o["pcie_utilization"]["h2d"].get<double>() * 100) + "% of the link\n";
    out += "    fetch time      " + fmt("%8.3f", o["transfer_s"].get<double>() * 1e3) + " ms per step: " +
           fmt("%.3f", o["hidden_s"].get<double>() * 1e3) + " hidden, " + fmt("%.3f", o["exposed_s"].get<double>() * 1e3) +
           " exposed, " + fmt("%.3f", o["compute_lost_to_gather_s"].get<double>() * 1e3) + " compute lost to gathers\n";
    if (o.contains("prefetch")) {
      const auto& pf = o.at("prefetch");
      out += "    prefetch        " + pf.at("policy").get<std::string>() + " (" + pf.at("predictor").get<std::string>() +
             ", " + std::to_string(pf.at("lookahead").get<int>()) + " layer(s) ahead): accuracy " +
             fmt("%.1f", pf.at("accuracy").get<double>() * 100) + "%, coverage " +
             fmt("%.1f", pf.at("coverage").get<double>() * 100) + "%, " +
             fmt("%.3f", pf.at("wasted_bytes_per_step").get<double>() / r.gpus / 1e9) + " GB per GPU per step wasted\n";
      out += "    prefetch time   " + fmt("%8.3f", pf.at("transfer_s").get<double>() * 1e3) + " ms per step: " +
             fmt("%.3f", pf.at("hidden_s").get<double>() * 1e3) + " hidden, " +
             fmt("%.3f", pf.at("exposed_s").get<double>() * 1e3) + " exposed (" + std::to_string(pf.at("late").get<int>()) +
             " late); on-demand fetches queued " + fmt("%.3f", pf.at("on_demand_queue_s").get<double>() * 1e3) + " ms\n";
    }
    if (o["fallback_requests_per_gpu"].get<std::int64_t>() > 0) {
      out += "    GPU-only        " + std::to_string(o["fallback_requests_per_gpu"].get<std::int64_t>()) +
             " requests per GPU (host memory above the threshold)\n";
    }
    out += "\n";
  }
  out += collectives_line(communication_summary(r), s.execution.micro_batches);
  out += "  time per step, mean over GPUs (ms)\n";
  const auto cats = time_by_category(r);
  for (const auto& [name, v] : cats.items()) {
    const double ms = v.get<double>() * 1e3;
    out += "    " + name + std::string(16 - std::min<std::size_t>(15, name.size()), ' ') + fmt("%8.3f", ms) + "  " +
           fmt("%5.1f", st.mean > 0 ? v.get<double>() / st.mean * 100.0 : 0.0) + "%\n";
  }
  return out;
}

}  // namespace ess
