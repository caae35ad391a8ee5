// The measurements JSON contract (kernels/bench/measurements.h; schema in kernels/README.md): the
// exact text of a small document, each kind's keys in order, the method sentence and the summary.
#include "kernels/bench/measurements.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/kernels/h200_environment.h"

using namespace ess::bench;

namespace {

// Powers of two, so %.17g prints them exactly: 0.5, 0.25, ...
Stats round_stats() {
  Stats s;
  s.repetitions = 10;
  s.median_s = 0.5;
  s.mean_s = 0.25;
  s.min_s = 0.125;
  s.max_s = 1.0;
  s.p10_s = 0.125;
  s.p90_s = 0.75;
  s.std_s = 0.0625;
  return s;
}

Environment h200() {
  Environment e = ess::test::h200_environment();
  e.clocks.memory_mhz = 3201;
  e.driver = "570.86.15";
  e.cuda_driver_api = "12.8";
  e.cuda_runtime = "13.0";
  e.cublas = "13.0.0";
  e.method = "how";
  return e;
}

std::vector<std::string> keys(const Sample& s) {
  std::vector<std::string> k = {"kind"};
  for (const auto& f : s.fields) k.push_back(f.first);
  for (const auto& st : s.stats) k.push_back(st.first);
  return k;
}

}  // namespace

TEST_CASE("measurements: a small document is exactly the schema", "[kernels][measurements]") {
  const Stats st = round_stats();
  Stats alone = round_stats();
  alone.median_s = 0.375;
  const std::vector<Sample> samples = {gemm_sample(1, 24576, 1536, GemmDtype::bf16, st),
                                       interference_sample(GemmPoint{64, 129280, 7168}, 4096, 656, alone, st)};
  const std::string stats_text =
      "{\"repetitions\": 10, \"median_s\": 0.5, \"mean_s\": 0.25, \"min_s\": 0.125, \"max_s\": 1, "
      "\"p10_s\": 0.125, \"p90_s\": 0.75, \"std_s\": 0.0625}";
  const std::string alone_text =
      "{\"repetitions\": 10, \"median_s\": 0.375, \"mean_s\": 0.25, \"min_s\": 0.125, \"max_s\": 1, "
      "\"p10_s\": 0.125, \"p90_s\": 0.75, \"std_s\": 0.0625}";
  // Key order as in kernels/README.md; nccl null when built without it; one sample per line.
  const std::string expected =
      "{\n"
      "  \"schema\": \"ess-sim/measurements/v1\",\n"
      "  \"environment\": {\n"
      "    \"tool\": \"ess-bench 0.1.0\",\n"
      "    \"date\": \"2026-11-30T15:00:00Z\",\n"
      "    \"host\": \"gpu-host\",\n"
      "    \"gpu\": \"NVIDIA H200\",\n"
      "    \"gpu_count\": 1,\n"
      "    \"compute_capability\": \"9.0\",\n"
      "    \"sm_count\": 132,\n"
      "    \"memory_bytes\": 150754820096,\n"
      "    \"l2_bytes\": 62914560,\n"
      "    \"clocks\": {\"sm_mhz\": 1980, \"memory_mhz\": 3201},\n"
      "    \"driver\": \"570.86.15\",\n"
      "    \"cuda_driver_api\": \"12.8\",\n"
      "    \"cuda_runtime\": \"13.0\",\n"
      "    \"cublas\": \"13.0.0\",\n"
      "    \"nccl\": null,\n"
      "    \"method\": \"how\"\n"
      "  },\n"
      "  \"samples\": [\n"
      "    {\"kind\": \"gemm\", \"m\": 1, \"n\": 24576, \"k\": 1536, \"dtype\": \"bf16\", \"stats\": " +
      stats_text + "},\n" +
      "    {\"kind\": \"gather_interference\", \"m\": 64, \"n\": 129280, \"k\": 7168, \"dtype\": "
      "\"bf16\", \"rows\": 4096, \"row_bytes\": 656, \"alone\": " + alone_text + ", \"stats\": " +
      stats_text + "}\n" +
      "  ]\n"
      "}\n";
  CHECK(measurements_json(h200(), samples) == expected);
}

TEST_CASE("measurements: missing clocks are omitted and NCCL is a string when present", "[kernels][measurements]") {
  Environment e = h200();
  e.clocks.memory_mhz.reset();
  e.nccl = "2.21.5";
  const std::string text = measurements_json(e, {});
  CHECK(text.find("    \"clocks\": {\"sm_mhz\": 1980},\n") != std::string::npos);
  CHECK(text.find("    \"nccl\": \"2.21.5\",\n") != std::string::npos);
  CHECK(text.find("  \"samples\": []\n") != std::string::npos);
  e.clocks.sm_mhz.reset();
  CHECK(measurements_json(e, {}).find("    \"clocks\": {},\n") != std::string::npos);
}

