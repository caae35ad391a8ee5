#include "models/mla_kernels.h"

#include <array>

namespace ess {

namespace {

constexpr std::array<MlaKernel, 2> kKernels = {{
    {"flashmla",
     "FlashMLA decode (dense BF16 cache, or sparse FP8-KV for DeepSeek-V3.2): BF16 MMAs, query rows in 64-row tiles",
     64, DType::bf16,
     "deepseek-ai/FlashMLA README @066b5ba: the sparse kernel 'uses an FP8 KV cache while performing the matrix "
     "multiplication in bfloat16', the dense one reads a BF16 cache; 64-row tiles: FlashMLA's dense test on H20 "
     "runs h_q 16 in one time for s_q 1 to 4 and twice that at s_q 5 (calibration/data/public/deepseek/"
     "flashmla_h100_h20_dense.csv)"},
    {"fp8-mma",
     "MLA decode with FP8 MMAs (FP8 queries and cache), query rows in 64-row tiles",
     64, DType::fp8,
     "assumption: a kernel whose MMAs take FP8 operands at the GPU's FP8 peak, with FlashMLA's tiling and the "
     "hardware's fitted attention efficiencies; no public measurement of such a kernel is in calibration/data/public/"},
}};

}  // namespace

std::span<const MlaKernel> mla_kernels() { return kKernels; }

std::vector<std::string> mla_kernel_names() {
  std::vector<std::string> names;
  for (const MlaKernel& k : kKernels) names.emplace_back(k.name);
  return names;
}

const MlaKernel* find_mla_kernel(std::string_view name) {
  for (const MlaKernel& k : kKernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace ess
