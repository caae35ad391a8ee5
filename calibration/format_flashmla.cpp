// FlashMLA decode figures: the README and deep-dive rates on H800, third-party dense runs on H100/H20.
#include "calibration/measurement_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "models/mla_kernels.h"

#include "calibration/format_helpers.h"

namespace ess::measurement {

namespace {

// DeepSeek-V3 MLA sizes FlashMLA's figures are for: kv_lora_rank 512 + rope 64, 656-byte FP8 entries
// (the file's header: 512 e4m3 + 4 fp32 scales + 64 bf16 RoPE).
constexpr std::int64_t kMlaQkDim = 576;
constexpr std::int64_t kMlaVDim = 512;
constexpr double kMlaFp8EntryBytes = 656.0;

// deepseek-ai/FlashMLA README and FP8 sparse deep-dive figures (flashmla_h800.csv).
void read_flashmla(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"gpu", "kernel", "regime", "batch", "h_q", "s_q", "topk", "tflops", "gbps", "us_derived", "cuda",
                   "commit"},
                  "FlashMLA");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_kernel = t.column("kernel");
  const std::size_t c_regime = t.column("regime");
  const std::size_t c_batch = t.column("batch");
  const std::size_t c_hq = t.column("h_q");
  const std::size_t c_sq = t.column("s_q");
  const std::size_t c_topk = t.column("topk");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  const std::size_t c_us = t.column("us_derived");
  std::set<std::string> gpus;
  std::set<std::string> commits;
  Newest<std::string, KernelRatePoint> rates;  // by regime: the last figure (newest README/CUDA)
  Newest<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, SparseMlaPoint> sparse;
  for (const CsvRow& r : t.rows()) {
    const std::string kernel = choice(t, r, c_kernel, {"dense-bf16", "sparse-fp8kv", "sparse-fp8kv-no-crossover"});
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    gpus.insert(t.text(r, c_gpu));
    commits.insert(t.text(r, t.column("commit")));
    if (kernel == "dense-bf16") {
      const std::string regime = choice(t, r, c_regime, {"memory-bound", "compute-bound"});
      const bool compute = regime == "compute-bound";
      const std::size_t c_rate = compute ? c_tflops : c_gbps;
      const double rate = positive_number(t, r, c_rate, compute ? kMaxTflops : kMaxGbps, compute ? "TFLOPS" : "GB/s");
      rates.add(regime, KernelRatePoint{compute, rate * (compute ? 1e12 : 1e9)});
      continue;
    }
    if (kernel == "sparse-fp8kv-no-crossover") {
      ++in.skipped["sparse kernel without its crossover optimisation (an ablation, not the shipped kernel)"];
      continue;
    }
    const std::int64_t b = t.integer(r, c_batch, kTokens);
    const std::int64_t h = t.integer(r, c_hq, kHeads);
    const std::int64_t sq = t.integer(r, c_sq, kHeads);
    const std::int64_t topk = t.integer(r, c_topk, kTokens);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    // FLOP as FlashMLA counts them (the header): 2 b s_q h_q topk (576 + 512).
    const double flops = 2.0 * static_cast<double>(b) * static_cast<double>(sq) * static_cast<double>(h) *
                         static_cast<double>(topk) * static_cast<double>(kMlaQkDim + kMlaVDim);
    const double seconds = checked_time(t, r, c_tflops, flops / (tflops * 1e12));
    check_agrees(t, r, c_us, positive_number(t, r, c_us, kMaxSeconds * 1e6, "us") * 1e-6, seconds, kDerivedTolerance,
                 "2 b s_q h_q topk 1088 / TFLOPS");
    sparse.add({b, h, sq, topk}, SparseMlaPoint{MlaShape{b, sq, h, kMlaQkDim, kMlaVDim, Bytes(kMlaFp8EntryBytes)}, topk, seconds});
  }
  use_newest(rates, out.attention_rates, "attention", in);
  use_newest(sparse, out.sparse_attention, "sparse-attention", in);
  if (rates.superseded() + sparse.superseded() > 0) {
    in.skipped["figures superseded by a later README version or CUDA release (the last row is used)"] =
        rates.superseded() + sparse.superseded();
  }
  one_gpu(gpus, in);
  in.date = "FlashMLA README/doc versions " + joined(commits) + " (dates in the file's header)";
  in.environment = "published TFLOPS and GB/s figures, transcribed; H800 SXM5, CUDA 12.8 for the rows used";
}

