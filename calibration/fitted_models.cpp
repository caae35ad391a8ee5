#include "calibration/fitted_model.h"

#include <array>

namespace ess::calibration {

namespace {

// Fit order (fitted_model.h says why it matters).
constexpr auto kFittedModels = std::to_array<FittedModel>({
    FittedModel{"pcie-copy", make_pcie_copy},
    FittedModel{"pcie-gather", make_pcie_gather},
    FittedModel{"gather-sm-share", make_gather_sm_share},
    FittedModel{"gemm", make_gemm},
    FittedModel{"gemm-measured", make_gemm_measured},
    FittedModel{"grouped-gemm", make_grouped_gemm},
    FittedModel{"attention", make_attention_rates},
    FittedModel{"dense-attention", make_dense_attention},
    FittedModel{"sparse-attention", make_sparse_attention},
    FittedModel{"prefill-attention", make_prefill_attention},
    FittedModel{"memory-bound", make_memory_bound},
    FittedModel{"allreduce", make_allreduce},
    FittedModel{"nvlink-p2p", make_nvlink_p2p},
    FittedModel{"alltoall", make_alltoall},
    FittedModel{"expert-alltoall", make_expert_alltoall},
    FittedModel{"alltoall-normal", make_alltoall_normal, false},
});

}  // namespace

std::span<const FittedModel> fitted_models() { return kFittedModels; }

std::vector<ModelSpec> model_specs(const MeasurementSet& m, const Hardware& base) {
  std::vector<ModelSpec> specs;
  for (const FittedModel& model : kFittedModels) {
    if (auto spec = model.make(m, base)) {
      spec->name = model.name;
      specs.push_back(std::move(*spec));
    }
  }
  return specs;
}

}  // namespace ess::calibration
