#include "sim/sweep/spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"
#include "sim/config/reader.h"
#include "sim/config/scenario.h"
#include "sim/io/sha256.h"

namespace ess {

namespace {

// The engine's keys that decode summaries show as numbers (sim/config/engine_config.h engine_keys()),
// then what the engine computes (its CUDA-graph batch).
std::vector<SweepMetric> engine_metrics() {
  std::vector<SweepMetric> out;
  for (const EngineKey& key : engine_keys()) {
    if (!key.number || key.shown == KeyShown::prefill) continue;
    const std::string name(key.summary);
    out.push_back({"engine." + name, "engine_" + name});
  }
  out.push_back({"engine.graph_batch", "engine_graph_batch"});
  return out;
}

}  // namespace

const std::vector<SweepMetric>& known_sweep_metrics() {
  static const std::vector<SweepMetric> metrics = [] {
    std::vector<SweepMetric> m = {
      {"gpus", "gpus"},
      {"gpus_per_node", "gpus_per_node"},
      {"parallelism.attention_dp", "attention_dp"},
      {"parallelism.tensor_parallel", "tensor_parallel"},
      {"parallelism.expert_parallel", "expert_parallel"},
      {"parallelism.moe_tensor_parallel", "moe_tensor_parallel"},
      {"parallelism.redundant_experts", "redundant_experts"},
      {"batch_per_gpu", sweepcol::batch_per_gpu},
      {"context_length", sweepcol::context_length},
      {"mtp_depth", "mtp_depth"},
      {"accepted_tokens_per_step", "accepted_tokens_per_step"},
      {"steps", "steps"},
      {"step_time_s.mean", sweepcol::step_time_mean},
      {"step_time_s.p50", "step_time_p50_s"},
      {"step_time_s.p99", "step_time_p99_s"},
      {"step_time_s.min", "step_time_min_s"},
      {"step_time_s.max", "step_time_max_s"},
      {"tokens_per_s_per_gpu", sweepcol::tokens_per_gpu},
      {"tokens_per_s_node", "tokens_per_s_node"},
      {"tokens_per_s_total", "tokens_per_s_total"},
      {"otps_per_request", sweepcol::otps_per_request},
      {"band.sigma_s", "step_time_band_s"},
      {"band.relative", "step_time_band_relative"},
      {"band.step_time_low_s", "step_time_band_low_s"},
      {"band.step_time_high_s", "step_time_band_high_s"},
      {"band.tokens_per_s_per_gpu_low", "tokens_per_s_per_gpu_band_low"},
      {"band.tokens_per_s_per_gpu_high", "tokens_per_s_per_gpu_band_high"},
      {"band.unbanded_fraction", "band_unbanded_fraction"},
      {"memory_gpu_bytes.hbm_capacity", "memory_hbm_capacity_bytes"},
      {"memory_gpu_bytes.weights", "memory_weights_bytes"},
      {"memory_gpu_bytes.kv_cache", "memory_kv_cache_bytes"},
      {"memory_gpu_bytes.latent_cache", "memory_latent_cache_bytes"},
      {"memory_gpu_bytes.latent_pool", "memory_latent_pool_bytes"},
      {"memory_gpu_bytes.transfer_buffers", "memory_transfer_buffers_bytes"},
      {"memory_gpu_bytes.indexer_cache", "memory_indexer_cache_bytes"},
      {"memory_gpu_bytes.activations", "memory_activations_bytes"},
      {"memory_gpu_bytes.runtime", "memory_runtime_bytes"},
      {"memory_gpu_bytes.reserve", "memory_reserve_bytes"},
      {"memory_gpu_bytes.free", "memory_free_bytes"},
      {"execution.micro_batches", "micro_batches"},
      {"execution.step_overhead_s", "step_overhead_s"},
    };
    const std::vector<SweepMetric> engine = engine_metrics();
    m.insert(m.end(), engine.begin(), engine.end());
    const std::vector<SweepMetric> rest = {
      {"expert_load.skew", "expert_skew"},
      {"expert_load.drift", "expert_drift"},
      {"communication.collectives_s", "collectives_s"},
      {"communication.exposed_s", "collectives_exposed_s"},
      {"communication.hidden_s", "collectives_hidden_s"},
      {"communication.hidden_ratio", "collectives_hidden_ratio"},
      {"communication.compute_lost_to_collectives_s", "compute_lost_to_collectives_s"},
      {"time_by_category_s.gemm", sweepcol::time_gemm},
      {"time_by_category_s.attention", sweepcol::time_attention},
      {"time_by_category_s.indexer", sweepcol::time_indexer},
      {"time_by_category_s.norm", sweepcol::time_norm},
      {"time_by_category_s.elementwise", sweepcol::time_elementwise},
      {"time_by_category_s.collectives", sweepcol::time_collectives},
      {"time_by_category_s.transfers", sweepcol::time_transfers},
      {"time_by_category_s.host", sweepcol::time_host},
      {"time_by_category_s.idle", sweepcol::time_idle},
      {"offload.pool_ratio", "pool_ratio"},
      {"offload.pool_entries_per_request_layer", "pool_entries_per_request_layer"},
      {"offload.pinned_recent", "pinned_recent_tokens"},
      {"offload.sampled_requests", "sampled_requests"},
      {"offload.offloaded_requests_per_gpu", "offloaded_requests_per_gpu"},
      {"offload.fallback_requests_per_gpu", "fallback_requests_per_gpu"},
      {"offload.fallback_at_step", "fallback_at_step"},
      {"offload.host_memory.capacity_per_socket", "host_memory_capacity_per_socket_bytes"},
      {"offload.host_memory.threshold", "host_memory_threshold"},
      {"offload.host_memory.latent_cache_per_socket", "host_latent_cache_per_socket_bytes"},
      {"offload.nvme.latent_cache_per_node", "nvme_latent_cache_per_node_bytes"},
      {"offload.nvme.cold_fraction", "nvme_cold_fraction"},
      {"offload.misses_per_request_per_step", "misses_per_request_per_step"},
      {"offload.misses_stderr", "misses_stderr"},
      {"offload.h2d_bytes_per_step", "h2d_bytes_per_step"},
      {"offload.d2h_bytes_per_step", "d2h_bytes_per_step"},
      {"offload.transfer_s", "offload_transfer_s"},
      {"offload.exposed_s", "offload_exposed_s"},
      {"offload.hidden_s", sweepcol::offload_hidden},
      {"offload.overlap_ratio", "offload_overlap_ratio"},
      {"offload.compute_lost_to_gather_s", "compute_lost_to_gather_s"},
      {"offload.writeback_wait_s", "writeback_wait_s"},
      {"offload.pcie_utilization.h2d", sweepcol::pcie_h2d},
      {"offload.pcie_utilization.d2h", sweepcol::pcie_d2h},
      {"simgrid_activities", "simgrid_activities"},
      {"prefill_chunk.tokens", "prefill_chunk_tokens"},
      {"prefill_chunk.cached", "prefill_chunk_cached_tokens"},
      {"prefill_chunk.prompt_tokens_per_s_per_gpu", "prefill_chunk_prompt_tokens_per_s_per_gpu"},
      // A serving run's fields (results.json "serving", sim/serving/serving_metrics.cpp): "serving."
      // paths are read there instead of "summary".
      {"serving.requests.completed", "serving_completed_requests"},
      {"serving.requests.incomplete", "serving_incomplete_requests"},
      {"serving.ttft_s.mean", "serving_ttft_mean_s"},
      {"serving.ttft_s.p99", sweepcol::serving_ttft_p99},
      {"serving.tpot_s.mean", "serving_tpot_mean_s"},
      {"serving.tpot_s.p99", sweepcol::serving_tpot_p99},
      {"serving.itl_s.p99", "serving_itl_p99_s"},
      {"serving.e2el_s.p99", "serving_e2el_p99_s"},
      {"serving.queue_wait_s.mean", "serving_queue_wait_mean_s"},
      {"serving.throughput.output_tokens_per_s", sweepcol::serving_throughput},
      {"serving.throughput.output_tokens_per_s_per_gpu", "serving_output_tokens_per_s_per_gpu"},
      {"serving.throughput.requests_per_s", "serving_requests_per_s"},
      {"serving.goodput.requests_per_s", sweepcol::serving_goodput},
      {"serving.goodput.good_share", "serving_good_share"},
      {"serving.energy.per_output_token_j", "serving_energy_per_output_token_j"},
      {"serving.cost.per_million_output_tokens_usd", "serving_cost_per_million_output_tokens_usd"},
    };
    m.insert(m.end(), rest.begin(), rest.end());
    return m;
  }();
  return metrics;
}

const std::vector<std::string>& default_sweep_metric_paths() {
  static const std::vector<std::string> paths = {
      "batch_per_gpu",          "step_time_s.mean",       "step_time_s.p99",
      "tokens_per_s_per_gpu",   "tokens_per_s_total",     "otps_per_request",
      "memory_gpu_bytes.free",  "offload.exposed_s",      "offload.pcie_utilization.h2d",
  };
  return paths;
}

namespace {

// Values from a range are computed as from + i x step and written with 12 significant digits, so
// that 0.1 + 2 x 0.1 is 0.3 and not 0.30000000000000004 (the --set value a user would type).
double tidy(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.12g", v);
  return std::strtod(text, nullptr);
}

nlohmann::json number_value(double v, bool integer) {
  if (integer) return static_cast<std::int64_t>(std::llround(v));
  if (std::floor(v) == v && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
  return v;
}

std::vector<nlohmann::json> read_values(ObjectReader& a) {
  std::string source;
  const bool has_values = a.has("values");
  const bool has_range = a.has("range");
  const bool has_log = a.has("log_range");
  const int forms = int{has_values} + int{has_range} + int{has_log};
  if (forms != 1) {
    a.fail("", forms == 0 ? "an axis needs one of \"values\", \"range\" or \"log_range\""
                          : "an axis takes only one of \"values\", \"range\" or \"log_range\"");
  }
  std::vector<nlohmann::json> values;
  if (has_values) {
    const nlohmann::json* v = a.take("values", source);
    if (!v->is_array() || v->empty()) a.fail("values", "expected a non-empty array of values, got " + describe_json(*v));
    // Any JSON value, even an object (replacing a whole section) or null (unsetting an optional
    // field); repeats are allowed, zipped axes need them.
    values.assign(v->begin(), v->end());
    return values;
  }
  if (has_range) {
    ObjectReader r = a.object("range");
    const double from = r.number("from", Range::any());
    const double to = r.number("to", Range::any());
    const double step = r.number("step", Range::positive());
    r.finish();
    if (to < from) a.fail("range", "\"to\" (" + nlohmann::json(to).dump() + ") must not be below \"from\" (" +
                                        nlohmann::json(from).dump() + ")");
    // The end is included when it lies within a millionth of a step of a point (0.1 to 0.3 step 0.1).
    const double count = std::floor((to - from) / step + 1e-6) + 1.0;
    if (count > static_cast<double>(kMaxSweepPoints)) {
      a.fail("range", "expands to " + nlohmann::json(count).dump() + " values, above the limit of " +
                          std::to_string(kMaxSweepPoints));
    }
    const bool integer = std::floor(from) == from && std::floor(step) == step;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
      values.push_back(number_value(tidy(from + static_cast<double>(i) * step), integer));
    }
    return values;
  }
  ObjectReader r = a.object("log_range");
  const double from = r.number("from", Range::positive());
  const double to = r.number("to", Range::positive());
  const std::int64_t points = r.integer("points", Range::closed(2, static_cast<double>(kMaxSweepPoints)));
  bool integer = false;
  if (const nlohmann::json* j = r.take("integer", source); j != nullptr && !j->is_null()) {
    if (!j->is_boolean()) r.fail("integer", "expected true or false, got " + describe_json(*j));
    integer = j->get<bool>();
  }
  r.finish();
  if (to <= from) a.fail("log_range", "\"to\" (" + nlohmann::json(to).dump() + ") must be above \"from\" (" +
                                          nlohmann::json(from).dump() + ")");
  // Geometric: from x (to / from)^(i / (points - 1)); with "integer" rounded to the nearest integer,
  // and a value equal to the previous one after rounding dropped.
  for (std::int64_t i = 0; i < points; ++i) {
    const double v = i == points - 1 ? to
                                     : from * std::pow(to / from, static_cast<double>(i) / static_cast<double>(points - 1));
    const nlohmann::json value = number_value(integer ? std::round(v) : tidy(v), integer);
    if (!values.empty() && values.back() == value) continue;
    values.push_back(value);
  }
  return values;
}

// The axes, in order (/axes); returns each path's index.
std::map<std::string, std::size_t> read_axes(ObjectReader& r, const Origins& origins, SweepSpec& spec) {
  std::string source;
  const nlohmann::json* axes = r.take("axes", source);
  if (axes == nullptr || axes->is_null()) r.fail("axes", r.missing("axes") + ": expected an array of axes");
  if (!axes->is_array() || axes->empty()) r.fail("axes", "expected a non-empty array of axes, got " + describe_json(*axes));
  std::map<std::string, std::size_t> axis_index;
  for (std::size_t i = 0; i < axes->size(); ++i) {
    const std::string pointer = pointer_append("/axes", std::to_string(i));
    ObjectReader a((*axes)[i], pointer, origins);
    SweepAxis axis;
    axis.path = a.text("path");
    try {
      (void)parse_override(axis.path + "=0");
    } catch (const ConfigError& e) {
      a.fail("path", "\"" + axis.path + "\" is not a dotted scenario path: " + e.message());
    }
    if (axis.path.find('=') != std::string::npos) a.fail("path", "a path has no '=' (the values come from the axis)");
    if (axis_index.contains(axis.path)) a.fail("path", "axis \"" + axis.path + "\" is listed twice");
    axis.values = read_values(a);
    a.finish();
    axis_index[axis.path] = spec.axes.size();
    spec.axes.push_back(std::move(axis));
  }
  return axis_index;
}

// The zip groups (lists of axis paths that advance together) and the dimensions they make, in the
// order of their first axis; the points they expand to, within kMaxSweepPoints.
void read_dimensions(ObjectReader& r, const std::string& origin, const std::map<std::string, std::size_t>& axis_index,
                     SweepSpec& spec) {
  std::string source;
  std::vector<int> group_of(spec.axes.size(), -1);
  std::vector<std::vector<std::size_t>> groups;
  if (const nlohmann::json* zip = r.take("zip", source); zip != nullptr && !zip->is_null()) {
    if (!zip->is_array()) r.fail("zip", "expected an array of lists of axis paths, got " + describe_json(*zip));
    std::vector<std::string> paths;
    for (const auto& a : spec.axes) paths.push_back(a.path);
    for (std::size_t g = 0; g < zip->size(); ++g) {
      const std::string gp = pointer_append("/zip", std::to_string(g));
      const auto& group = (*zip)[g];
      if (!group.is_array() || group.size() < 2) {
        throw ConfigError(origin, gp, "expected a list of at least two axis paths, got " + describe_json(group));
      }
      std::vector<std::size_t> members;
      for (std::size_t k = 0; k < group.size(); ++k) {
        const std::string kp = pointer_append(gp, std::to_string(k));
        if (!group[k].is_string()) throw ConfigError(origin, kp, "expected an axis path, got " + describe_json(group[k]));
        const std::string path = group[k].get<std::string>();
        const auto it = axis_index.find(path);
        if (it == axis_index.end()) {
          throw ConfigError(origin, kp, "\"" + path + "\" is not an axis" + did_you_mean(path, paths) +
                                            "; the axes are " + quoted_list(paths));
        }
        if (group_of[it->second] >= 0) {
          throw ConfigError(origin, kp, "axis \"" + path + "\" is already zipped (in /zip/" +
                                            std::to_string(group_of[it->second]) + ")");
        }
        const auto& first = spec.axes[members.empty() ? it->second : members.front()];
        if (spec.axes[it->second].values.size() != first.values.size()) {
          throw ConfigError(origin, kp, "zipped axes need equal lengths: \"" + path + "\" has " +
                                            std::to_string(spec.axes[it->second].values.size()) + " values, \"" +
                                            first.path + "\" has " + std::to_string(first.values.size()));
        }
        group_of[it->second] = static_cast<int>(g);
        members.push_back(it->second);
      }
      groups.push_back(std::move(members));
    }
  }
  // Dimensions in the order of their first axis.
  std::set<int> placed;
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    if (group_of[i] < 0) {
      spec.dimensions.push_back({i});
    } else if (placed.insert(group_of[i]).second) {
      auto members = groups[static_cast<std::size_t>(group_of[i])];
      std::sort(members.begin(), members.end());
      spec.dimensions.push_back(std::move(members));
    }
  }
  double total = 1.0;
  for (const auto& d : spec.dimensions) total *= static_cast<double>(spec.axes[d.front()].values.size());
  if (total > static_cast<double>(kMaxSweepPoints)) {
    r.fail("axes", "the axes expand to " + nlohmann::json(total).dump() + " points, above the limit of " +
                       std::to_string(kMaxSweepPoints));
  }
}

// Constraints: {"when": {axis path: value or [values]}, "reason": text}.
void read_constraints(ObjectReader& r, const Origins& origins, const std::string& origin,
                      const std::map<std::string, std::size_t>& axis_index, SweepSpec& spec) {
  std::string source;
  if (const nlohmann::json* list = r.take("constraints", source); list != nullptr && !list->is_null()) {
    if (!list->is_array()) r.fail("constraints", "expected an array of {\"when\", \"reason\"}, got " + describe_json(*list));
    std::vector<std::string> paths;
    for (const auto& a : spec.axes) paths.push_back(a.path);
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string cp = pointer_append("/constraints", std::to_string(i));
      ObjectReader c((*list)[i], cp, origins);
      SweepConstraint constraint;
      constraint.reason = c.text("reason");
      if (constraint.reason.empty()) c.fail("reason", "expected why these points are skipped, got an empty string");
      std::string when_source;
      const nlohmann::json* when = c.take("when", when_source);
      if (when == nullptr || when->is_null()) c.fail("when", c.missing("when") + ": expected {axis path: value or [values]}");
      if (!when->is_object() || when->empty()) {
        c.fail("when", "expected a non-empty object {axis path: value or [values]}, got " + describe_json(*when));
      }
      for (const auto& [path, value] : when->items()) {
        const std::string wp = pointer_append(pointer_append(cp, "when"), path);
        const auto it = axis_index.find(path);
        if (it == axis_index.end()) {
          throw ConfigError(origin, wp, "\"" + path + "\" is not an axis" + did_you_mean(path, paths) +
                                            "; the axes are " + quoted_list(paths));
        }
        std::vector<nlohmann::json> accepted = value.is_array() ? std::vector<nlohmann::json>(value.begin(), value.end())
                                                                : std::vector<nlohmann::json>{value};
        const auto& values = spec.axes[it->second].values;
        for (const auto& v : accepted) {
          if (std::find(values.begin(), values.end(), v) == values.end()) {
            throw ConfigError(origin, wp, v.dump() + " is not a value of axis \"" + path + "\" (a constraint that never "
                                          "matches is a typo)");
          }
        }
        constraint.when.emplace_back(path, std::move(accepted));
      }
      c.finish();
      spec.constraints.push_back(std::move(constraint));
    }
  }
}

