// Contract: sim/graph/weight_gemms.h lists exactly the GEMMs DecodeStepBuilder appends. Every GEMM
// op of real step plans (bundled scenarios, DeepSeek-V3.2 and Llama, TP 1 and 8, offload and
// not, MTP and not) must be one listed entry by name, with the flops of its form (2 T n k; for
// the grouped experts 2 rows n k) and, for the dense and per-head forms, the cost of gemm() for
// the listed dtype; and every listed entry must occur. (For the grouped experts only whole rows
// are checked: how many rows each GPU gets depends on the routing, and the cost model may pad
// them to its tile.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/gemm.h"
#include "sim/config/scenario.h"
#include "sim/graph/decode_step.h"
#include "sim/base/rng.h"
#include "sim/graph/weight_gemms.h"
#include "sim/memory/memory_plan.h"
#include "sim/base/error.h"

namespace {

using ess::WeightGemm;
using ess::WeightGemmForm;

const std::string kRoot = ESS_SOURCE_DIR;

// Every disagreement between the step plans of steps 0 and 1 of the scenario and `list`, one line
// each (empty: they agree). Offload scenarios get a synthetic access per layer (some misses, so
// the fetch stages exist).
std::vector<std::string> mismatches(const ess::Scenario& s, const std::vector<WeightGemm>& list) {
  std::vector<std::string> out;
  const ess::DecodeRun run = ess::decode_run(s);
  const std::int64_t batch = ess::resolve_batch(run);
  const bool offload = run.offload();
  const ess::DecodeStepBuilder builder(run, batch, offload ? batch : 0);
  const std::vector<ess::LayerAccess> access(static_cast<std::size_t>(builder.layer_count()),
                                             ess::LayerAccess{100.0, 0.0, 1948.0, 40.0, 100.0});
  const int tp = s.parallelism.tensor_parallel;
  const int depth = s.workload.mtp.depth;
  std::map<std::string, const WeightGemm*> by_name;
  for (const WeightGemm& g : list) {
    if (!by_name.emplace(std::string(g.name), &g).second) out.push_back("listed twice: " + std::string(g.name));
  }
  std::set<std::string> seen;
  std::size_t gemm_ops = 0;
  const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); };
  for (int step = 0; step < 2; ++step) {
    ess::Rng rng(1234 + static_cast<std::uint64_t>(step));
    const ess::StepPlan plan = builder.build(step, rng, offload ? &access : nullptr);
    for (const ess::GpuStepPlan& gpu : plan.gpus) {
      for (const ess::Segment& seg : gpu.segments) {
        for (const ess::Op& op : seg.ops) {
          if (op.category != ess::OpCategory::gemm) continue;
          ++gemm_ops;
          const std::string where = std::string(op.name) + " (layer " + std::to_string(seg.layer) + ")";
          const auto it = by_name.find(std::string(op.name));
          if (it == by_name.end()) {
            out.push_back("not listed: " + where);
            continue;
          }
          const WeightGemm& g = *it->second;
          seen.insert(std::string(g.name));
          // The main pass has depth query tokens per request; the MTP drafts (layers after the
          // model's) one.
          const bool draft = seg.layer >= s.model.layers;
          const std::int64_t T = batch * tp * (draft ? 1 : depth);
          const double nk2 = 2.0 * static_cast<double>(g.n) * static_cast<double>(g.k);
          if (g.form == WeightGemmForm::grouped) {
            const double rows = op.flops.value() / nk2;
            // Rows (each a routed token of some GPU of the expert-parallel group, counted as the
            // cost model counts them, possibly padded to its tile) times 2 n k: a whole, positive
            // multiple of 2 n k.
            if (rows != std::round(rows) || rows < 1.0) {
              out.push_back("flops of " + where + " are not a whole positive multiple of 2 n k (" + std::to_string(rows) + ")");
            }
          } else if (!near(op.flops.value(), nk2 * static_cast<double>(T))) {
            out.push_back("flops of " + where + " are not 2 T n k");
          } else {
            const ess::KernelCost c = ess::gemm({T, g.n, g.k, g.dtype}, s.hardware);
            // A launched kernel: the model's time plus the engine's gap before the next kernel.
            const double launched = c.time.value() + s.engine.kernel_gap.value();
            if (!near(op.bytes.value(), c.bytes.value()) || !near(op.time.value(), launched)) {
              out.push_back("cost of " + where + " is not gemm() of the listed dtype " + std::string(ess::to_string(g.dtype)));
            }
          }
        }
      }
    }
  }
  if (gemm_ops == 0) out.push_back("the plans have no GEMM op");
  for (const WeightGemm& g : list) {
    if (seen.count(std::string(g.name)) == 0) out.push_back("listed, never issued: " + std::string(g.name));
  }
  return out;
}

