// `ess-sim cost attention|indexer|grouped-gemm|dispatch|combine`: the operators of a decode step
// priced from the command line with the shapes a simulation passes (sim/graph/decode_step.cpp).
//
// FLOP, bytes and shapes are worked out by hand from models/README.md. Times are checked against
// the roofline (or the all-to-all formula) evaluated by hand with the hardware values the output
// reports, and those values against the preset, so the tests hold when a preset is recalibrated.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/alltoall.h"
#include "sim/config/scenario.h"
#include "tests/cli/cli_run.h"

namespace {

using ess::test::Run;
using ess::test::run;

nlohmann::json json_of(const std::vector<std::string>& args) {
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE(r.err.empty());
  return nlohmann::json::parse(r.out);
}

const ess::Hardware& h200() {
  static const ess::Hardware hw = ess::load_hardware_preset("h200-sxm");
  return hw;
}

// The roofline of models/roofline.h from a kernel's JSON: its FLOP and bytes and the hardware
// values it reports (peak, HBM bandwidth, kernel parameters).
double roofline_of(const nlohmann::json& k) {
  const auto& hw = k.at("hardware");
  const auto& p = hw.at("kernel");
  const double flops = k.at("flops").get<double>();
  const double bytes = k.at("bytes").get<double>();
  const double compute =
      flops > 0 ? (flops + p.at("compute_ramp").get<double>()) /
                      (hw.at("peak_compute").at("value").get<double>() * p.at("compute_efficiency").get<double>())
                : 0.0;
  const double memory = bytes > 0 ? (bytes + p.at("memory_ramp").get<double>()) /
                                        (hw.at("hbm_bandwidth").at("value").get<double>() * p.at("memory_efficiency").get<double>())
                                  : 0.0;
  const double t = p.at("transition").get<double>();
  const double roofs = t == 0 ? std::max(compute, memory) : std::pow(std::pow(compute, t) + std::pow(memory, t), 1.0 / t);
  CHECK(k.at("compute_s").get<double>() == Approx(compute).epsilon(1e-9));
  CHECK(k.at("memory_s").get<double>() == Approx(memory).epsilon(1e-9));
  return roofs + p.at("kernel_overhead").get<double>();
}

// The kernel JSON reports exactly the preset's parameters of `params` and `peak` (empty: none).
void check_reports(const nlohmann::json& k, const std::string& field, const ess::RooflineParams& p, const std::string& peak) {
  const auto& hw = k.at("hardware");
  CHECK(hw.at("name") == "h200-sxm");
  CHECK(hw.at("kernel").at("field") == field);
  CHECK(hw.at("kernel").at("compute_efficiency").get<double>() == p.compute_efficiency);
  CHECK(hw.at("kernel").at("memory_efficiency").get<double>() == p.memory_efficiency);
  CHECK(hw.at("kernel").at("kernel_overhead").get<double>() == p.kernel_overhead.value());
  CHECK(hw.at("hbm_bandwidth").at("field") == "hardware.gpu.hbm_bandwidth");
  CHECK(hw.at("hbm_bandwidth").at("value").get<double>() == h200().gpu.hbm_bandwidth.value());
  if (peak.empty()) {
    CHECK_FALSE(hw.contains("peak_compute"));
  } else {
    CHECK(hw.at("peak_compute").at("field") == "hardware.gpu.peak_compute." + peak);
  }
}

void check_fails(const std::vector<std::string>& args, const std::string& message) {
  const auto r = run(args);
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(message));
}

}  // namespace

