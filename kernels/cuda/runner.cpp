#include "kernels/cuda/runner.h"

#include <cstdio>
#include <utility>

namespace ess::bench {

volatile std::sig_atomic_t g_stop_requested = 0;

namespace {

int make_current(int device) {
  ESS_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

}  // namespace

Runner::Runner(const Options& o, const Sweep& s)
    : options(o), sweep(s), device(make_current(o.device)), start_(std::chrono::steady_clock::now()) {
  ESS_CUDA_CHECK(cudaGetDeviceCount(&gpu_count));
  ESS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  l2_bytes = prop.l2CacheSize;
  // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
  fp8 = prop.major * 10 + prop.minor >= 89;
  ESS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ESS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream2, cudaStreamNonBlocking));
  ESS_CUBLAS_CHECK(cublasLtCreate(&lt));
  workspace = DeviceBuffer(kGemmWorkspaceBytes);
}

Runner::~Runner() {
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  cudaStreamDestroy(stream2);
}

double Runner::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Runner::time_left() const {
  if (g_stop_requested != 0) return false;
  return !options.max_seconds || elapsed_s() < *options.max_seconds;
}

std::string Runner::stop_reason() const {
  return g_stop_requested != 0 ? "stopped by a signal" : "--max-seconds reached";
}

void Runner::add(Sample sample, std::string_view what, std::int64_t index, std::int64_t total) {
  const Stats& st = sample.statistics();
  std::fprintf(stderr, "[%s %lld/%lld %.1fs] %.*s: median %.3f us, p10-p90 %.3f-%.3f us, R=%lld\n",
               sample.kind.c_str(), static_cast<long long>(index + 1),
               static_cast<long long>(total), elapsed_s(), static_cast<int>(what.size()),
               what.data(), st.median_s * 1e6, st.p10_s * 1e6, st.p90_s * 1e6,
               static_cast<long long>(st.repetitions));
  samples.push_back(std::move(sample));
}

void Runner::skip(const std::string& what) {
  std::fprintf(stderr, "ess-bench: skipped %s\n", what.c_str());
  skipped.push_back(what);
}

void Runner::note(const std::string& text) const {
  std::fprintf(stderr, "[%.1fs] %s\n", elapsed_s(), text.c_str());
}

DeviceBuffer Runner::random_device_buffer(std::int64_t bytes, FillType type, std::uint64_t seed) {
  DeviceBuffer b(bytes);
  const std::int64_t element = type == FillType::fp8_e4m3 ? 1 : 2;
  launch_fill(b.data(), type, bytes / element, seed, stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return b;
}

}  // namespace ess::bench