// The metrics recorded (/metrics), else the defaults.
void read_metrics(ObjectReader& r, const std::string& origin, SweepSpec& spec) {
  std::string source;
  const auto& known = known_sweep_metrics();
  std::vector<std::string> known_paths;
  for (const auto& m : known) known_paths.push_back(m.path);
  std::vector<std::string> chosen = default_sweep_metric_paths();
  if (const nlohmann::json* metrics = r.take("metrics", source); metrics != nullptr && !metrics->is_null()) {
    if (!metrics->is_array() || metrics->empty()) {
      r.fail("metrics", "expected a non-empty array of results.json summary fields, got " + describe_json(*metrics));
    }
    chosen.clear();
    for (std::size_t i = 0; i < metrics->size(); ++i) {
      const std::string mp = pointer_append("/metrics", std::to_string(i));
      if (!(*metrics)[i].is_string()) {
        throw ConfigError(origin, mp, "expected a summary field such as \"step_time_s.mean\", got " +
                                          describe_json((*metrics)[i]));
      }
      const std::string path = (*metrics)[i].get<std::string>();
      if (std::find(known_paths.begin(), known_paths.end(), path) == known_paths.end()) {
        throw ConfigError(origin, mp, "unknown metric \"" + path + "\"" + did_you_mean(path, known_paths) +
                                          "; the metrics are the numeric fields of results.json \"summary\" and, for "
                                          "serving scenarios, \"serving.\" fields (scenarios/README.md, Sweeps)");
      }
      if (std::find(chosen.begin(), chosen.end(), path) != chosen.end()) {
        throw ConfigError(origin, mp, "metric \"" + path + "\" is listed twice");
      }
      chosen.push_back(path);
    }
  }
  for (const auto& path : chosen) {
    spec.metrics.push_back(*std::find_if(known.begin(), known.end(), [&](const SweepMetric& m) { return m.path == path; }));
  }
}

}  // namespace