TEST_CASE("cost attention prices V3.2-Exp sparse MLA as a decode step does: top-2048 of the context per query token") {
  // 18 requests x 2 query tokens (MTP 2) at 32K on one GPU: q = 36, 128 heads, qk 576, v 512,
  // selected = min(2048, 32768) = 2048, 656 B entries.
  //   flops = 2 x 36 x 128 x 2048 x (576 + 512) = 20,535,312,384
  //   bytes = 36 x 2048 x 656 + 36 x 128 x 576 x 2 + 36 x 128 x 512 x 2
  //         = 48,365,568 + 5,308,416 + 4,718,592 = 58,392,576
  const auto j = json_of({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "18",
                          "--queries-per-request", "2", "--context", "32768", "--json"});
  CHECK(j.at("op") == "sparse_mla_attention");
  CHECK(j.at("flops").get<double>() == 20535312384.0);
  CHECK(j.at("bytes").get<double>() == 58392576.0);
  CHECK(j.at("shape").at("kind") == "sparse-mla");
  CHECK(j.at("shape").at("heads_per_gpu") == 128);
  CHECK(j.at("shape").at("selected") == 2048);
  CHECK(j.at("shape").at("entry_bytes").get<double>() == 656.0);
  check_reports(j, "hardware.kernels.sparse_attention", h200().kernels.sparse_attention, "bf16");
  CHECK(j.at("seconds").get<double>() == Approx(roofline_of(j)).epsilon(1e-9));
  CHECK(j.at("overhead_s").get<double>() == h200().kernels.sparse_attention.kernel_overhead.value());
  for (const char* key : {"seconds", "op", "bound", "compute_s", "memory_s", "overhead_s", "flops", "bytes", "shape", "hardware"}) {
    CHECK(j.contains(key));
  }

  // The same shape spelt out without the model, and a context shorter than the top-k.
  const auto spelt = json_of({"cost", "attention", "--hardware", "h200-sxm", "--kind", "sparse-mla", "--requests", "18",
                              "--queries-per-request", "2", "--context", "32768", "--heads", "128", "--qk-dim", "576",
                              "--v-dim", "512", "--entry-bytes", "656B", "--selected", "2048", "--json"});
  CHECK(spelt.at("seconds").get<double>() == j.at("seconds").get<double>());
  const auto short_context = json_of({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp",
                                      "--requests", "1", "--context", "1000", "--json"});
  CHECK(short_context.at("shape").at("selected") == 1000);
}

TEST_CASE("cost attention prices the MLA kernel's tiles and MMA type (--mla-kernel)") {
  // TP8 of V3.2-Exp: 16 heads per GPU, which FlashMLA computes as a 64-row tile:
  //   flops = 2 x 36 x 64 x 2048 x 1088 = 10,267,656,192 (4x the 16 useful heads' FLOP)
  const std::vector<std::string> base = {"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp",
                                         "--requests", "18", "--queries-per-request", "2", "--context", "32768",
                                         "--tensor-parallel", "8", "--json"};
  const auto flashmla = json_of(base);
  CHECK(flashmla.at("flops").get<double>() == 10267656192.0);
  CHECK(flashmla.at("shape").at("mla_kernel") == "flashmla");
  CHECK(flashmla.at("shape").at("row_tile") == 64);
  check_reports(flashmla, "hardware.kernels.sparse_attention", h200().kernels.sparse_attention, "bf16");
  // FP8 MMAs: the same FLOP at the FP8 peak.
  auto args = base;
  args.insert(args.end() - 1, {"--mla-kernel", "fp8-mma"});
  const auto fp8 = json_of(args);
  CHECK(fp8.at("flops").get<double>() == 10267656192.0);
  CHECK(fp8.at("shape").at("mma_dtype") == "fp8");
  check_reports(fp8, "hardware.kernels.sparse_attention", h200().kernels.sparse_attention, "fp8");
  const double ratio = h200().gpu.peak_compute.bf16->value() / h200().gpu.peak_compute.fp8->value();
  CHECK(fp8.at("compute_s").get<double>() == Approx(flashmla.at("compute_s").get<double>() * ratio).epsilon(1e-9));
  // A kernel not registered, and the option on GQA, are refused.
  auto bad = base;
  bad.insert(bad.end() - 1, {"--mla-kernel", "flashinfer"});
  CHECK(run(bad).code == 2);
  CHECK(run({"cost", "attention", "--hardware", "h200-sxm", "--kind", "gqa", "--requests", "1", "--context", "8",
             "--heads", "8", "--kv-heads", "8", "--head-dim", "128", "--mla-kernel", "flashmla"})
            .code == 2);
}