std::vector<WeightGemm> list_of(const ess::Scenario& s) {
  return ess::weight_gemms(s.model, s.parallelism, s.workload.mtp.depth);
}

void check_both_ways(const ess::Scenario& s) {
  const std::vector<std::string> wrong = mismatches(s, list_of(s));
  for (const std::string& w : wrong) UNSCOPED_INFO(s.name << ": " << w);
  CHECK(wrong.empty());
}

std::vector<std::string> names(const std::vector<WeightGemm>& list) {
  std::vector<std::string> out;
  for (const WeightGemm& g : list) out.emplace_back(g.name);
  return out;
}

const WeightGemm& entry(const std::vector<WeightGemm>& list, std::string_view name) {
  for (const WeightGemm& g : list) {
    if (g.name == name) return g;
  }
  FAIL("no entry " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("weight_gemms matches the step plans of the bundled DeepSeek-V3.2 scenarios", "[contract]") {
  SECTION("MoE, MTP 2, EP 8, caches on the GPU") {
    check_both_ways(ess::load_scenario(kRoot + "/scenarios/dsv32-baseline-32k.json"));
  }
  SECTION("ESS offload") { check_both_ways(ess::load_scenario(kRoot + "/scenarios/dsv32-ess-32k.json")); }
  SECTION("the GPU runner's dense 4-layer bf16 model, offload, DA") {
    check_both_ways(ess::load_scenario(kRoot + "/validate/scenarios/runner-h200.json"));
  }
  SECTION("dense (no MoE) at TP 8, no MTP") {
    check_both_ways(ess::load_scenario(
        kRoot + "/scenarios/dsv32-baseline-32k.json",
        {ess::parse_override("model.moe=null"), ess::parse_override("parallelism.tensor_parallel=8"),
         ess::parse_override("parallelism.attention_dp=1"), ess::parse_override("parallelism.expert_parallel=1"),
         ess::parse_override("workload.mtp.depth=1"), ess::parse_override("workload.mtp.acceptance=1"),
         ess::parse_override("workload.batch_per_gpu=4")}));
  }
  for (const int ep : {8, 1}) {
    SECTION("MoE at TP 8, the routed experts " + std::string(ep == 8 ? "split over the replica (EP 8)" : "sharded by TP (EP 1)")) {
      check_both_ways(ess::load_scenario(
          kRoot + "/scenarios/dsv32-baseline-32k.json",
          ess::parse_overrides({"parallelism.tensor_parallel=8", "parallelism.attention_dp=1",
                                "parallelism.expert_parallel=" + std::to_string(ep), "workload.batch_per_gpu=2"})));
    }
  }
}

TEST_CASE("weight_gemms matches the step plans of Llama scenarios", "[contract]") {
  SECTION("Llama-2-7B on one A100") {
    check_both_ways(ess::load_scenario(kRoot + "/scenarios/llama2-7b-a100-decode.json"));
  }
  SECTION("Llama-3.1-70B at TP 8 (one kv head per GPU)") {
    check_both_ways(ess::load_scenario_text(R"({"schema": "ess-sim/scenario/v1", "name": "llama70b-tp8", "seed": 1,
      "model": "llama-3.1-70b", "hardware": "h200-sxm",
      "parallelism": {"attention_dp": 1, "tensor_parallel": 8, "expert_parallel": 1},
      "workload": {"batch_per_gpu": 4, "context_length": 1024, "decode_steps": 2}, "cache": {"mode": "gpu"}})",
                                            "llama70b-tp8.json"));
  }
}

