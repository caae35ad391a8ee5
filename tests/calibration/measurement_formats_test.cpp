// The measurement-format registries (calibration/measurement_formats.h): names are unique, and each
// bundled public table is recognised by exactly one CSV format, the one that reads it, so the
// registry's first-match order never hides an ambiguous header.
#include "calibration/measurement_formats.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "calibration/measurements.h"
#include "sim/io/read_file.h"

namespace {

using ess::measurement::CsvFormat;
using ess::measurement::CsvTable;

std::string text_of(const std::string& path) {
  std::string text;
  REQUIRE(ess::read_whole_file(path, text) == ess::ReadProblem::none);
  return text;
}

}  // namespace

TEST_CASE("measurement formats: names are unique across both registries") {
  std::set<std::string> names;
  std::size_t count = 0;
  for (const auto* f : ess::measurement::json_formats()) {
    names.insert(f->name);
    ++count;
  }
  for (const CsvFormat* f : ess::measurement::csv_formats()) {
    names.insert(f->name);
    ++count;
    CHECK(std::string(f->what).size() > 0);
  }
  CHECK(names.size() == count);
}

TEST_CASE("measurement formats: each bundled table is recognised by exactly its own format") {
  const std::filesystem::path data = std::filesystem::path(ESS_SOURCE_DIR) / "calibration/data/public";
  struct Table {
    std::string file;
    std::string format;
    std::string gpu;  // the --gpu filter a table of several GPUs needs
  };
  const std::vector<Table> tables = {
      {"vidur/compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv", "vidur-compute", ""},
      {"vidur/network_h100_dgx_all_reduce.csv", "vidur-network", ""},
      {"vidur/network_h100_dgx_send_recv.csv", "vidur-network", ""},
      {"liger/liger_norm_benchmarks.csv", "liger-norm", "H100"},
      {"deepseek/deepgemm_h800_fp8_gemm.csv", "deepgemm", ""},
      {"deepseek/flashmla_h800.csv", "flashmla", ""},
      {"deepseek/flashmla_h100_h20_dense.csv", "flashmla-dense", "H100"},
      {"deepseek/deepep_h800_low_latency.csv", "deepep-ll", ""},
      {"deepseek/deepep_h800_normal.csv", "deepep-normal", ""},
      {"deepseek/pcie_h100_block_sweep.csv", "pcie-sweep", ""},
      {"flashattention/fa3_h100_forward.csv", "flashattention", ""},
  };
  std::set<std::string> covered;
  for (const auto& [file, format, gpu] : tables) {
    const std::string path = (data / file).string();
    CAPTURE(path);
    const CsvTable t(ess::measurement::parse_csv(text_of(path), path), path);
    std::vector<std::string> accepted;
    for (const CsvFormat* f : ess::measurement::csv_formats()) {
      if (f->detect(t)) accepted.emplace_back(f->name);
    }
    REQUIRE(accepted == std::vector<std::string>{format});
    // The format recorded in the reading is the one recognised.
    const auto set = ess::read_measurements({path}, ess::ReadOptions{.gpu = gpu});
    CHECK(set.inputs.at(0).format == format);
    covered.insert(format);
  }
  // Every CSV format has a bundled table here: a new format comes with its example.
  for (const CsvFormat* f : ess::measurement::csv_formats()) CHECK(covered.count(f->name) == 1);
}