TEST_CASE("cost attention prices dense MLA (V3) and GQA under tensor parallelism (Llama 3.1 70B)") {
  // V3, 4 requests, 1000 tokens: flops = 2 x 4 x 128 x 1000 x 1088 = 1,114,112,000;
  // bytes = 4 x 1000 x 656 + 4 x 128 x 576 x 2 + 4 x 128 x 512 x 2 = 3,738,112.
  const auto dense = json_of({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3", "--requests", "4",
                              "--context", "1000", "--json"});
  CHECK(dense.at("op") == "dense_mla_attention");
  CHECK(dense.at("flops").get<double>() == 1114112000.0);
  CHECK(dense.at("bytes").get<double>() == 3738112.0);
  check_reports(dense, "hardware.kernels.attention", h200().kernels.attention, "bf16");
  CHECK(dense.at("seconds").get<double>() == Approx(roofline_of(dense)).epsilon(1e-9));

  // Llama 3.1 70B over TP 8: 64 / 8 = 8 query heads and 8 / 8 = 1 kv head per GPU, head dim 128,
  // 4 requests, 4096 tokens, bf16: flops = 4 x 4 x 8 x 128 x 4096 = 67,108,864;
  // bytes = 4 x 2 x 1 x 128 x 4096 x 2 + 2 x 4 x 8 x 128 x 2 = 8,388,608 + 16,384 = 8,404,992.
  const auto gqa = json_of({"cost", "attention", "--hardware", "h200-sxm", "--model", "llama-3.1-70b", "--requests", "4",
                            "--context", "4096", "--tensor-parallel", "8", "--json"});
  CHECK(gqa.at("op") == "gqa_attention");
  CHECK(gqa.at("shape").at("heads_per_gpu") == 8);
  CHECK(gqa.at("shape").at("kv_heads_per_gpu") == 1);
  CHECK(gqa.at("flops").get<double>() == 67108864.0);
  CHECK(gqa.at("bytes").get<double>() == 8404992.0);
  CHECK(gqa.at("bound") == "memory");
  check_reports(gqa, "hardware.kernels.attention", h200().kernels.attention, "bf16");
  CHECK(gqa.at("seconds").get<double>() == Approx(roofline_of(gqa)).epsilon(1e-9));
}

