// Contract: `ess-sim cost attention|indexer|grouped-gemm|gemm` price exactly the kernels the decode
// step graph (sim/graph/decode_step.cpp) builds. For real step plans (DeepSeek-V3.2 sparse MLA with
// its indexer, in GPU-only and offload mode, with MTP; DeepSeek-V3 dense MLA at TP 8; Llama GQA at
// TP 1 and 8; the MoE experts of one token) every attention, indexer, grouped-GEMM and weight-GEMM
// op is compared with what the command prints for the shape a user derives from the scenario:
//   requests     batch_per_gpu x tensor_parallel (of one micro-batch), the CUDA graph's padded
//                batch for the kernels that run on padded rows (top-k and the GEMMs, not the
//                kernels that read caches);
//   queries      mtp.depth in the main layers, 1 in the MTP drafts;
//   context      workload.context_length (step 0);
//   offload      the sparse attention over the entries on the GPU (top_k - misses) and over the
//                fetched ones (misses), whole or in the two halves of the requests.
// Time (plus the engine's kernel gap, which the step adds to every launched kernel), FLOP and bytes
// must be equal: both sides run the same cost models in this process, so any difference is a
// shape the command derives differently from the step graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/op_names.h"
#include "sim/config/scenario.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/weight_gemms.h"
#include "sim/memory/memory_plan.h"
#include "sim/offload/overlap.h"
#include "tests/cli/cli_run.h"

// A named namespace: the contract tests are compiled together in unity batches.
namespace cost_step_graph {

const std::string kRoot = ESS_SOURCE_DIR;

std::string str(std::int64_t v) { return std::to_string(v); }

// Prices from the command line, each distinct command run once.
class CostCommand {
 public:
  explicit CostCommand(std::string hardware) : hardware_(std::move(hardware)) {}

  const nlohmann::json& price(std::vector<std::string> args) {
    args.insert(args.begin(), "cost");
    args.insert(args.end(), {"--hardware", hardware_, "--json"});
    const auto it = memo_.find(args);
    if (it != memo_.end()) return it->second;
    const ess::test::CliRun r = ess::test::run_cli(args);
    std::string line;
    for (const std::string& a : args) line += " " + a;
    INFO("ess-sim" << line << "\n" << r.err);
    REQUIRE(r.code == 0);
    return memo_.emplace(args, nlohmann::json::parse(r.out)).first->second;
  }

