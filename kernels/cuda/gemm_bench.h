// One cuBLASLt GEMM, ready to enqueue repeatedly: Y[m x n] = X[m x k] W[k x n] with fp32
// accumulation (CUBLAS_COMPUTE_32F), W stored as nn.Linear stores it ([n x k] row-major, i.e.
// cuBLAS's "TN" layout, which FP8 requires), bf16/fp16 in and out, or fp8 e4m3 in and bf16 out.
// The buffers rotate over copies of (W, X, Y) so that repetitions read weights from HBM, not L2.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "kernels/bench/stats.h"
#include "kernels/bench/sweep.h"
#include "kernels/cuda/buffers.h"

namespace ess::bench {

class Runner;

class GemmCase {
 public:
  GemmCase(Runner& runner, std::int64_t m, std::int64_t n, std::int64_t k, GemmDtype dtype);
  ~GemmCase();
  GemmCase(const GemmCase&) = delete;
  GemmCase& operator=(const GemmCase&) = delete;

  // False when cuBLASLt's heuristic offers no algorithm for this shape and type (the sample is
  // then skipped, not failed).
  [[nodiscard]] bool has_algorithm() const { return has_algorithm_; }
  // Why not, when has_algorithm() is false (the heuristic's status).
  [[nodiscard]] const std::string& why_not() const { return why_not_; }

  // Repetition `index` on `stream`, using buffer copy index % copies.
  void enqueue(std::int64_t index, cudaStream_t stream) const;

 private:
  Runner& runner_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr;  // W
  cublasLtMatrixLayout_t b_ = nullptr;  // X
  cublasLtMatrixLayout_t c_ = nullptr;  // Y
  cublasLtMatmulHeuristicResult_t heuristic_{};
  bool has_algorithm_ = false;
  std::string why_not_;
  RotationPlan plan_;
  std::int64_t x_offset_ = 0;
  std::int64_t y_offset_ = 0;
  DeviceBuffer arena_;
};

}  // namespace ess::bench