TEST_CASE("cost attention without --json names the bound and the hardware fields it used") {
  const auto r = run({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "18",
                      "--queries-per-request", "2", "--context", "32768"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("sparse MLA attention") && Catch::Contains("2048 of 32768 entries") &&
                        Catch::Contains("-bound") && Catch::Contains("hardware.gpu.peak_compute.bf16") &&
                        Catch::Contains("hardware.kernels.sparse_attention.compute_efficiency") &&
                        Catch::Contains("hardware.gpu.hbm_bandwidth") && Catch::Contains("20.54 GFLOP") &&
                        Catch::Contains("58.39 MB"));
}

TEST_CASE("cost indexer prices scoring and top-k and adds them") {
  // V3.2-Exp: 64 heads x 128, 132 B keys, top-2048; 18 requests x 2 query tokens at 32K.
  //   scoring flops = 2 x 36 x 64 x 128 x 32768 = 19,327,352,832
  //   scoring bytes = 18 x 32768 x 132 + 36 x 64 x 128 + 36 x 32768 x 4
  //                 = 77,856,768 + 294,912 + 4,718,592 = 82,870,272
  //   top-k bytes   = passes x 36 x 32768 x 4 + 36 x 2048 x 4 = passes x 4,718,592 + 294,912
  const auto j = json_of({"cost", "indexer", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "18",
                          "--queries-per-request", "2", "--context", "32768", "--json"});
  CHECK(j.at("op") == "indexer");
  const auto& score = j.at("scoring");
  const auto& select = j.at("topk");
  CHECK(score.at("flops").get<double>() == 19327352832.0);
  CHECK(score.at("bytes").get<double>() == 82870272.0);
  check_reports(score, "hardware.kernels.indexer", h200().kernels.indexer, "fp8");
  CHECK(score.at("seconds").get<double>() == Approx(roofline_of(score)).epsilon(1e-9));
  const double passes = select.at("hardware").at("topk_passes").at("value").get<double>();
  CHECK(passes == h200().kernels.topk_passes);
  CHECK(select.at("flops").get<double>() == 0.0);
  CHECK(select.at("bytes").get<double>() == passes * 4718592.0 + 294912.0);
  CHECK(select.at("shape").at("rows") == 36);
  check_reports(select, "hardware.kernels.memory_bound", h200().kernels.memory_bound, "");
  CHECK(select.at("seconds").get<double>() == Approx(roofline_of(select)).epsilon(1e-9));
  CHECK(j.at("seconds").get<double>() ==
        Approx(score.at("seconds").get<double>() + select.at("seconds").get<double>()).epsilon(1e-12));

  const auto human = run({"cost", "indexer", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "18",
                          "--context", "32768"});
  REQUIRE(human.code == 0);
  CHECK_THAT(human.out, Catch::Contains("= scoring") && Catch::Contains("top-k: 2048 of 32768 in 18 rows") &&
                            Catch::Contains("hardware.kernels.topk_passes"));
}

TEST_CASE("cost grouped-gemm prices the experts' GEMM with the model's projection") {
  // V3.2-Exp gate-up: n = 2 x 2048 = 4096, k = 7168, fp8; 4 experts x 64 rows (whole tiles).
  //   flops = 2 x 256 x 4096 x 7168 = 15,032,385,536
  //   bytes = 4 x 7168 x 4096 + 256 x 7168 + 256 x 4096 x 2 (bf16 out)
  //         + 4 x 4 x 56 x 32 (weight scales) + 256 x 4 x 56 (activation scales)
  //         = 117,440,512 + 1,835,008 + 2,097,152 + 28,672 + 57,344 = 121,458,688
  const auto j = json_of({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--projection",
                          "gate-up", "--groups", "4", "--m", "256", "--json"});
  CHECK(j.at("op") == "grouped_gemm");
  CHECK(j.at("shape").at("n") == 4096);
  CHECK(j.at("shape").at("k") == 7168);
  CHECK(j.at("shape").at("dtype") == "fp8");
  CHECK(j.at("flops").get<double>() == 15032385536.0);
  CHECK(j.at("bytes").get<double>() == 121458688.0);
  check_reports(j, "hardware.kernels.grouped_gemm", h200().kernels.grouped_gemm, "fp8");
  CHECK(j.at("seconds").get<double>() == Approx(roofline_of(j)).epsilon(1e-9));

  // down: n = 7168, k = 2048; the same with --n/--k spelt out.
  const auto down = json_of({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--projection",
                             "down", "--groups", "4", "--m", "256", "--json"});
  CHECK(down.at("shape").at("n") == 7168);
  CHECK(down.at("shape").at("k") == 2048);
  const auto spelt = json_of({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--groups", "4", "--m", "256", "--n", "7168",
                              "--k", "2048", "--dtype", "fp8", "--json"});
  CHECK(spelt.at("seconds").get<double>() == down.at("seconds").get<double>());
}

TEST_CASE("cost dispatch and combine price the MoE all-to-all with uniform routing") {
  const auto ports = ess::alltoall_ports(h200());
  // V3.2-Exp, EP 8 on one node, 18 requests x MTP 2 = 36 tokens x top-8 = 288 copies per GPU;
  // 7/8 leave the GPU, all inside the node. Dispatch copies are 7168 x (1 + 4/128) = 7392 B:
  // 252 x 7392 = 1,862,784 B each way.
  const auto d = json_of({"cost", "dispatch", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--expert-parallel",
                          "8", "--tokens", "36", "--json"});
  CHECK(d.at("op") == "dispatch");
  CHECK(d.at("copies").get<double>() == 288.0);
  CHECK(d.at("fractions").at("self").get<double>() == 0.125);
  CHECK(d.at("fractions").at("intranode").get<double>() == 0.875);
  CHECK(d.at("fractions").at("internode").get<double>() == 0.0);
  CHECK(d.at("shape").at("bytes_per_copy").get<double>() == 7392.0);
  CHECK(d.at("intranode").at("bytes").get<double>() == Approx(1862784.0).epsilon(1e-12));
  CHECK(d.at("internode").at("bytes").get<double>() == 0.0);
  CHECK(d.at("bound") == "nvswitch");
  CHECK(d.at("intranode").at("bandwidth").at("value").get<double>() == ports.nvswitch.bandwidth.value());
  CHECK(d.at("intranode").at("latency").at("value").get<double>() == ports.nvswitch.latency.value());
  CHECK(d.at("intranode").at("bandwidth").at("field") == std::string(ports.nvswitch.bandwidth_field));
  CHECK(d.at("seconds").get<double>() ==
        Approx(ports.nvswitch.latency.value() + 1862784.0 / ports.nvswitch.bandwidth.value()).epsilon(1e-9));

  // Combine sends the bf16 outputs back: 7168 x 2 = 14,336 B per copy, 252 x 14,336 = 3,612,672 B.
  const auto c = json_of({"cost", "combine", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--expert-parallel",
                          "8", "--tokens", "36", "--json"});
  CHECK(c.at("shape").at("bytes_per_copy").get<double>() == 14336.0);
  CHECK(c.at("seconds").get<double>() ==
        Approx(ports.nvswitch.latency.value() + 3612672.0 / ports.nvswitch.bandwidth.value()).epsilon(1e-9));

  // EP 32 over 4 nodes of 8: 7/32 of the copies to the node (465,696 B), 24/32 through the NIC
  // (1,596,672 B); the two flows run together and the slower one counts.
  const auto wide = json_of({"cost", "dispatch", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp",
                             "--expert-parallel", "32", "--tokens", "36", "--json"});
  CHECK(wide.at("shape").at("nodes") == 4);
  CHECK(wide.at("intranode").at("bytes").get<double>() == Approx(465696.0).epsilon(1e-12));
  CHECK(wide.at("internode").at("bytes").get<double>() == Approx(1596672.0).epsilon(1e-12));
  const double nic = ports.nic.latency.value() + 1596672.0 / ports.nic.bandwidth.value();
  const double nvs = ports.nvswitch.latency.value() + 465696.0 / ports.nvswitch.bandwidth.value();
  CHECK(wide.at("internode").at("seconds").get<double>() == Approx(nic).epsilon(1e-9));
  CHECK(wide.at("seconds").get<double>() == Approx(std::max(nic, nvs)).epsilon(1e-9));

  // Without the model: --experts-per-token and --hidden, or the bytes per copy directly.
  const auto spelt = json_of({"cost", "dispatch", "--hardware", "h200-sxm", "--expert-parallel", "8", "--tokens", "36",
                              "--experts-per-token", "8", "--bytes-per-copy", "7392B", "--json"});
  CHECK(spelt.at("seconds").get<double>() == d.at("seconds").get<double>());

  const auto human = run({"cost", "dispatch", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--expert-parallel",
                          "8", "--tokens", "36"});
  REQUIRE(human.code == 0);
  CHECK_THAT(human.out, Catch::Contains("NVSwitch-bound") && Catch::Contains("87.5% to its node") &&
                            Catch::Contains(std::string(ports.nvswitch.bandwidth_field)) && Catch::Contains("uniform routing"));
}

TEST_CASE("cost operations: unknown or missing operations and bad options are exit-2 errors that say what to fix") {
  check_fails({"cost", "atention", "--hardware", "h200-sxm"},
              "unknown cost operation \"atention\" (did you mean \"attention\"?); the operations are ");
  check_fails({"cost", "dispach"}, "did you mean \"dispatch\"?");
  check_fails({"cost"}, "cost needs an operation: ");
  // attention
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--requests", "1", "--context", "8"},
              "needs --kind (sparse-mla, dense-mla or gqa) or --model PRESET");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--kind", "gqa", "--requests",
               "1", "--context", "8"},
              "deepseek-v3.2-exp has MLA attention");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--kind", "sparse-mla", "--requests", "1", "--context", "8",
               "--heads", "8"},
              "cost attention --kind sparse-mla: needs --qk-dim, --v-dim, --entry-bytes and --selected (or --model PRESET");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "1", "--context",
               "8", "--kv-heads", "8"},
              "--kv-heads: applies to --kind gqa, not sparse-mla");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "1", "--context",
               "8", "--tensor-parallel", "3"},
              "must divide the 128 heads");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--requests", "0", "--context",
               "8"},
              "--requests");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek", "--requests", "1", "--context", "8"},
              "unknown model preset \"deepseek\"");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--kind", "dense-mla", "--requests", "1", "--context", "8",
               "--heads", "8", "--qk-dim", "8", "--v-dim", "8", "--entry-bytes", "12XB"},
              "unknown unit \"XB\"");
  check_fails({"cost", "attention", "--hardware", "h200-sxm", "--model", "deepseek-v3", "--kind", "dense-mla", "--requests", "1",
               "--context", "8", "--selected", "4"},
              "--selected: applies to --kind sparse-mla, not dense-mla");
  // indexer
  check_fails({"cost", "indexer", "--hardware", "h200-sxm", "--model", "llama-3.1-70b", "--requests", "1", "--context", "8"},
              "llama-3.1-70b has no lightning indexer");
  check_fails({"cost", "indexer", "--hardware", "a100-80gb-sxm", "--model", "deepseek-v3.2-exp", "--requests", "1", "--context",
               "8"},
              "fp8");
  // grouped-gemm
  check_fails({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--projection", "down", "--groups", "1", "--m", "1", "--n", "1",
               "--k", "1"},
              "--projection: needs --model PRESET");
  check_fails({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--groups", "1", "--m", "1"},
              "needs --projection gate-up or down");
  check_fails({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--model", "llama-2-7b", "--projection", "down", "--groups",
               "1", "--m", "1"},
              "has no experts");
  check_fails({"cost", "grouped-gemm", "--hardware", "h200-sxm", "--groups", "4", "--m", "2", "--n", "8", "--k", "8"},
              "m_total (2) must be >= groups (4)");
  // dispatch / combine
  check_fails({"cost", "dispatch", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--expert-parallel", "12",
               "--tokens", "1"},
              "must divide the 256 routed experts of deepseek-v3.2-exp");
  check_fails({"cost", "dispatch", "--hardware", "h200-sxm", "--expert-parallel", "12", "--tokens", "1", "--experts-per-token",
               "2", "--hidden", "128"},
              "covers partial nodes");
  check_fails({"cost", "combine", "--hardware", "h200-sxm", "--expert-parallel", "8", "--tokens", "1", "--experts-per-token",
               "2", "--hidden", "128", "--bytes-per-copy", "1kB"},
              "give --hidden or --bytes-per-copy, not both");
  check_fails({"cost", "dispatch", "--hardware", "h200-sxm", "--expert-parallel", "8", "--tokens", "1", "--experts-per-token",
               "2", "--bytes-per-copy", "0B"},
              "--bytes-per-copy 0B: must be > 0 B");
  check_fails({"cost", "dispatch", "--hardware", "h200-sxm", "--expert-parallel", "8", "--tokens", "1"},
              "cost dispatch: needs --experts-per-token and --hidden (or --model PRESET to take them from a model)");
  check_fails({"cost", "combine", "--hardware", "h200-sxm", "--model", "deepseek-v3.2-exp", "--expert-parallel", "8",
               "--tokens", "1", "--experts-per-token", "300"},
              "exceeds the 256 routed experts");
}

