// DeepGEMM README tables, transcribed: FP8 GEMM rates of DeepSeek-V3 shapes, normal and grouped.
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

// deepseek-ai/DeepGEMM README "Performance" tables (deepgemm_h800_fp8_gemm.csv).
void read_deepgemm(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"readme_commit", "gpu", "kind", "groups", "m", "n", "k", "tflops", "gbps", "us_derived",
                   "speedup_vs_cutlass36"},
                  "DeepGEMM");
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_kind = t.column("kind");
  const std::size_t c_groups = t.column("groups");
  const std::size_t c_m = t.column("m");
  const std::size_t c_n = t.column("n");
  const std::size_t c_k = t.column("k");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  const std::size_t c_us = t.column("us_derived");
  const std::size_t c_speedup = t.column("speedup_vs_cutlass36");
  VersionBlocks versions;
  std::set<std::string> gpus;
  struct Row {
    bool grouped;
    std::int64_t groups, m, n, k;
    double seconds;
  };
  Newest<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, Row> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string kind = choice(t, r, c_kind, {"normal", "grouped-contiguous", "grouped-masked"});
    const std::int64_t g = t.integer(r, c_groups, kGroups);
    if (kind == "normal" && g != 1) t.fail(r, c_groups, "a normal GEMM has 1 group, got " + shown(t.text(r, c_groups)));
    const std::int64_t m = t.integer(r, c_m, kTokens);
    const std::int64_t n = t.integer(r, c_n, kFeatures);
    const std::int64_t k = t.integer(r, c_k, kFeatures);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    const double gbps = positive_number(t, r, c_gbps, kMaxGbps, "GB/s");
    const double us = positive_number(t, r, c_us, kMaxSeconds * 1e6, "us");
    // The speed-up over CUTLASS 3.6 is recorded, not used: "1.4x".
    const std::string& speedup = t.text(r, c_speedup);
    double x = 0.0;
    const auto [end, ec] = std::from_chars(speedup.data(), speedup.data() + speedup.size(), x);
    if (ec != std::errc() || end != speedup.data() + speedup.size() - 1 || *end != 'x' || !(x > 0.0)) {
      t.fail(r, c_speedup, "expected a speed-up such as 1.4x, got \"" + shown(speedup) + "\"");
    }
    // The header's arithmetic: FLOP = 2 groups m n k; bytes = groups (m k + k n + 2 m n).
    const double gd = static_cast<double>(g);
    const double md = static_cast<double>(m);
    const double nd = static_cast<double>(n);
    const double kd = static_cast<double>(k);
    const double seconds = checked_time(t, r, c_tflops, 2.0 * gd * md * nd * kd / (tflops * 1e12));
    check_agrees(t, r, c_us, us * 1e-6, seconds, kDerivedTolerance, "2 groups m n k / TFLOPS");
    check_agrees(t, r, c_gbps, gbps, gd * (md * kd + kd * nd + 2.0 * md * nd) / seconds / 1e9, kDerivedTolerance,
                 "groups (m k + k n + 2 m n) / time");
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    gpus.insert(t.text(r, c_gpu));
    newest.add({kind, g, m, n, k}, Row{kind != "normal", g, m, n, k, seconds});
  }
  for (const Row& row : newest.rows()) {
    if (row.grouped) {
      // Every group has the same rows in DeepGEMM's benchmark (masked rows: masked_m = m).
      out.grouped_gemm.push_back({GroupedGemmShape{row.groups, row.groups * row.m, row.n, row.k, DType::fp8}, row.seconds});
      ++in.used["grouped-gemm"];
    } else {
      out.gemm.push_back({GemmShape{row.m, row.n, row.k, DType::fp8}, row.seconds});
      ++in.used["gemm"];
    }
  }
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  one_gpu(gpus, in);
  in.date = "DeepGEMM README versions " + versions.text() + " (dates in the file's header; the newest version of each shape is used)";
  in.environment = "DeepGEMM bench_kineto kernel times as TFLOPS, transcribed (the file's header names NVCC and method)";
}

}  // namespace

extern const CsvFormat kDeepGemmFormat{
    "deepgemm", "the DeepGEMM table",
    [](const CsvTable& t) { return t.has("speedup_vs_cutlass36"); }, read_deepgemm};

}  // namespace ess::measurement