TEST_CASE("measurements: every kind has the schema's keys in order", "[kernels][measurements]") {
  const Stats st = round_stats();
  using V = std::vector<std::string>;
  CHECK(keys(gemm_sample(1, 2, 3, GemmDtype::fp8, st)) == V{"kind", "m", "n", "k", "dtype", "stats"});
  CHECK(keys(norm_sample(NormKind::rms, 64, 7168, st)) ==
        V{"kind", "norm", "tokens", "hidden", "dtype", "stats"});
  CHECK(keys(copy_sample(CopyDirection::bidirectional, HostMemory::pageable, 1024, st)) ==
        V{"kind", "direction", "host_memory", "bytes", "stats"});
  CHECK(keys(gather_sample(Direction::d2h, GatherMethod::per_run, 4096, 656, 3800, st)) ==
        V{"kind", "direction", "method", "rows", "row_bytes", "calls", "stats"});
  CHECK(keys(interference_sample(GemmPoint{1, 2, 3}, 4, 656, st, st)) ==
        V{"kind", "m", "n", "k", "dtype", "rows", "row_bytes", "alone", "stats"});
  CHECK(keys(d2d_sample(1 << 20, st)) == V{"kind", "bytes", "stats"});
  CHECK(keys(p2p_sample(0, 1, 1 << 20, st)) == V{"kind", "src", "dst", "bytes", "stats"});
  CHECK(keys(allreduce_sample(2, 1 << 20, st)) == V{"kind", "gpus", "bytes", "dtype", "stats"});
  CHECK(keys(alltoall_sample(8, 1 << 20, st)) == V{"kind", "gpus", "bytes", "dtype", "stats"});
}

TEST_CASE("measurements: field values name the enums as the schema spells them", "[kernels][measurements]") {
  const Stats st = round_stats();
  const Sample n = norm_sample(NormKind::layer, 64, 7168, st);
  CHECK(n.kind == "norm");
  CHECK(n.text("norm") == "layer");
  CHECK(n.text("dtype") == "bf16");
  const Sample c = copy_sample(CopyDirection::bidirectional, HostMemory::pageable, 1024, st);
  CHECK(c.text("direction") == "bidirectional");
  CHECK(c.text("host_memory") == "pageable");
  const Sample g = gather_sample(Direction::h2d, GatherMethod::uva_kernel, 16, 656, 0, st);
  CHECK(g.text("method") == "uva_kernel");
  CHECK(g.integer("calls") == 0);
  CHECK(gemm_sample(1, 2, 3, GemmDtype::fp16, st).text("dtype") == "fp16");
  CHECK(allreduce_sample(4, 1024, st).kind == "allreduce");
  CHECK(alltoall_sample(4, 1024, st).kind == "alltoall");
  CHECK_THROWS_AS(g.integer("method"), std::out_of_range);  // a string field, not an integer
  CHECK_THROWS_AS(g.statistics("alone"), std::out_of_range);
}

TEST_CASE("measurements: a NaN statistic is refused rather than written", "[kernels][measurements][errors]") {
  Stats bad = round_stats();
  bad.std_s = std::nan("");
  const std::vector<Sample> samples = {d2d_sample(1024, bad)};
  CHECK_THROWS_AS(measurements_json(h200(), samples), std::invalid_argument);
}

TEST_CASE("measurements: the method sentence states the timing rules and what was skipped", "[kernels][measurements]") {
  const Sweep s = default_sweep();
  const std::string plain = method_text(s, 62914560, {});
  CHECK(plain.find("CUDA events around each repetition after 5 warm-ups") == 0);
  CHECK(plain.find("about 25 ms of GPU time (10 <= R <= 1000)") != std::string::npos);
  CHECK(plain.find("N x footprint > 2 x L2 (L2 62914560 B)") != std::string::npos);
  CHECK(plain.find("random non-zero data") != std::string::npos);
  CHECK(plain.find("Skipped") == std::string::npos);
  const std::vector<std::string> skipped = {"p2p (1 GPU visible)", "allreduce and alltoall (no NCCL)"};
  const std::string with = method_text(s, 62914560, skipped);
  CHECK(with == plain + " Skipped: p2p (1 GPU visible); allreduce and alltoall (no NCCL).");
  CHECK(method_text(quick_sweep(), 1, {}).find("after 2 warm-ups") != std::string::npos);
}

TEST_CASE("measurements: the summary shows the best GEMM and the largest copy", "[kernels][measurements]") {
  Stats ms = round_stats();
  ms.median_s = 1e-3;
  Stats copy = round_stats();
  copy.median_s = 0.02;
  const std::vector<Sample> samples = {
      // 2 x 1024^3 FLOP in 1 ms = 2.147 TFLOP/s
      gemm_sample(1024, 1024, 1024, GemmDtype::bf16, ms),
      // 2 x 1024^2 FLOP in 1 ms = 0.002 TFLOP/s: not the best
      gemm_sample(1, 1024, 1024, GemmDtype::bf16, ms),
      // 1e9 B in 20 ms = 50 GB/s
      copy_sample(CopyDirection::h2d, HostMemory::pinned, 1000000000, copy),
      // a smaller copy is not the headline
      copy_sample(CopyDirection::h2d, HostMemory::pinned, 1000, ms)};
  const std::string expected =
      "ess-bench: 4 samples\n"
      "gemm                      2 samples\n"
      "  bf16                   best 2.1 TFLOP/s at m=1024 n=1024 k=1024 (1.000 ms)\n"
      "copy                      2 samples\n"
      "  h2d pinned             1000000000 B: 20.000 ms, 50.0 GB/s\n";
  CHECK(summary_table(samples) == expected);
}
