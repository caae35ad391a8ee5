// DeepSeek's fine-grained FP8 quantisation, the one place its shape is written: one fp32 scale per
// 128 values, for 128 x 128 weight blocks and 1 x 128 activation tiles (DeepSeek-V3 config.json
// quantization_config.weight_block_size = [128, 128]; technical report, arXiv 2412.19437, section
// 3.3.2). Used by the GEMM and all-to-all cost models (models/), the weight-memory plan
// (sim/memory) and FlashMLA's fp8 latent-row layout in the GPU runner (kernels/runner, C++17
// and nvcc: no dependencies).
#pragma once

namespace ess {

// Values that share one fp8 scale: the side of a weight block, the length of an activation tile,
// and the group of a latent row's fp8 values.
inline constexpr int kFp8ScaleGroup = 128;
// Bytes of one scale: fp32.
inline constexpr int kFp8ScaleBytes = 4;

}  // namespace ess