// Third-party runs of FlashMLA's dense decode test (tests/test_flash_mla.py) on H100 and H20
// (flashmla_h100_h20_dense.csv): BF16 cache, h_kv 1, d 576, dv 512, b requests of mean_s_k tokens.
// The file prints "<ms> ms, <TFLOPS>, <GB/s>" with FLOP = 2 b s_q h_q s_k (576 + 512) (useful FLOP,
// before the kernel's 64-row padding) and bytes = (b s_k 576 + b s_q h_q (576 + 512)) 2; TFLOPS and
// GB/s are whole numbers, so they must agree with ms within 3%. Rows with variable lengths (varlen
// True: each s_k drawn from normal(mean, mean / 2), the draw not recorded) are skipped: the model
// prices equal contexts and the file does not say the total.
constexpr double kMlaBf16EntryBytes = 1152.0;  // (512 + 64) x 2 B
constexpr double kPrintedRateTolerance = 0.03;

void read_flashmla_dense(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"gpu", "batch", "s_q", "mean_s_k", "h_q", "varlen", "ms", "tflops", "gbps"}, "FlashMLA dense test");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_batch = t.column("batch");
  const std::size_t c_sq = t.column("s_q");
  const std::size_t c_sk = t.column("mean_s_k");
  const std::size_t c_hq = t.column("h_q");
  const std::size_t c_varlen = t.column("varlen");
  const std::size_t c_ms = t.column("ms");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  std::set<std::string> gpus;
  for (const CsvRow& r : t.rows()) {
    const bool varlen = choice(t, r, c_varlen, {"False", "True"}) == "True";
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    const std::int64_t b = t.integer(r, c_batch, kTokens);
    const std::int64_t sq = t.integer(r, c_sq, kHeads);
    const std::int64_t sk = t.integer(r, c_sk, kTokens);
    const std::int64_t h = t.integer(r, c_hq, kHeads);
    const double seconds = checked_time(t, r, c_ms, positive_number(t, r, c_ms, kMaxSeconds * 1e3, "ms") * 1e-3);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    const double gbps = positive_number(t, r, c_gbps, kMaxGbps, "GB/s");
    if (varlen) {
      ++in.skipped["variable-length rows (the drawn contexts are not recorded; the model prices equal ones)"];
      continue;
    }
    gpus.insert(t.text(r, c_gpu));
    const double bd = static_cast<double>(b);
    const double qh = static_cast<double>(sq) * static_cast<double>(h);
    const double flops = 2.0 * bd * qh * static_cast<double>(sk) * static_cast<double>(kMlaQkDim + kMlaVDim);
    const double bytes = (bd * static_cast<double>(sk) * static_cast<double>(kMlaQkDim) +
                          bd * qh * static_cast<double>(kMlaQkDim + kMlaVDim)) * 2.0;
    check_agrees(t, r, c_tflops, tflops, flops / seconds / 1e12, kPrintedRateTolerance, "2 b s_q h_q s_k 1088 / ms");
    check_agrees(t, r, c_gbps, gbps, bytes / seconds / 1e9, kPrintedRateTolerance, "(b s_k 576 + b s_q h_q 1088) 2 / ms");
    MlaShape shape{b, sq, h, kMlaQkDim, kMlaVDim, Bytes(kMlaBf16EntryBytes)};
    shape.row_tile = find_mla_kernel("flashmla")->row_tile;
    out.dense_attention.push_back(DenseMlaPoint{shape, sk, seconds});
    ++in.used["dense-attention"];
  }
  one_gpu(gpus, in);
  in.date = "third-party runs of February 2025 (the file's header: achatbot PR 123 on Modal H100, FlashMLA issue 30 on H20)";
  in.environment = "FlashMLA's first release; H100: pytorch 2.6.0 + CUDA 12.6; H20: not recorded";
}

}  // namespace

extern const CsvFormat kFlashMlaFormat{
    "flashmla", "the FlashMLA H800 table",
    [](const CsvTable& t) { return t.has("h_q") && t.has("topk"); }, read_flashmla};

extern const CsvFormat kFlashMlaDenseFormat{
    "flashmla-dense", "the FlashMLA dense H100/H20 table",
    [](const CsvTable& t) { return t.has("h_q") && t.has("mean_s_k"); }, read_flashmla_dense};

}  // namespace ess::measurement