 private:
  std::string hardware_;
  std::map<std::vector<std::string>, nlohmann::json> memo_;
};

// The synthetic access of every offloaded layer: 100 of the selected entries missed (in 40 runs).
const ess::LayerAccess kAccess{100.0, 0.0, 1948.0, 40.0, 100.0};

struct Outcome {
  std::map<std::string, int> checked;  // op name -> ops compared
  std::vector<std::string> wrong;      // one line per disagreement
};

// Compares every op of step 0 of `s` with `cost` run on the scenario's hardware preset; `context_shift` is added to the
// context the commands are given (nonzero only to show that the comparison can fail).
// `one_token`: the scenario routes a single token per GPU, so each of its experts gets one row and
// `cost grouped-gemm` (rows spread evenly) prices the step's expert GEMMs.
Outcome compare(const ess::Scenario& s, bool one_token = false, std::int64_t context_shift = 0) {
  Outcome o;
  CostCommand cost(s.hardware.name);
  const ess::DecodeRun run = ess::decode_run(s);
  const std::int64_t batch = ess::resolve_batch(run);
  const bool offload = run.offload();
  const ess::DecodeStepBuilder builder(run, batch, offload ? batch : 0);
  const std::vector<ess::LayerAccess> access(static_cast<std::size_t>(builder.layer_count()), kAccess);
  ess::Rng rng(7);
  const ess::StepPlan plan = builder.build(0, rng, offload ? &access : nullptr);

  const std::string model = s.model.name;
  const int tp = s.parallelism.tensor_parallel;
  const std::int64_t context = s.workload.context_length + context_shift;
  const double gap = s.engine.kernel_gap.value();
  std::map<std::string, const ess::WeightGemm*> gemms;
  const auto listed = ess::weight_gemms(s.model, s.parallelism, s.workload.mtp.depth);
  for (const ess::WeightGemm& g : listed) gemms.emplace(std::string(g.name), &g);

  const auto expect = [&](const ess::Op& op, const std::string& where, const nlohmann::json& k, bool with_work) {
    ++o.checked[std::string(op.name)];
    const double seconds = k.at("seconds").get<double>();
    if (op.time.value() != seconds + gap) {
      o.wrong.push_back(where + ": step " + std::to_string(op.time.value()) + " s, cost " + std::to_string(seconds) +
                        " s + gap " + std::to_string(gap));
    } else if (with_work && (op.flops.value() != k.at("flops").get<double>() || op.bytes.value() != k.at("bytes").get<double>())) {
      o.wrong.push_back(where + ": same time, other FLOP or bytes");
    }
  };
  // An op priced as one of several request counts (the offload halves share the whole's names).
  const auto expect_one_of = [&](const ess::Op& op, const std::string& where, const std::vector<const nlohmann::json*>& ks) {
    for (const nlohmann::json* k : ks) {
      if (op.time.value() == k->at("seconds").get<double>() + gap && op.flops.value() == k->at("flops").get<double>() &&
          op.bytes.value() == k->at("bytes").get<double>()) {
        ++o.checked[std::string(op.name)];
        return;
      }
    }
    o.wrong.push_back(where + ": none of the " + std::to_string(ks.size()) + " shapes priced by the command");
  };

  for (const std::size_t g : {std::size_t{0}, plan.gpus.size() - 1}) {
    for (const ess::Segment& seg : plan.gpus[g].segments) {
      const std::int64_t lane_batch =
          s.execution.micro_batches == 1 ? batch : seg.lane == 0 ? (batch + 1) / 2 : batch - (batch + 1) / 2;
      const std::int64_t requests = lane_batch * tp;
      const std::int64_t padded = std::max(requests, s.engine.graph_batch(requests));
      const std::int64_t q = seg.layer >= s.model.layers ? 1 : s.workload.mtp.depth;
      const std::vector<std::string> attention = {"attention", "--model", model, "--requests", str(requests),
                                                  "--queries-per-request", str(q), "--context", str(context),
                                                  "--tensor-parallel", str(tp)};
      const auto mla = [&](std::int64_t r, std::optional<std::int64_t> selected) {
        std::vector<std::string> a = {"attention", "--model", model, "--requests", str(r), "--queries-per-request", str(q),
                                      "--context", str(context), "--tensor-parallel", str(tp), "--mla-kernel",
                                      std::string(s.engine.mla_kernel->name)};
        if (selected) a.insert(a.end(), {"--selected", str(std::max<std::int64_t>(1, *selected))});
        return &cost.price(a);
      };
      const auto indexer = [&](std::int64_t r) {
        return &cost.price({"indexer", "--model", model, "--requests", str(r), "--queries-per-request", str(q), "--context",
                            str(context)});
      };
      // Offload: the halves of the requests and the entries each query finds on the GPU or fetches.
      const std::int64_t half_a = (requests + 1) / 2;
      const std::int64_t half_b = requests - half_a;
      const std::int64_t selected = s.model.indexer ? std::min(s.model.indexer->top_k, context) : context;
      const std::int64_t miss_k =
          std::llround(std::min(kAccess.misses, static_cast<double>(selected)) * static_cast<double>(lane_batch) /
                       static_cast<double>(requests));

      for (const ess::Op& op : seg.ops) {
        const std::string where = std::string(op.name) + " (gpu " + std::to_string(g) + ", layer " + std::to_string(seg.layer) +
                                  ", lane " + std::to_string(seg.lane) + ")";
        if (op.name == ess::opname::sparse_mla || op.name == ess::opname::dense_mla || op.name == ess::opname::attention) {
          if (s.model.attention.kind == ess::AttentionKind::gqa) {
            expect(op, where, cost.price(attention), true);
          } else {
            expect(op, where, *mla(requests, std::nullopt), true);
          }
        } else if (op.name == ess::opname::sparse_mla_hits) {
          expect(op, where, *mla(requests, selected - miss_k), true);
        } else if (op.name == ess::opname::sparse_mla_misses) {
          expect(op, where, *mla(requests, miss_k), true);
        } else if (op.name == ess::opname::sparse_mla_misses_a) {
          expect(op, where, *mla(half_a, miss_k), true);
        } else if (op.name == ess::opname::sparse_mla_misses_b) {
          expect(op, where, *mla(half_b, miss_k), true);
        } else if (op.name == ess::opname::indexer_score || op.name == ess::opname::indexer_topk) {
          const char* part = op.name == ess::opname::indexer_score ? "scoring" : "topk";
          // GPU-only, top-k runs on the CUDA graph's padded rows, scoring reads only the real
          // requests' keys; offload prices both for the requests, whole or halved.
          std::vector<std::int64_t> counts = {op.name == ess::opname::indexer_topk && !offload ? padded : requests};
          if (offload && half_b > 0) counts.insert(counts.end(), {half_a, half_b});
          std::vector<const nlohmann::json*> ks;
          for (const std::int64_t r : counts) ks.push_back(&indexer(r)->at(part));
          expect_one_of(op, where, ks);
        } else if (op.name == ess::opname::experts_gate_up || op.name == ess::opname::experts_down) {
          if (!one_token) continue;
          const std::int64_t rows = s.model.moe->experts_per_token;
          const char* projection = op.name == ess::opname::experts_gate_up ? "gate-up" : "down";
          expect(op, where,
                 cost.price({"grouped-gemm", "--model", model, "--projection", projection, "--groups", str(rows), "--m", str(rows)}),
                 true);
        } else if (op.category == ess::OpCategory::gemm) {
          const auto it = gemms.find(std::string(op.name));
          if (it == gemms.end()) {
            o.wrong.push_back(where + ": a GEMM weight_gemms() does not list");
            continue;
          }
          const ess::WeightGemm& w = *it->second;
          // `cost gemm --json` prints the time only.
          expect(op, where,
                 cost.price({"gemm", "--m", str(padded * q), "--n", str(w.n), "--k", str(w.k), "--dtype",
                             std::string(ess::to_string(w.dtype))}),
                 false);
        }
      }
    }
  }
  return o;
}

void check(const Outcome& o, const std::vector<std::string>& kinds) {
  for (const std::string& w : o.wrong) UNSCOPED_INFO(w);
  CHECK(o.wrong.empty());
  for (const std::string& k : kinds) {
    INFO("op kind " << k);
    CHECK(o.checked.count(k) == 1);
  }
}

ess::Scenario scenario(const std::string& file, const std::vector<std::string>& overrides) {
  return ess::load_scenario(kRoot + "/" + file, ess::parse_overrides(overrides));
}

// A scenario of `model` (a preset name in quotes, or an object) on `dp` x `tp` GPUs of one node.
ess::Scenario scenario_text(const std::string& name, const std::string& model, const std::string& hardware, int dp, int tp,
                            int ep, int batch, int context) {
  const std::string text = R"({"schema": "ess-sim/scenario/v1", "name": ")" + name + R"(", "seed": 1, "model": )" + model +
                           R"(, "hardware": {"preset": ")" + hardware + R"(", "gpu": {"count": )" + std::to_string(dp * tp) +
                           R"(}, "pcie": {"gpus_per_switch": 1}, "cpu": {"sockets": 1, "gpus_per_socket": )" +
                           std::to_string(dp * tp) + R"(}}, "parallelism": {"attention_dp": )" + std::to_string(dp) + R"(, "tensor_parallel": )" +
                           std::to_string(tp) + R"(, "expert_parallel": )" + std::to_string(ep) +
                           R"(}, "workload": {"batch_per_gpu": )" + std::to_string(batch) + R"(, "context_length": )" +
                           std::to_string(context) + R"(, "decode_steps": 1}, "cache": {"mode": "gpu"}})";
  return ess::load_scenario_text(text, name + ".json");
}

const std::vector<std::string> kSparseKinds = {"sparse_mla", "indexer_score", "indexer_topk", "q_a_kv_a", "q_absorb", "wo"};


TEST_CASE("cost prices the sparse MLA, indexer and GEMMs of DeepSeek-V3.2 decode steps", "[contract]") {
  SECTION("attention DP 8 + EP 8, MTP 2 (main layers and drafts), caches on the GPU") {
    const ess::Scenario s = scenario("scenarios/dsv32-baseline-32k.json", {"workload.batch_per_gpu=4"});
    REQUIRE(s.workload.mtp.depth == 2);
    check(compare(s), kSparseKinds);
  }
  SECTION("a batch the CUDA graph pads (top-k and GEMMs on the padded rows)") {
    const ess::Scenario s = scenario("scenarios/dsv32-baseline-32k.json", {"workload.batch_per_gpu=5", "engine=\"sglang\""});
    REQUIRE(s.engine.graph_batch(5) > 5);
    check(compare(s), kSparseKinds);
  }
  SECTION("ESS offload under every overlap policy: attention over the pooled and the fetched entries, whole or halved") {
    std::set<std::string> attention;
    for (const auto& policy : ess::overlap_policies()) {
      INFO("cache.overlap " << policy.name);
      const ess::Scenario s = scenario("scenarios/dsv32-ess-32k.json",
                                       {"workload.batch_per_gpu=4", "cache.overlap=\"" + std::string(policy.name) + "\""});
      const Outcome o = compare(s);
      check(o, {"indexer_score", "indexer_topk", "q_absorb"});
      for (const auto& [name, count] : o.checked) {
        if (name.rfind("sparse_mla", 0) == 0) attention.insert(name);
      }
    }
    CHECK(attention == std::set<std::string>{"sparse_mla", "sparse_mla_hits", "sparse_mla_misses", "sparse_mla_misses_a",
                                             "sparse_mla_misses_b"});
  }
  SECTION("one token on one GPU: each of its experts gets one row, as cost grouped-gemm spreads them") {
    const ess::Scenario s = scenario_text("dsv32-one-token", R"({"preset": "deepseek-v3.2-exp", "layers": 5, "mtp_layers": 0})", "h200-sxm", 1, 1, 1, 1, 4096);
    REQUIRE(s.engine.graph_batch(1) == 1);
    check(compare(s, true), {"sparse_mla", "experts_gate_up", "experts_down", "shared_gate_up"});
  }
}

TEST_CASE("cost prices the dense MLA of DeepSeek-V3 at TP 8 and the GQA of Llama", "[contract]") {
  SECTION("DeepSeek-V3, TP 8 (16 heads per GPU, 8 x batch requests)") {
    const ess::Scenario s = scenario_text("dsv3-tp8", R"("deepseek-v3")", "h200-sxm", 1, 8, 8, 4, 8192);
    check(compare(s), {"dense_mla", "q_absorb", "v_up"});
  }
  SECTION("Llama-3.1-70B, TP 8 (one kv head per GPU)") {
    const ess::Scenario s = scenario_text("llama70b-tp8", R"("llama-3.1-70b")", "h200-sxm", 1, 8, 1, 4, 1024);
    check(compare(s), {"attention", "qkv", "o"});
  }
  SECTION("Llama-2-7B on one A100 (the bundled scenario, on the measured profile)") {
    const ess::Scenario s = scenario("scenarios/llama2-7b-a100-decode.json", {});
    check(compare(s), {"attention", "qkv"});
  }
}

TEST_CASE("the comparison fails when the command is given another shape than the step", "[contract]") {
  const ess::Scenario s = scenario("scenarios/dsv32-baseline-32k.json", {"workload.batch_per_gpu=4"});
  const Outcome o = compare(s, false, 1024);
  std::set<std::string> wrong_kinds;
  for (const std::string& w : o.wrong) wrong_kinds.insert(w.substr(0, w.find(' ')));
  // A longer context changes what the indexer scores and sorts; sparse MLA still reads top_k
  // entries (the context only caps them), and the GEMMs do not see it.
  CHECK(wrong_kinds == std::set<std::string>{"indexer_score", "indexer_topk"});
}

}  // namespace cost_step_graph
