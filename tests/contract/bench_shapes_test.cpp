// Contract: ess-bench's built-in GEMM list (kernels/bench/sweep.cpp, which must build on a GPU
// machine without the simulator) is exactly the weight GEMMs the simulator issues for the model
// presets (sim/graph/weight_gemms.h): every (n, k) once, under the op that first issues it, the
// per-head batched products left out. A change to a model preset or to the step's GEMMs fails
// here until the built-in list follows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/bench/gemm_shapes.h"
#include "kernels/bench/sweep.h"
#include "sim/config/scenario.h"
#include "sim/graph/weight_gemms.h"

namespace {

// The model preset `name` as a scenario resolves it (the parallelism does not enter the model).
ess::ModelConfig preset(const std::string& name) {
  // DeepSeek (MoE) needs data-parallel attention and EP; the Llamas fit one H200 node at TP 8.
  const bool moe = name == "deepseek-v3.2-exp";
  const std::string parallelism = moe ? R"({"attention_dp": 8, "tensor_parallel": 1, "expert_parallel": 8})"
                                      : R"({"attention_dp": 1, "tensor_parallel": 8, "expert_parallel": 1})";
  const std::string text = R"({"schema": "ess-sim/scenario/v1", "name": "shapes", "seed": 1, "model": ")" + name +
                           R"(", "hardware": "h200-sxm", "parallelism": )" + parallelism +
                           R"(, "workload": {"batch_per_gpu": 1, "context_length": 1024, "decode_steps": 1},
      "cache": {"mode": "gpu"}})";
  return ess::load_scenario_text(text, "shapes.json").model;
}

// What ess-bench should measure for a model: weight_gemms at TP 1 (MTP 2 where the model has an
// MTP module), without per-head products, each (n, k) once.
std::vector<ess::bench::GemmShape> expected_for(const std::string& name) {
  const ess::ModelConfig m = preset(name);
  std::vector<ess::bench::GemmShape> out;
  for (const ess::WeightGemm& g : ess::weight_gemms(m, 1, 1, m.mtp_layers > 0 ? 2 : 1)) {
    if (g.form == ess::WeightGemmForm::per_head) continue;
    const bool present =
        std::any_of(out.begin(), out.end(), [&](const ess::bench::GemmShape& s) { return s.n == g.n && s.k == g.k; });
    if (!present) out.push_back({name, std::string(g.name), g.n, g.k});
  }
  return out;
}

std::vector<ess::bench::GemmShape> builtin_for(const std::string& name) {
  std::vector<ess::bench::GemmShape> out;
  for (const auto& s : ess::bench::model_gemm_shapes()) {
    if (s.model == name) out.push_back(s);
  }
  return out;
}

std::string show(const std::vector<ess::bench::GemmShape>& v) {
  std::string out;
  for (const auto& s : v) out += s.layer + " " + std::to_string(s.n) + "x" + std::to_string(s.k) + "; ";
  return out;
}

}  // namespace

TEST_CASE("ess-bench's built-in GEMMs are weight_gemms of the model presets", "[contract]") {
  for (const std::string name : {"deepseek-v3.2-exp", "llama-2-7b", "llama-3.1-70b"}) {
    const auto expected = expected_for(name);
    const auto builtin = builtin_for(name);
    INFO(name << "\n  expected: " << show(expected) << "\n  built in: " << show(builtin));
    REQUIRE(builtin.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(builtin[i].layer == expected[i].layer);
      CHECK(builtin[i].n == expected[i].n);
      CHECK(builtin[i].k == expected[i].k);
    }
  }
  // Nothing else is built in.
  CHECK(ess::bench::model_gemm_shapes().size() ==
        expected_for("deepseek-v3.2-exp").size() + expected_for("llama-2-7b").size() + expected_for("llama-3.1-70b").size());
}

TEST_CASE("the comparison sees a split q_a / kv_a list as wrong", "[contract]") {
  // The list ess-bench had before: q_a and kv_a apart. It must not pass for the preset.
  const std::vector<ess::bench::GemmShape> old = {{"deepseek-v3.2-exp", "q_a_proj", 1536, 7168},
                                                  {"deepseek-v3.2-exp", "kv_a_proj", 576, 7168}};
  const auto expected = expected_for("deepseek-v3.2-exp");
  for (const auto& s : old) {
    CHECK(std::none_of(expected.begin(), expected.end(),
                       [&](const ess::bench::GemmShape& e) { return e.n == s.n && e.k == s.k; }));
  }
  CHECK(expected.front().layer == "q_a_kv_a");
  CHECK(expected.front().n == 2112);
}
