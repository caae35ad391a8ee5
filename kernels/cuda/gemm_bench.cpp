#include "kernels/cuda/gemm_bench.h"

#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runner.h"

namespace ess::bench {

namespace {

struct Types {
  cudaDataType_t in;
  cudaDataType_t out;
  std::int64_t in_bytes;
  FillType fill;
};

Types types_of(GemmDtype d) {
  switch (d) {
    case GemmDtype::bf16: return {CUDA_R_16BF, CUDA_R_16BF, 2, FillType::bf16};
    case GemmDtype::fp16: return {CUDA_R_16F, CUDA_R_16F, 2, FillType::fp16};
    case GemmDtype::fp8: return {CUDA_R_8F_E4M3, CUDA_R_16BF, 1, FillType::fp8_e4m3};
  }
  return {CUDA_R_16BF, CUDA_R_16BF, 2, FillType::bf16};
}

constexpr std::uint64_t kGemmSeed = 0x6e6d6d6547ULL;  // any fixed value: the data only has to be
                                                      // random and non-zero, and reproducible
constexpr std::int64_t kOutBytes = 2;                 // bf16 or fp16 output

}  // namespace

GemmCase::GemmCase(Runner& runner, std::int64_t m, std::int64_t n, std::int64_t k, GemmDtype dtype)
    : runner_(runner) {
  const Types t = types_of(dtype);
  // Column-major view (cuBLAS): D(n x m) = op(A)(n x k) B(k x m) with A = W stored k x n (ld k)
  // and transposed, B = X stored k x m (ld k), D = Y stored n x m (ld n).
  ESS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  ESS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                  sizeof transpose));
  ESS_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  ESS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, t.in, u(k), u(n), k));
  ESS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, t.in, u(k), u(m), k));
  ESS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, t.out, u(n), u(m), n));

  cublasLtMatmulPreference_t preference = nullptr;
  ESS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto workspace = static_cast<std::size_t>(kGemmWorkspaceBytes);
  ESS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  int returned = 0;
  // The heuristic's first choice: what cublasLtMatmul users (PyTorch, vLLM) get without tuning.
  // A shape or type the library cannot do comes back as an error status or as no result; either
  // way that one sample is skipped (and named in environment.method), not the whole run.
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      runner.lt, desc_, a_, b_, c_, c_, preference, 1, &heuristic_, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  has_algorithm_ = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (!has_algorithm_) {
    why_not_ = status == CUBLAS_STATUS_SUCCESS ? "no algorithm returned"
                                               : cublasLtGetStatusString(status);
    return;
  }

  const std::int64_t w_bytes = round_up(k * n * t.in_bytes, kDefaultAlignment);
  const std::int64_t x_bytes = round_up(m * k * t.in_bytes, kDefaultAlignment);
  const std::int64_t y_bytes = m * n * kOutBytes;
  x_offset_ = w_bytes;
  y_offset_ = w_bytes + x_bytes;
  plan_ = rotation_plan(y_offset_ + y_bytes, runner.l2_bytes);
  // The output slots are filled too (harmlessly): one fill over the whole arena is simplest.
  arena_ = runner.random_device_buffer(plan_.total_bytes(), t.fill, kGemmSeed);
}

GemmCase::~GemmCase() {
  if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
  if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
  if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

void GemmCase::enqueue(std::int64_t index, cudaStream_t stream) const {
  static const float alpha = 1.0f;
  static const float beta = 0.0f;
  const std::byte* slot = arena_.data() + index % plan_.copies * plan_.slot_bytes;
  const std::byte* w = slot;
  const std::byte* x = slot + x_offset_;
  auto* y = const_cast<std::byte*>(slot + y_offset_);
  ESS_CUBLAS_CHECK(cublasLtMatmul(runner_.lt, desc_, &alpha, w, a_, x, b_, &beta, y, c_, y, c_,
                                  &heuristic_.algo, runner_.workspace.data(),
                                  static_cast<std::size_t>(kGemmWorkspaceBytes), stream));
}

void run_gemm(Runner& r) {
  const Sweep& s = r.sweep;
  std::vector<GemmDtype> dtypes;
  for (const GemmDtype d : s.gemm_dtypes) {
    if (d == GemmDtype::fp8 && !r.fp8) {
      r.skip("gemm fp8 (compute capability " + std::to_string(r.prop.major) + "." +
             std::to_string(r.prop.minor) + " < 8.9 has no fp8 tensor cores)");
      continue;
    }
    dtypes.push_back(d);
  }
  const auto total = static_cast<std::int64_t>(dtypes.size() * s.gemm_shapes.size() * s.gemm_m.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, true, std::nullopt};
  for (const GemmDtype dtype : dtypes) {
    for (const GemmShape& shape : s.gemm_shapes) {
      for (const std::int64_t m : s.gemm_m) {
        const std::string what = std::string(to_string(dtype)) + " m=" + std::to_string(m) +
                                 " n=" + std::to_string(shape.n) + " k=" +
                                 std::to_string(shape.k) + " (" + std::string(shape.model) + " " +
                                 std::string(shape.layer) + ")";
        if (!r.time_left()) {
          r.skip("gemm: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          return;
        }
        const GemmCase gemm(r, m, shape.n, shape.k, dtype);
        if (!gemm.has_algorithm()) {
          r.skip("gemm " + what + " (cuBLASLt heuristic: " + gemm.why_not() + ")");
          ++index;
          continue;
        }
        const std::vector<double> t =
            r.timer.run(r.stream, [&](std::int64_t i) { gemm.enqueue(i, r.stream); }, timing);
        r.add(gemm_sample(m, shape.n, shape.k, dtype, compute_stats(t)), what, index, total);
        ++index;
      }
    }
  }
}

}  // namespace ess::bench
