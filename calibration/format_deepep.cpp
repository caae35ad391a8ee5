// DeepEP README tables, transcribed: low-latency dispatch/combine times and normal-kernel bandwidths.
#include "calibration/measurement_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "calibration/format_helpers.h"

namespace ess::measurement {

namespace {

// DeepEP's low-latency test (deepseek-ai/DeepEP tests/test_low_latency.py, hidden 7168, top-8) counts
// one token copy as 7408 bytes dispatched (FP8 with scales) and 14336 bytes combined (BF16); the
// file's header records these.
constexpr double kDeepEpDispatchBytes = 7408.0;
constexpr double kDeepEpCombineBytes = 14336.0;
constexpr std::int64_t kDeepEpTopk = 8;
// DeepEP's README measured on H800 with one CX7 400 Gb/s NIC per GPU; the tables have no GPU column.
constexpr const char* kDeepEpGpu = "H800 (DeepEP README: H800 + CX7 InfiniBand 400 Gb/s per GPU)";

void read_deepep_low_latency(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"readme_commit", "kernels", "ep", "tokens_per_rank", "dispatch_us", "dispatch_gbps", "combine_us",
                   "combine_gbps"},
                  "DeepEP low-latency");
  in.gpu = kDeepEpGpu;
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_kernels = t.column("kernels");
  const std::size_t c_ep = t.column("ep");
  const std::size_t c_tokens = t.column("tokens_per_rank");
  const struct {
    std::size_t us, gbps;
    double bytes_per_copy;
  } ops[2] = {{t.column("dispatch_us"), t.column("dispatch_gbps"), kDeepEpDispatchBytes},
              {t.column("combine_us"), t.column("combine_gbps"), kDeepEpCombineBytes}};
  VersionBlocks versions;
  Newest<std::tuple<std::int64_t, std::int64_t, int>, ExpertAlltoallPoint> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string kernels = choice(t, r, c_kernels, {"low-latency pure RDMA", "low-latency with NVLink"});
    const std::int64_t ep = t.integer(r, c_ep, kCollectiveGpus);
    const std::int64_t tokens = t.integer(r, c_tokens, kTokens);
    if (ep % o.gpus_per_node != 0 && o.gpus_per_node % ep != 0) {
      t.fail(r, c_ep, "EP " + std::to_string(ep) + " neither divides nor is a multiple of the base's " +
                          std::to_string(o.gpus_per_node) + " GPUs per node");
    }
    for (int op = 0; op < 2; ++op) {
      const double bytes = static_cast<double>(tokens * kDeepEpTopk) * ops[op].bytes_per_copy;
      const double seconds = positive_number(t, r, ops[op].us, kMaxSeconds * 1e6, "us") * 1e-6;
      (void)checked_time(t, r, ops[op].us, seconds);
      check_agrees(t, r, ops[op].gbps, positive_number(t, r, ops[op].gbps, kMaxGbps, "GB/s"), bytes / seconds / 1e9,
                   kRoundedRateTolerance, "tokens x 8 copies x bytes per copy / time");
      if (kernels != "low-latency with NVLink") continue;
      if (!gpu_matches(in.gpu, o)) continue;
      newest.add({ep, tokens, op}, ExpertAlltoallPoint{static_cast<int>(ep), o.gpus_per_node, bytes, seconds});
    }
    if (kernels != "low-latency with NVLink") {
      ++in.skipped["pure-RDMA rows (the older kernels; the engine carries traffic within a node over NVLink)"];
    } else if (!gpu_matches(in.gpu, o)) {
      ++in.skipped["rows of another GPU"];
    }
  }
  use_newest(newest, out.expert_alltoall, "alltoall", in);
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  in.date = "DeepEP README versions " + versions.text() + " (dates in the file's header)";
  in.environment = "DeepEP tests/test_low_latency.py, 128 tokens per rank, hidden 7168, top-8, FP8 dispatch, BF16 combine";
}

void read_deepep_normal(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"readme_commit", "type", "ep", "tokens_per_batch", "dispatch_gbps", "combine_gbps"}, "DeepEP normal");
  in.gpu = kDeepEpGpu;
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_type = t.column("type");
  const std::size_t c_ep = t.column("ep");
  const std::size_t c_tokens = t.column("tokens_per_batch");
  const std::size_t c_rate[2] = {t.column("dispatch_gbps"), t.column("combine_gbps")};
  VersionBlocks versions;
  Newest<std::tuple<std::string, std::int64_t, int>, MeasurementSet::LinkRatePoint> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string type = choice(t, r, c_type, {"intranode-NVLink", "internode-RDMA"});
    const std::int64_t ep = t.integer(r, c_ep, kCollectiveGpus);
    (void)t.integer(r, c_tokens, kTokens);
    for (int op = 0; op < 2; ++op) {
      const double rate = positive_number(t, r, c_rate[op], kMaxGbps, "GB/s") * 1e9;
      if (gpu_matches(in.gpu, o)) newest.add({type, ep, op}, {type == "intranode-NVLink", static_cast<int>(ep), rate});
    }
  }
  use_newest(newest, out.alltoall_normal, "alltoall-normal", in);
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  in.date = "DeepEP README versions " + versions.text() + " (dates in the file's header)";
  in.environment = "DeepEP normal kernels, 4096 tokens per batch, bottleneck bandwidth as published";
}

}  // namespace

extern const CsvFormat kDeepEpLowLatencyFormat{
    "deepep-ll", "the DeepEP low-latency table",
    [](const CsvTable& t) { return t.has("dispatch_us"); }, read_deepep_low_latency};

extern const CsvFormat kDeepEpNormalFormat{
    "deepep-normal", "the DeepEP normal-kernel table",
    [](const CsvTable& t) { return t.has("dispatch_gbps") && t.has("tokens_per_batch"); }, read_deepep_normal};

}  // namespace ess::measurement