SweepSpec read_sweep_spec(const nlohmann::json& document, const std::string& origin,
                          const std::filesystem::path& base_dir) {
  if (!document.is_object()) throw ConfigError(origin, "", "a sweep spec is a JSON object, got " + describe_json(document));
  Origins origins(origin);
  ObjectReader r(document, "", origins);
  SweepSpec spec;
  spec.origin = origin;
  spec.base_dir = base_dir;
  spec.document = document;
  spec.sha256 = sha256_hex(document.dump());
  const std::string schema = r.text("schema");
  if (schema != kSweepSchema) {
    r.fail("schema", "expected \"" + std::string(kSweepSchema) + "\", got \"" + schema + "\"");
  }
  spec.name = r.optional_text("name").value_or("");
  spec.description = r.optional_text("description").value_or("");
  spec.base = r.text("base");
  if (spec.base.empty()) r.fail("base", "expected the path of the base scenario, got an empty string");
  spec.steps = r.integer_or("steps", Range::closed(1, 1000000), kDefaultSweepSteps);

  const auto axis_index = read_axes(r, origins, spec);
  read_dimensions(r, origin, axis_index, spec);
  read_constraints(r, origins, origin, axis_index, spec);
  read_metrics(r, origin, spec);
  r.finish();
  return spec;
}

SweepSpec parse_sweep_spec(std::string_view text, const std::string& origin, const std::filesystem::path& base_dir) {
  return read_sweep_spec(parse_json_text(text, origin), origin, base_dir);
}

SweepSpec load_sweep_spec(const std::filesystem::path& path) {
  return parse_sweep_spec(read_text_file(path), path.string(), path.parent_path());
}

}  // namespace ess