TEST_CASE("cost routing: the expert load of a layout, and its bad input", "[cli][cost][routing]") {
  const auto off = ess::test::run_cli({"cost", "routing", "--ep", "8", "--tokens-per-rank", "64", "--passes", "2", "--json"});
  REQUIRE(off.code == 0);
  const auto j = nlohmann::json::parse(off.out);
  CHECK(j["stats"]["rank_mean"].get<double>() == Approx(512.0));  // 64 tokens x 8 ranks x top-8 / 8
  const auto on = ess::test::run_cli({"cost", "routing", "--ep", "8", "--tokens-per-rank", "64", "--passes", "2", "--eplb",
                                      "on", "--redundant", "8", "--json"});
  REQUIRE(on.code == 0);
  CHECK(nlohmann::json::parse(on.out)["stats"]["rank_imbalance"].get<double>() <
        0.5 * j["stats"]["rank_imbalance"].get<double>());
  const auto redundant = ess::test::run_cli({"cost", "routing", "--ep", "8", "--redundant", "8"});
  CHECK(redundant.code == 2);
  CHECK_THAT(redundant.err, Catch::Contains("--eplb on"));
  const auto ep = ess::test::run_cli({"cost", "routing", "--ep", "30"});
  CHECK(ep.code == 2);
  CHECK_THAT(ep.err, Catch::Contains("must divide the 256 physical experts"));
  const auto dense = ess::test::run_cli({"cost", "routing", "--model", "llama-2-7b"});
  CHECK(dense.code == 2);
  CHECK_THAT(dense.err, Catch::Contains("no experts"));
}
