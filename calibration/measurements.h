// Reading measurements for calibration: our own ess-bench output (kernels/, schema
// "ess-sim/measurements/v1", described in calibration/README.md) and three public formats, whose
// files are copied unchanged from their repositories into calibration/data/public/ (origins and
// licenses in its READMEs):
//
//   vidur-compute   microsoft/vidur data/profiling/compute/<gpu>/<model>/mlp.csv: per-layer GEMMs
//                   and RMSNorms of one model vs num_tokens and TP (times in ms, fp16)
//   vidur-network   microsoft/vidur data/profiling/network/<gpu>_dgx/{all_reduce,send_recv}.csv:
//                   NCCL times (ms) vs buffer size in bytes, 2..16 GPUs
//   liger-norm      linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv: RMSNorm and
//                   LayerNorm forward times (ms) vs hidden size, per GPU
//
// and the DeepSeek measurements transcribed into calibration/data/public/deepseek/ (each file's
// header comment, lines starting with '#', names its sources; the readers skip those lines):
//
//   deepgemm        DeepGEMM README tables: FP8 GEMM TFLOPS of DeepSeek-V3 shapes, normal and
//                   grouped (MoE) layouts, on H800, at several README versions
//   flashmla        FlashMLA decode on H800: dense BF16 peak rates, sparse FP8-KV kernel rates
//   flashmla-dense  third-party runs of FlashMLA's dense decode test on H100 and H20: kernel times
//   deepep-ll       DeepEP low-latency dispatch/combine times vs EP size on H800
//   deepep-normal   DeepEP normal kernels' bottleneck bandwidths (reported beside the fit)
//   pcie-sweep      vLLM's H100 PCIe Gen5 block-size sweep: cudaMemcpyAsync per block vs a UVA
//                   copy kernel
//
// The format is recognised from the content (a JSON schema field or a CSV header), never from
// the file name (the registries, one file per format: measurement_formats.h); the GPU of a Vidur
// file, which its content does not record, is read from its file name (compute_<gpu>_... or
// network_<gpu>_dgx_...).
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/attention_fit.h"
#include "models/collective_fit.h"
#include "models/gemm_fit.h"
#include "models/norm_fit.h"
#include "models/transfer_fit.h"
#include "sim/base/error.h"

namespace ess {

// A measurement file that cannot be read: `path`, and where in it (a line, a JSON pointer).
class MeasurementError : public InputError {
 public:
  MeasurementError(const std::string& path, const std::string& where, const std::string& message);
};

// What one input file contributed, for the profile's provenance.
struct MeasurementInput {
  std::string path;    // as given
  std::string format;  // the name of the format that read it (measurement_formats.h), e.g. "vidur-compute"
  std::string sha256;  // of the file's bytes
  std::string gpu;     // the GPU the rows used were measured on, as the file names it
  std::string date;    // when measured, as the file records it, or "not recorded"
  std::string environment;  // one line: driver, CUDA, tool version where the file records them
  std::map<std::string, std::size_t> used;     // samples used, per model
  std::map<std::string, std::size_t> skipped;  // rows skipped, per reason
};

// Every point, by the model it calibrates. Points from several files are pooled.
struct MeasurementSet {
  std::vector<MeasurementInput> inputs;
  std::vector<GemmPoint> gemm;
  std::vector<NormPoint> norm;
  std::vector<CopyPoint> copy;  // large copies (calls = 1) and per-row / per-run scattered copies
  std::vector<GatherPoint> gather;
  std::vector<InterferencePoint> interference;
  std::vector<CollectivePoint> allreduce;
  std::vector<CollectivePoint> alltoall;
  std::vector<CollectivePoint> p2p;
  std::vector<GroupedGemmPoint> grouped_gemm;       // DeepGEMM m-grouped (MoE) GEMMs
  std::vector<SparseMlaPoint> sparse_attention;     // FlashMLA sparse decode
  std::vector<KernelRatePoint> attention_rates;     // FlashMLA dense peak rates, oldest first
  std::vector<DenseMlaPoint> dense_attention;       // FlashMLA dense decode kernel times (H100, H20)
  std::vector<PrefillAttentionPoint> prefill_attention;  // FlashAttention-3 forward (causal prefill)
  std::vector<ExpertAlltoallPoint> expert_alltoall; // DeepEP low-latency dispatch and combine
  // DeepEP normal kernels' bottleneck bandwidth (B/s), within a node or across nodes: reported
  // beside the low-latency fit, not fitted.
  struct LinkRatePoint {
    bool intranode = false;
    int expert_parallel = 0;
    double rate = 0.0;
  };
  std::vector<LinkRatePoint> alltoall_normal;
  std::size_t duplicates_merged = 0;  // points that repeated a shape already read (see below)
};

struct ReadOptions {
  // Keep only rows whose GPU name contains this text (case-insensitive); empty keeps every row,
  // but then every row must come from the same GPU.
  std::string gpu;
  // GPUs per node of the hardware being calibrated: collective rows over more GPUs than this (or
  // spanning nodes) are skipped, since the fit covers the single-node model only.
  int gpus_per_node = 8;
};

// Reads every file and pools the points. Exact duplicates (the same shape measured twice in one
// file) are merged into one point whose time is the mean, so that no shape can sit in both the
// training and the held-out fold of a cross-validation.
// Throws MeasurementError, naming the file and the line and column or JSON pointer, on an
// unreadable or unrecognised file; malformed JSON (also duplicate keys, nesting deeper than 64
// levels, numbers beyond a double); a CSV with duplicate or unknown columns or a row of another
// width; a value of the wrong type or outside its physical range (times from 1 ns to 1 hour,
// integers that fit and are within the bounds in measurements.cpp); a file with no usable row for
// the chosen GPU; or (without options.gpu) rows from different GPUs. Never anything else on bad
// input.
// Rows a table lists more than once (the DeepSeek tables, one block of rows per README version,
// oldest first) are not averaged: the last version's row is used and the others are counted as
// superseded in the input's `skipped`.
[[nodiscard]] MeasurementSet read_measurements(const std::vector<std::string>& paths, const ReadOptions& options);

// The same for one file's text: `origin` names it in errors and in the result, and for a Vidur
// table carries the GPU in its file name (compute_<gpu>_... or network_<gpu>_dgx_...).
// read_measurements reads each file and calls this; the fuzz targets call it directly.
[[nodiscard]] MeasurementSet read_measurement_text(std::string_view text, const std::string& origin,
                                                   const ReadOptions& options);

}  // namespace ess
