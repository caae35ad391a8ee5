// The weight GEMMs one decode step issues, as a list: for each, the simulator's op name and the
// weight's shape on one GPU, Y[T x n] = X[T x k] W[k x n] for T tokens. This is the one place
// that says which (n, k, dtype) the cost models are asked to price, so that what ess-bench measures
// (kernels/bench, through the shapes file `ess-sim validate --prepare` writes) can be derived
// from it. It must match what DecodeStepBuilder (decode_step.cpp) appends, op for op:
// tests/contract/weight_gemms_test.cpp builds step plans and checks both directions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/dtype.h"
#include "sim/config/deployment_config.h"
#include "sim/config/model_config.h"

namespace ess {

// How the op runs the weight:
//  dense     one plain GEMM of T rows (gemm(), flops 2 T n k);
//  per_head  the absorbed-MLA per-head products (q_absorb, v_up): a strided batched GEMM of
//            `heads` small products that the simulator prices as one GEMM of the listed n and k
//            (flops 2 T n k);
//  grouped   the routed experts (grouped_gemm()): each of the routed (token, expert) rows
//            multiplies one expert's k x n weight (flops 2 rows n k; a GPU gets rows from every GPU of its
//            expert-parallel group).
enum class WeightGemmForm { dense, per_head, grouped };

[[nodiscard]] constexpr std::string_view to_string(WeightGemmForm f) {
  switch (f) {
    case WeightGemmForm::dense: return "dense";
    case WeightGemmForm::per_head: return "per_head";
    case WeightGemmForm::grouped: return "grouped";
  }
  return "?";
}

struct WeightGemm {
  std::string_view name;  // the op's name in the step plan and in ess-runner traces ("q_a_kv_a")
  WeightGemmForm form = WeightGemmForm::dense;
  std::int64_t n = 0;     // output features on one GPU (after the tensor-parallel split)
  std::int64_t k = 0;     // input features
  DType dtype = DType::bf16;  // the dtype the cost model is given (weights; lm_head and the
                              // per-head products use the activation dtype, the router bf16)
};

// Every weight GEMM of one decode step of `model` under `tensor_parallel` GPUs per attention
// replica and `expert_parallel` GPUs per expert-parallel group, with `mtp_depth` query tokens per
// request (> 1 adds the MTP modules' eh_proj), each once, in the order a step first issues them:
// attention (MLA or GQA), the dense MLP when some layer is dense, the MoE block when the model has
// one, the LM head, then eh_proj.
// Throws InternalError if tensor_parallel, expert_parallel or mtp_depth < 1 (the scenario loader
// checks them).
[[nodiscard]] std::vector<WeightGemm> weight_gemms(const ModelConfig& model, const Parallelism& parallelism, int mtp_depth);
// The same for a layout without moe_tensor_parallel stated: tensor_parallel / expert_parallel
// under TP attention, 1 under DP attention (the reader's default).
[[nodiscard]] std::vector<WeightGemm> weight_gemms(const ModelConfig& model, int tensor_parallel, int expert_parallel,
                                                   int mtp_depth);

}  // namespace ess
