// vLLM's H100 PCIe Gen5 block-size sweep: cudaMemcpyAsync per block against a UVA copy kernel.
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

// vLLM's KV-offloading blog (pcie_h100_block_sweep.csv): each point moves 1000 blocks.
constexpr std::int64_t kSweepBlocks = 1000;
constexpr const char* kSweepGpu = "H100 80GB HBM3 (PCIe Gen5, Xeon Sapphire Rapids host; vLLM blog)";
constexpr IntRange kBlockKib{1, std::int64_t{1} << 20, "KiB"};

void read_pcie_sweep(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"block_kib", "h2d_dma_gbps", "h2d_kernel_gbps", "d2h_dma_gbps", "d2h_kernel_gbps"}, "PCIe block sweep");
  in.gpu = kSweepGpu;
  in.date = "2026-01-08 (the blog post; the file's header)";
  in.environment = "CUDA 12.9; one cudaMemcpyAsync per block (dma) vs a UVA copy kernel, read off charts (+-3% of full scale)";
  const std::size_t c_kib = t.column("block_kib");
  const struct {
    CopyDirection dir;
    std::size_t dma, kernel;
  } cols[2] = {{CopyDirection::h2d, t.column("h2d_dma_gbps"), t.column("h2d_kernel_gbps")},
               {CopyDirection::d2h, t.column("d2h_dma_gbps"), t.column("d2h_kernel_gbps")}};
  for (const CsvRow& r : t.rows()) {
    const double bytes = static_cast<double>(t.integer(r, c_kib, kBlockKib) * 1024 * kSweepBlocks);
    for (const auto& c : cols) {
      const double dma = positive_number(t, r, c.dma, kMaxGbps, "GB/s") * 1e9;
      const double kernel = positive_number(t, r, c.kernel, kMaxGbps, "GB/s") * 1e9;
      const double dma_s = checked_time(t, r, c.dma, bytes / dma);
      const double kernel_s = checked_time(t, r, c.kernel, bytes / kernel);
      if (!gpu_matches(in.gpu, o)) continue;
      out.copy.push_back({c.dir, bytes, kSweepBlocks, dma_s});
      out.gather.push_back({c.dir, bytes, kernel_s});
      ++in.used["copy"];
      ++in.used["gather"];
    }
  }
}

}  // namespace

extern const CsvFormat kPcieSweepFormat{
    "pcie-sweep", "the PCIe block-size sweep",
    [](const CsvTable& t) { return t.has("block_kib"); }, read_pcie_sweep};

}  // namespace ess::measurement
