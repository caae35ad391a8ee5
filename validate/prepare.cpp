#include "validate/prepare.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/weight_gemms.h"
#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"
#include "sim/memory/memory_plan.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/access_model.h"

namespace ess {

namespace {

nlohmann::ordered_json values_only(const nlohmann::ordered_json& j) {
  if (j.is_object() && j.size() == 2 && j.contains("value") && j.contains("source")) return values_only(j["value"]);
  if (j.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, v] : j.items()) out[k] = values_only(v);
    return out;
  }
  if (j.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& v : j) out.push_back(values_only(v));
    return out;
  }
  return j;
}

void require(bool ok, const Scenario& s, const std::string& pointer, const std::string& message) {
  if (!ok) throw ConfigError(s.origin, pointer, "the GPU runner cannot execute this scenario: " + message);
}

}  // namespace

std::string scenario_identity(const Scenario& scenario) {
  // What the runner executes: everything but the hardware's cost parameters, so that one real trace
  // can be validated against any calibration of the GPU it ran on.
  nlohmann::ordered_json v = values_only(scenario.resolved);
  v.erase("hardware");
  return sha256_hex(v.dump());
}

std::vector<std::string> gemm_shape_rows(const Scenario& scenario) {
  const int tp = scenario.parallelism.tensor_parallel;
  std::vector<std::string> rows;
  for (const WeightGemm& g : weight_gemms(scenario.model, scenario.parallelism, scenario.workload.mtp.depth)) {
    std::ostringstream row;
    row << scenario.model.name << ',' << tp << ',' << g.name << ',' << to_string(g.form) << ',' << g.n << ',' << g.k
        << ',' << to_string(g.dtype);
    rows.push_back(row.str());
  }
  return rows;
}

std::filesystem::path add_gemm_shapes(const Scenario& scenario, const std::filesystem::path& dir) {
  // The header and the comment match kernels/bench/gemm_shapes.h, which reads this file on the GPU
  // machine (tests/contract/ reads what this writes with it).
  const std::filesystem::path path = dir / kGemmShapesFile;
  std::vector<std::string> rows;
  if (std::ifstream in(path); in) {
    std::string line;
    bool header = false;
    while (std::getline(in, line)) {
      if (line.empty() || line.front() == '#') continue;
      if (!header) {
        header = true;  // the existing header; rewritten below
        continue;
      }
      rows.push_back(line);
    }
  }
  for (std::string& row : gemm_shape_rows(scenario)) {
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(std::move(row));
  }
  std::string text =
      "# The weight GEMMs the simulator issues for the prepared scenarios (sim/graph/weight_gemms.h),\n"
      "# written by ess-sim validate --prepare; ess-bench --gemm-shapes measures them first.\n"
      "model,tp,name,form,n,k,dtype\n";
  for (const std::string& row : rows) text += row + "\n";
  ensure_directory(dir);
  write_file_atomically(path, text);
  return path;
}

RunnerConfig prepare_runner(const Scenario& scenario, const std::filesystem::path& dir, const std::string& name) {
  const ModelConfig& m = scenario.model;
  require(scenario.hardware.total_gpus() == 1, scenario, "/hardware",
          "it runs on one GPU; set hardware.nodes 1 and hardware.gpu.count 1 (and pcie.gpus_per_switch 1)");
  require(m.attention.kind == AttentionKind::mla && m.indexer.has_value(), scenario, "/model",
          "it executes MLA with the lightning indexer (deepseek-v3.2-exp)");
  require(!m.moe.has_value(), scenario, "/model/moe", "it executes dense MLP layers only; set \"moe\": null");
  require(scenario.workload.mtp.depth == 1, scenario, "/workload/mtp", "it runs no MTP; set workload.mtp.depth 1");
  require(scenario.cache.mode == CacheMode::offload, scenario, "/cache/mode", "it runs ESS offload; set cache.mode \"offload\"");
  require(scenario.cache.pool_entries.has_value(), scenario, "/cache",
          "it sizes the GPU pool in entries; set cache.pool_entries instead of pool_ratio");
  require(scenario.cache.overlap == "serial" || scenario.cache.overlap == "da", scenario,
          "/cache/overlap", "it implements overlap \"serial\" and \"da\"");
  require(!access_model_reads_file(scenario.cache.access.model), scenario, "/cache/access",
          "prepare records a generated access model's selections; a replayed trace can be passed to the runner as is");
  require(!scenario.cache.nvme.has_value(), scenario, "/cache/nvme", "it has no NVMe tier");
  const DecodeRun run = decode_run(scenario);
  const std::int64_t batch = resolve_batch(run);
  require(scenario.cache.sampled_requests == batch, scenario, "/cache/sampled_requests",
          "every request must be simulated exactly; set cache.sampled_requests to the batch (" + std::to_string(batch) + ")");

  const DecodeStepBuilder builder(run, batch, batch);
  const int layers = builder.layer_count();
  const std::int64_t top_k = m.indexer->top_k;
  // The model the simulator makes for this scenario (sim/engine/simulation.cpp).
  const auto access = make_access_model(scenario.cache.access.model,
                                        AccessModelInputs{layers, top_k, synthetic_access_seed(scenario.seed), {}});
  // The warm-up windows exactly as CacheSimulator::warm_up reads them, then the measured steps.
  std::vector<TraceStep> steps;
  const std::int64_t context0 = builder.context_at(0);
  for (std::int64_t w = scenario.cache.warmup_windows; w >= 1; --w) {
    if (context0 - w >= 1) steps.push_back({static_cast<int>(-w), context0 - w});
  }
  for (int s = 0; s < static_cast<int>(scenario.workload.decode_steps); ++s) steps.push_back({s, builder.context_at(s)});

  ensure_directory(dir);
  RunnerConfig out;
  out.access_trace = dir / (name + ".esstrace");
  write_access_trace(out.access_trace, *access, layers, static_cast<int>(batch), top_k, steps);

  const auto& a = m.attention.mla;
  std::ostringstream args;
  args << "--layers " << m.layers << " --hidden " << m.hidden << " --q-lora " << a.q_lora_rank << " --kv-lora "
       << a.kv_lora_rank << " --heads " << m.attention.heads << " --qk-nope " << a.qk_nope_head_dim << " --qk-rope "
       << a.qk_rope_head_dim << " --v-head " << a.v_head_dim << " --indexer-heads " << m.indexer->heads
       << " --indexer-dim " << m.indexer->head_dim << " --top-k " << top_k << " --ffn " << m.dense_intermediate
       << " --vocab " << m.vocab << " --batch " << batch << " --context " << context0 << " --steps "
       << scenario.workload.decode_steps << " --pool-entries " << *scenario.cache.pool_entries << " --pinned-recent "
       << scenario.cache.pinned_recent << " --eviction " << scenario.cache.eviction;
  for (const PolicyParam* p : declared_params(eviction_policies())) {
    args << " --" << p->option() << " " << scenario.cache.eviction_params.of(*p);
  }
  args << " --overlap " << scenario.cache.overlap << " --transfer "
       << to_string(scenario.cache.transfer) << " --access " << out.access_trace.filename().string()
       << " --scenario-sha256 " << scenario_identity(scenario);
  out.arguments = args.str();
  write_file_atomically(dir / (name + ".args"), out.arguments + "\n");
  // The scenario as resolved (every value with its source): self-contained, so the trace can later
  // be validated against exactly this configuration with no --set.
  write_file_atomically(dir / (name + ".scenario.json"), format_resolved(scenario.resolved));
  add_gemm_shapes(scenario, dir);
  return out;
}

}  // namespace ess