TEST_CASE("the DeepSeek-V3.2 list is the fused q_a||kv_a and the published shapes", "[contract]") {
  const ess::Scenario s = ess::load_scenario(kRoot + "/scenarios/dsv32-baseline-32k.json");
  const auto list = ess::weight_gemms(s.model, 1, 1, 2);
  CHECK(names(list) == std::vector<std::string>{"q_a_kv_a", "q_b", "indexer_q", "indexer_k_w", "q_absorb", "v_up", "wo",
                                                "gate_up", "down", "router", "shared_gate_up", "shared_down",
                                                "experts_gate_up", "experts_down", "lm_head", "eh_proj"});
  // q_lora_rank 1536 + kv_lora_rank 512 + qk_rope_head_dim 64, from hidden 7168
  CHECK(entry(list, "q_a_kv_a").n == 1536 + 512 + 64);
  CHECK(entry(list, "q_a_kv_a").k == 7168);
  CHECK(entry(list, "q_a_kv_a").dtype == ess::DType::fp8);
  // index_head_dim 128 key + 64 per-head weights
  CHECK(entry(list, "indexer_k_w").n == 128 + 64);
  CHECK(entry(list, "lm_head").dtype == ess::DType::bf16);  // the activation dtype
  CHECK(entry(list, "router").dtype == ess::DType::bf16);
  CHECK(entry(list, "experts_gate_up").form == WeightGemmForm::grouped);
  CHECK(entry(list, "q_absorb").form == WeightGemmForm::per_head);
  // Without MTP there is no eh_proj; at TP 8 (dense) the head-split shapes shrink and the fused
  // down-projection does not.
  CHECK(names(ess::weight_gemms(s.model, 1, 1, 1)).back() == "lm_head");
  ess::ModelConfig dense = s.model;
  dense.moe.reset();
  const auto tp8 = ess::weight_gemms(dense, 8, 1, 1);
  CHECK(entry(tp8, "q_b").n == 128 / 8 * 192);
  CHECK(entry(tp8, "q_a_kv_a").n == 2112);
  CHECK(entry(tp8, "gate_up").n == 2 * 18432 / 8);
  CHECK(entry(tp8, "lm_head").n == 129280 / 8);
  CHECK_THROWS_AS(ess::weight_gemms(s.model, 0, 1, 1), ess::InternalError);
  CHECK_THROWS_AS(ess::weight_gemms(s.model, 1, 0, 1), ess::InternalError);
  CHECK_THROWS_AS(ess::weight_gemms(s.model, 1, 1, 0), ess::InternalError);
}

TEST_CASE("the plan check fails on a list that misses, misstates or invents a GEMM", "[contract]") {
  const ess::Scenario s = ess::load_scenario(kRoot + "/validate/scenarios/runner-h200.json");
  const std::vector<WeightGemm> good = list_of(s);
  REQUIRE(mismatches(s, good).empty());
  const auto with = [&](const auto& change) {
    std::vector<WeightGemm> list = good;
    change(list);
    return mismatches(s, list);
  };
  // q_a alone, as ess-bench once measured it: other flops than the fused op.
  const auto q_a_only = with([](auto& l) { l[0].n = 1536; });
  REQUIRE_FALSE(q_a_only.empty());
  CHECK_THAT(q_a_only.front(), Catch::Contains("flops of q_a_kv_a"));
  // The split names: the fused op is not listed, and the listed ones are never issued.
  const auto split = with([](auto& l) { l[0].name = "q_a"; });
  CHECK(std::count(split.begin(), split.end(), "listed, never issued: q_a") == 1);
  CHECK(std::any_of(split.begin(), split.end(), [](const std::string& w) { return w.rfind("not listed: q_a_kv_a", 0) == 0; }));
  // Another dtype has another cost (bf16 weights priced as fp8).
  const auto dtype = with([](auto& l) { l[1].dtype = ess::DType::fp8; });
  CHECK_THAT(dtype.front(), Catch::Contains("cost of q_b"));
  // An entry the plan never issues.
  const auto extra = with([](auto& l) { l.push_back(WeightGemm{"router", WeightGemmForm::dense, 256, 7168, ess::DType::bf16}); });
  CHECK(extra == std::vector<std::string>{"listed, never issued: router"});
}
