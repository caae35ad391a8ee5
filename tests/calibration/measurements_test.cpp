// read_measurements (calibration/measurements.h): each input format written as a small file in a
// scratch directory, every point checked against the row it came from, and every error message.
#include "calibration/measurements.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/scratch_dir.h"

using Catch::Matchers::Contains;
using ess::CopyDirection;
using ess::DType;
using ess::MeasurementError;
using ess::NormKind;

namespace {

std::string write(const ess::test::ScratchDir& dir, const std::string& name, const std::string& text) {
  const auto path = dir.path() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

ess::MeasurementSet read(const std::vector<std::string>& paths, const std::string& gpu = "", int gpus_per_node = 8) {
  ess::ReadOptions o;
  o.gpu = gpu;
  o.gpus_per_node = gpus_per_node;
  return ess::read_measurements(paths, o);
}

// The number of rows skipped for a reason whose text contains `word` (the reasons are prose).
std::size_t skipped(const ess::MeasurementInput& in, const std::string& word) {
  std::size_t n = 0;
  for (const auto& [reason, count] : in.skipped) {
    if (reason.find(word) != std::string::npos) n += count;
  }
  return n;
}

std::size_t used(const ess::MeasurementInput& in, const std::string& model) {
  const auto it = in.used.find(model);
  return it == in.used.end() ? 0 : it->second;
}

Approx same(double expected) { return Approx(expected).epsilon(1e-12); }

// --- ess-bench JSON: one sample of every kind, with the fields kernels/README.md specifies ----------

const char* const kEssBench = R"({
  "schema": "ess-sim/measurements/v1",
  "environment": {"gpu": "NVIDIA H200", "date": "2026-12-01T10:00:00Z", "tool": "ess-bench 0.1",
                  "driver": "560.35.03", "cuda_runtime": "12.6", "cublas": "12.6.4"},
  "samples": [
    {"kind": "gemm", "m": 8, "n": 12288, "k": 4096, "dtype": "fp16", "stats": {"median_s": 2.5e-5}},
    {"kind": "norm", "norm": "layer", "tokens": 64, "hidden": 7168, "dtype": "bf16", "stats": {"median_s": 4e-6}},
    {"kind": "copy", "direction": "h2d", "host_memory": "pinned", "bytes": 1048576, "stats": {"median_s": 2e-5}},
    {"kind": "copy", "direction": "d2h", "host_memory": "pinned", "bytes": 4096, "stats": {"median_s": 5e-6}},
    {"kind": "copy", "direction": "h2d", "host_memory": "pageable", "bytes": 1048576, "stats": {"median_s": 6e-5}},
    {"kind": "copy", "direction": "bidirectional", "host_memory": "pinned", "bytes": 1048576, "stats": {"median_s": 3e-5}},
    {"kind": "gather", "direction": "d2h", "method": "per_row", "rows": 64, "row_bytes": 656, "calls": 64,
     "stats": {"median_s": 2e-4}},
    {"kind": "gather", "direction": "h2d", "method": "per_run", "rows": 64, "row_bytes": 656, "calls": 8,
     "stats": {"median_s": 3e-5}},
    {"kind": "gather", "direction": "h2d", "method": "uva_kernel", "rows": 2048, "row_bytes": 656, "calls": 0,
     "stats": {"median_s": 4e-5}},
    {"kind": "gather_interference", "m": 64, "n": 7168, "k": 2048, "dtype": "bf16", "rows": 2048, "row_bytes": 656,
     "alone": {"median_s": 1e-4}, "stats": {"median_s": 1.25e-4}},
    {"kind": "d2d", "bytes": 1048576, "stats": {"median_s": 1e-6}},
    {"kind": "p2p", "src": 0, "dst": 1, "bytes": 1048576, "stats": {"median_s": 1e-5}},
    {"kind": "allreduce", "gpus": 8, "bytes": 1048576, "dtype": "bf16", "stats": {"median_s": 3e-5}},
    {"kind": "allreduce", "gpus": 16, "bytes": 1048576, "dtype": "bf16", "stats": {"median_s": 9e-5}},
    {"kind": "alltoall", "gpus": 4, "bytes": 65536, "dtype": "bf16", "stats": {"median_s": 2e-5}}
  ]
})";

// A minimal ess-bench file of `gpu` holding the given samples (a JSON array's contents).
std::string ess_bench(const std::string& gpu, const std::string& samples) {
  return R"({"schema": "ess-sim/measurements/v1", "environment": {"gpu": ")" + gpu + R"("}, "samples": [)" + samples +
         "]}";
}

const char* const kGemmSample = R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5}})";

// --- Vidur compute CSV: the header of microsoft/vidur's mlp.csv ------------------------------------

const char* const kVidurComputeHeader =
    "time_stats.emb.min,time_stats.emb.max,time_stats.emb.mean,time_stats.emb.median,time_stats.emb.std,"
    "time_stats.input_layernorm.min,time_stats.input_layernorm.max,time_stats.input_layernorm.mean,"
    "time_stats.input_layernorm.median,time_stats.input_layernorm.std,time_stats.attn_pre_proj.min,"
    "time_stats.attn_pre_proj.max,time_stats.attn_pre_proj.mean,time_stats.attn_pre_proj.median,"
    "time_stats.attn_pre_proj.std,time_stats.attn_rope.min,time_stats.attn_rope.max,time_stats.attn_rope.mean,"
    "time_stats.attn_rope.median,time_stats.attn_rope.std,time_stats.attn_post_proj.min,"
    "time_stats.attn_post_proj.max,time_stats.attn_post_proj.mean,time_stats.attn_post_proj.median,"
    "time_stats.attn_post_proj.std,time_stats.post_attention_layernorm.min,time_stats.post_attention_layernorm.max,"
    "time_stats.post_attention_layernorm.mean,time_stats.post_attention_layernorm.median,"
    "time_stats.post_attention_layernorm.std,time_stats.mlp_up_proj.min,time_stats.mlp_up_proj.max,"
    "time_stats.mlp_up_proj.mean,time_stats.mlp_up_proj.median,time_stats.mlp_up_proj.std,time_stats.mlp_act.min,"
    "time_stats.mlp_act.max,time_stats.mlp_act.mean,time_stats.mlp_act.median,time_stats.mlp_act.std,"
    "time_stats.mlp_down_proj.min,time_stats.mlp_down_proj.max,time_stats.mlp_down_proj.mean,"
    "time_stats.mlp_down_proj.median,time_stats.mlp_down_proj.std,time_stats.add.min,time_stats.add.max,"
    "time_stats.add.mean,time_stats.add.median,time_stats.add.std,n_head,n_kv_head,n_embd,n_expanded_embd,"
    "vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  return out;
}

// One Vidur row: every column "0.001" (ms) unless given.
std::string vidur_row(const std::map<std::string, std::string>& values) {
  std::string row;
  for (const std::string& column : split(kVidurComputeHeader)) {
    const auto it = values.find(column);
    row += (row.empty() ? "" : ",") + (it == values.end() ? std::string("0.001") : it->second);
  }
  return row;
}

// Llama-2-7B (32 heads, 32 kv heads, hidden 4096, FFN 11008, gated) at `tokens` and `tp`.
std::map<std::string, std::string> llama2_7b(const std::string& tokens, const std::string& tp) {
  return {{"n_head", "32"},          {"n_kv_head", "32"}, {"n_embd", "4096"},   {"n_expanded_embd", "11008"},
          {"vocab_size", "32768"},   {"use_gated_mlp", "True"}, {"num_tokens", tokens},
          {"num_tensor_parallel_workers", tp}};
}

// Two rows of Llama-2-7B at 8 tokens: TP 1 and TP 2, with distinct times (ms).
std::string vidur_compute_csv() {
  auto tp1 = llama2_7b("8", "1");
  tp1["time_stats.attn_pre_proj.median"] = "0.05";
  tp1["time_stats.attn_post_proj.median"] = "0.02";
  tp1["time_stats.mlp_up_proj.median"] = "0.08";
  tp1["time_stats.mlp_down_proj.median"] = "0.04";
  tp1["time_stats.input_layernorm.median"] = "0.006";
  tp1["time_stats.post_attention_layernorm.median"] = "0.008";
  auto tp2 = llama2_7b("8", "2");
  tp2["time_stats.attn_pre_proj.median"] = "0.03";
  tp2["time_stats.attn_post_proj.median"] = "0.012";
  tp2["time_stats.mlp_up_proj.median"] = "0.045";
  tp2["time_stats.mlp_down_proj.median"] = "0.025";
  return std::string(kVidurComputeHeader) + "\n" + vidur_row(tp1) + "\n" + vidur_row(tp2) + "\n";
}

// --- Vidur network CSV (all_reduce): one node of 4, one row across nodes, one of 16 GPUs, one of 8 --

const char* const kVidurAllReduce =
    R"(,time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node
0,0.04,0.06,0.05,0.05,0.01,0,4,1048576,all_reduce,4,8
1,0.03,0.08,0.05,0.043,0.02,0,2,2048,all_reduce,1,8
2,0.08,0.12,0.1,0.1,0.01,0,16,1048576,all_reduce,16,16
3,0.02,0.03,0.025,0.025,0.001,0,8,65536,all_reduce,8,8
)";
// `sha256sum` of exactly the text above (422 bytes).
const char* const kVidurAllReduceSha256 = "0ec71ab23091992c283c73ac4d3f3b4a127a24878b67588733fe5c7814f96f49";

// --- Liger benchmark CSV: A100 and H100 rows ------------------------------------------------------

const char* const kLiger =
    R"(kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version
rms_norm,liger,forward,speed,ms,N,hidden size,4096,0.02,0.019,0.021,"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:14,0.2.1
layer_norm,liger,forward,speed,ms,N,hidden size,1024,0.03,0.029,0.031,"{""M"": 4096, ""dtype"": ""torch.float32"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:30,0.2.1
rms_norm,liger,backward,speed,ms,N,hidden size,4096,0.05,0.049,0.051,"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:14,0.2.1
rms_norm,huggingface,forward,speed,ms,N,hidden size,4096,0.09,0.089,0.091,"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:14,0.2.1
fused_add_rms_norm,liger,forward,speed,ms,N,hidden size,4096,0.04,0.039,0.041,"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA A100-SXM4-80GB,2024-09-03 15:39:14,0.2.1
rms_norm,liger,forward,speed,ms,N,hidden size,4096,0.015,0.014,0.016,"{""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06}",NVIDIA H100 80GB HBM3,2024-09-04 10:00:00,0.2.1
)";

// The MeasurementError's message must contain every word.
void check_error(const std::vector<std::string>& paths, const std::vector<std::string>& words, const std::string& gpu = "") {
  try {
    (void)read(paths, gpu);
    FAIL("no MeasurementError");
  } catch (const MeasurementError& e) {
    const std::string what = e.what();
    INFO(what);
    for (const auto& w : words) CHECK_THAT(what, Contains(w));
  }
}

}  // namespace

TEST_CASE("ess-bench JSON: every sample kind lands in its vector with its fields", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "h200.json", kEssBench);
  const ess::MeasurementSet s = read({path});
  REQUIRE(s.inputs.size() == 1);
  const ess::MeasurementInput& in = s.inputs[0];
  CHECK(in.path == path);
  CHECK(in.format == "ess-bench");
  CHECK(in.gpu == "NVIDIA H200");
  CHECK(in.date == "2026-12-01T10:00:00Z");
  CHECK(in.environment == "ess-bench 0.1; driver 560.35.03; CUDA runtime 12.6; cuBLAS 12.6.4");
  CHECK(in.sha256.size() == 64);

  REQUIRE(s.gemm.size() == 1);
  CHECK(s.gemm[0].shape.m == 8);
  CHECK(s.gemm[0].shape.n == 12288);
  CHECK(s.gemm[0].shape.k == 4096);
  CHECK(s.gemm[0].shape.dtype == DType::fp16);
  CHECK(s.gemm[0].seconds == 2.5e-5);

  REQUIRE(s.norm.size() == 1);
  CHECK(s.norm[0].shape.tokens == 64);
  CHECK(s.norm[0].shape.hidden == 7168);
  CHECK(s.norm[0].shape.dtype == DType::bf16);
  CHECK(s.norm[0].shape.kind == NormKind::layer);
  CHECK(s.norm[0].seconds == 4e-6);

  // Pinned h2d and d2h copies (calls 1), then the per-row and per-run gathers with their call counts
  // (rows x row_bytes = 64 x 656 = 41,984 B); pageable and bidirectional copies are skipped.
  REQUIRE(s.copy.size() == 4);
  CHECK(s.copy[0].direction == CopyDirection::h2d);
  CHECK(s.copy[0].bytes == 1048576.0);
  CHECK(s.copy[0].calls == 1);
  CHECK(s.copy[0].seconds == 2e-5);
  CHECK(s.copy[1].direction == CopyDirection::d2h);
  CHECK(s.copy[1].bytes == 4096.0);
  CHECK(s.copy[1].calls == 1);
  CHECK(s.copy[1].seconds == 5e-6);
  CHECK(s.copy[2].direction == CopyDirection::d2h);
  CHECK(s.copy[2].bytes == 41984.0);
  CHECK(s.copy[2].calls == 64);
  CHECK(s.copy[2].seconds == 2e-4);
  CHECK(s.copy[3].direction == CopyDirection::h2d);
  CHECK(s.copy[3].bytes == 41984.0);
  CHECK(s.copy[3].calls == 8);
  CHECK(s.copy[3].seconds == 3e-5);

  // The UVA kernel: 2048 x 656 = 1,343,488 B.
  REQUIRE(s.gather.size() == 1);
  CHECK(s.gather[0].direction == CopyDirection::h2d);
  CHECK(s.gather[0].bytes == 1343488.0);
  CHECK(s.gather[0].seconds == 4e-5);

  REQUIRE(s.interference.size() == 1);
  CHECK(s.interference[0].alone_seconds == 1e-4);
  CHECK(s.interference[0].with_gather_seconds == 1.25e-4);

  // A peer copy (src 0 -> dst 1) is between 2 GPUs.
  REQUIRE(s.p2p.size() == 1);
  CHECK(s.p2p[0].gpus == 2);
  CHECK(s.p2p[0].bytes == 1048576.0);
  CHECK(s.p2p[0].seconds == 1e-5);
  // The 16-GPU all-reduce is over more GPUs than a node of 8: skipped.
  REQUIRE(s.allreduce.size() == 1);
  CHECK(s.allreduce[0].gpus == 8);
  CHECK(s.allreduce[0].bytes == 1048576.0);
  CHECK(s.allreduce[0].seconds == 3e-5);
  REQUIRE(s.alltoall.size() == 1);
  CHECK(s.alltoall[0].gpus == 4);
  CHECK(s.alltoall[0].bytes == 65536.0);
  CHECK(s.alltoall[0].seconds == 2e-5);
  CHECK(s.duplicates_merged == 0);

  // Counted per model: copies include the per-row and per-run gathers.
  CHECK(used(in, "gemm") == 1);
  CHECK(used(in, "norm") == 1);
  CHECK(used(in, "copy") == 4);
  CHECK(used(in, "gather") == 1);
  CHECK(used(in, "interference") == 1);
  CHECK(used(in, "p2p") == 1);
  CHECK(used(in, "allreduce") == 1);
  CHECK(used(in, "alltoall") == 1);
  CHECK(skipped(in, "pageable") == 1);
  CHECK(skipped(in, "bidirectional") == 1);
  CHECK(skipped(in, "device-to-device") == 1);
  CHECK(skipped(in, "more GPUs") == 1);
  std::size_t total_skipped = 0;
  for (const auto& [reason, n] : in.skipped) total_skipped += n;
  CHECK(total_skipped == 4);
}

TEST_CASE("ess-bench JSON: a larger node keeps the 16-GPU all-reduce", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const ess::MeasurementSet s = read({write(dir, "h200.json", kEssBench)}, "", 16);
  REQUIRE(s.allreduce.size() == 2);
  CHECK(s.allreduce[1].gpus == 16);
  CHECK(s.allreduce[1].seconds == 9e-5);
  CHECK(skipped(s.inputs[0], "more GPUs") == 0);
}

TEST_CASE("ess-bench JSON: the environment fields not recorded are said so", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const ess::MeasurementSet s = read({write(dir, "a.json", ess_bench("NVIDIA H100", kGemmSample))});
  CHECK(s.inputs[0].date == "not recorded");
  CHECK(s.inputs[0].environment ==
        "not recorded; driver not recorded; CUDA runtime not recorded; cuBLAS not recorded");
}

TEST_CASE("Vidur compute CSV: four GEMM shapes per row for TP 1 and TP 2, times in seconds", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const ess::MeasurementSet s = read({write(dir, "compute_a100_x.csv", vidur_compute_csv())});
  REQUIRE(s.inputs.size() == 1);
  CHECK(s.inputs[0].format == "vidur-compute");
  CHECK(s.inputs[0].gpu == "a100");  // from the file name
  // Llama-2-7B: head_dim = 4096 / 32 = 128.
  // TP 1: QKV n = (32 + 2 x 32) x 128 = 12288, k = 4096; O n = 4096, k = 32 x 128 = 4096;
  //       up n = 2 x 11008 = 22016 (gated), k = 4096; down n = 4096, k = 11008.
  // TP 2: QKV n = 12288 / 2 = 6144, k = 4096; O n = 4096, k = 4096 / 2 = 2048;
  //       up n = 22016 / 2 = 11008, k = 4096; down n = 4096, k = 11008 / 2 = 5504.
  // Times: ms x 1e-3.
  struct Expected {
    std::int64_t n, k;
    double seconds;
  };
  const Expected expected[] = {{12288, 4096, 0.05e-3}, {4096, 4096, 0.02e-3},  {22016, 4096, 0.08e-3},
                               {4096, 11008, 0.04e-3}, {6144, 4096, 0.03e-3},  {4096, 2048, 0.012e-3},
                               {11008, 4096, 0.045e-3}, {4096, 5504, 0.025e-3}};
  REQUIRE(s.gemm.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    INFO("GEMM " << i);
    CHECK(s.gemm[i].shape.m == 8);
    CHECK(s.gemm[i].shape.n == expected[i].n);
    CHECK(s.gemm[i].shape.k == expected[i].k);
    CHECK(s.gemm[i].shape.dtype == DType::fp16);
    CHECK(s.gemm[i].seconds == same(expected[i].seconds));
  }
  // The TP 1 row's two RMSNorms are the same shape (8 x 4096 fp16): merged into their mean,
  // (0.006 + 0.008) / 2 = 0.007 ms; the TP 2 row's norms are skipped (the same kernel as TP 1).
  REQUIRE(s.norm.size() == 1);
  CHECK(s.norm[0].shape.tokens == 8);
  CHECK(s.norm[0].shape.hidden == 4096);
  CHECK(s.norm[0].shape.dtype == DType::fp16);
  CHECK(s.norm[0].shape.kind == NormKind::rms);
  CHECK(s.norm[0].seconds == same(7e-6));
  CHECK(s.duplicates_merged == 1);
  CHECK(used(s.inputs[0], "gemm") == 8);
  CHECK(used(s.inputs[0], "norm") == 2);
  CHECK(skipped(s.inputs[0], "TP > 1") == 2);
}

TEST_CASE("Vidur compute CSV: the header used in these tests is Vidur's own", "[measurements]") {
  const std::filesystem::path real =
      std::filesystem::path(ESS_SOURCE_DIR) / "calibration/data/public/vidur/compute_a100_meta-llama_Llama-2-7b-hf_mlp.csv";
  std::ifstream in(real);
  REQUIRE(in.good());
  std::string header;
  std::getline(in, header);
  if (!header.empty() && header.back() == '\r') header.pop_back();
  CHECK(header == kVidurComputeHeader);
}

TEST_CASE("Vidur compute CSV: the GPU filter matches the file name's GPU case-insensitively", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "compute_a100_x.csv", vidur_compute_csv());
  CHECK(read({path}, "A100").gemm.size() == 8);
  check_error({path}, {path, "no usable measurement for GPU \"H100\" (this file: a100)"}, "H100");
  // The GPU is only in the name: a file named otherwise cannot be attributed.
  const std::string unnamed = write(dir, "llama.csv", vidur_compute_csv());
  check_error({unnamed}, {unnamed, "compute_<gpu>_"});
}

TEST_CASE("Vidur network CSV: one-node rows are used, rows across nodes or over too many GPUs skipped",
          "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "network_a100_dgx_all_reduce.csv", kVidurAllReduce);
  const ess::MeasurementSet s = read({path});
  const ess::MeasurementInput& in = s.inputs.at(0);
  CHECK(in.format == "vidur-network");
  CHECK(in.gpu == "a100");
  CHECK(in.sha256 == kVidurAllReduceSha256);
  // Row 0: 4 GPUs in one node, 1 MiB, 0.05 ms; row 3: 8 GPUs, 64 KiB, 0.025 ms.
  REQUIRE(s.allreduce.size() == 2);
  CHECK(s.allreduce[0].gpus == 4);
  CHECK(s.allreduce[0].bytes == 1048576.0);
  CHECK(s.allreduce[0].seconds == same(5e-5));
  CHECK(s.allreduce[1].gpus == 8);
  CHECK(s.allreduce[1].bytes == 65536.0);
  CHECK(s.allreduce[1].seconds == same(2.5e-5));
  CHECK(s.p2p.empty());
  // Row 1: 2 workers on 1 device per node (two nodes); row 2: 16 GPUs on a node of 8.
  CHECK(skipped(in, "spanning nodes") == 1);
  CHECK(skipped(in, "more GPUs") == 1);
  CHECK(used(in, "allreduce") == 2);
  // On a base with 16 GPUs per node, row 2 is used too.
  CHECK(read({path}, "", 16).allreduce.size() == 3);
}

TEST_CASE("Vidur network CSV: send_recv rows are P2P points", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string text =
      ",time_stats.send_recv.min,time_stats.send_recv.max,time_stats.send_recv.mean,time_stats.send_recv.median,"
      "time_stats.send_recv.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
      "0,0.01,0.03,0.02,0.02,0.005,0,2,1048576,send_recv,2,8\n";
  const ess::MeasurementSet s = read({write(dir, "network_h100_dgx_send_recv.csv", text)});
  CHECK(s.inputs.at(0).gpu == "h100");
  REQUIRE(s.p2p.size() == 1);
  CHECK(s.p2p[0].gpus == 2);
  CHECK(s.p2p[0].bytes == 1048576.0);
  CHECK(s.p2p[0].seconds == same(2e-5));
  CHECK(s.allreduce.empty());
}

TEST_CASE("Liger CSV: rows of two GPUs need a GPU filter, which keeps the right rows", "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "liger.csv", kLiger);
  check_error({path}, {path, "several GPUs", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "--gpu"});

  const ess::MeasurementSet h100 = read({path}, "h100");
  const ess::MeasurementInput& in = h100.inputs.at(0);
  CHECK(in.format == "liger-norm");
  CHECK(in.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(in.date == "2024-09-04 10:00:00");
  CHECK_THAT(in.environment, Contains("Liger-Kernel 0.2.1"));
  REQUIRE(h100.norm.size() == 1);
  CHECK(h100.norm[0].shape.tokens == 2048);  // M
  CHECK(h100.norm[0].shape.hidden == 4096);  // x_value
  CHECK(h100.norm[0].shape.dtype == DType::bf16);
  CHECK(h100.norm[0].shape.kind == NormKind::rms);
  CHECK(h100.norm[0].seconds == same(1.5e-5));
  CHECK(skipped(in, "another GPU") == 5);

  const ess::MeasurementSet a100 = read({path}, "A100-SXM4");
  const ess::MeasurementInput& ia = a100.inputs.at(0);
  CHECK(ia.gpu == "NVIDIA A100-SXM4-80GB");
  CHECK(ia.date == "2024-09-03 15:39:14, 2024-09-03 15:39:30");
  // rms_norm bf16 and layer_norm fp32; backward, another provider and fused-add are skipped.
  REQUIRE(a100.norm.size() == 2);
  CHECK(a100.norm[0].shape.kind == NormKind::rms);
  CHECK(a100.norm[0].seconds == same(2e-5));
  CHECK(a100.norm[1].shape.kind == NormKind::layer);
  CHECK(a100.norm[1].shape.tokens == 4096);
  CHECK(a100.norm[1].shape.hidden == 1024);
  CHECK(a100.norm[1].shape.dtype == DType::fp32);
  CHECK(a100.norm[1].seconds == same(3e-5));
  CHECK(skipped(ia, "another GPU") == 1);
  CHECK(skipped(ia, "other kernels") == 1);
  CHECK(skipped(ia, "backward") == 2);
}

TEST_CASE("read_measurements: files that cannot be read or recognised", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  SECTION("an unknown table") {
    const std::string path = write(dir, "x.csv", "a,b\n1,2\n");
    check_error({path}, {path, "line 1", "unrecognised"});
  }
  SECTION("a missing file") {
    const std::string path = (dir.path() / "no-such.json").string();
    check_error({path}, {path, "no such file"});
  }
  SECTION("a directory") {
    check_error({dir.path().string()}, {dir.path().string(), "is a directory"});
  }
  SECTION("an empty file") {
    const std::string path = write(dir, "empty.json", "  \n");
    check_error({path}, {path, "empty"});
  }
  SECTION("a CSV with a header only") {
    const std::string path = write(dir, "header.csv", std::string(kVidurComputeHeader) + "\n");
    check_error({path}, {path, "header and at least one row"});
  }
  SECTION("no files at all") {
    CHECK_THROWS_AS(read({}), MeasurementError);
  }
}

TEST_CASE("read_measurements: a malformed number names its line and column", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  auto row = llama2_7b("8x", "1");
  const std::string path = write(dir, "compute_a100_x.csv", std::string(kVidurComputeHeader) + "\n" +
                                                              vidur_row(llama2_7b("8", "1")) + "\n" + vidur_row(row) + "\n");
  // num_tokens is the 57th of Vidur's 58 columns.
  check_error({path}, {path, "line 3, column 57", "\"num_tokens\"", "expected an integer", "got \"8x\""});
  // A time that is not positive.
  auto zero = llama2_7b("8", "1");
  zero["time_stats.mlp_up_proj.median"] = "0";
  const std::string z = write(dir, "compute_a100_z.csv", std::string(kVidurComputeHeader) + "\n" + vidur_row(zero) + "\n");
  check_error({z}, {z, "line 2", "time_stats.mlp_up_proj.median", "> 0"});
}

TEST_CASE("read_measurements: ess-bench JSON errors name the JSON pointer", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  SECTION("another schema") {
    const std::string path = write(dir, "a.json", R"({"schema": "ess-sim/scenario/v1", "samples": []})");
    check_error({path}, {path, "/schema", "expected \"schema\": \"ess-sim/measurements/v1\""});
  }
  SECTION("not JSON") {
    const std::string path = write(dir, "a.json", R"({"schema": )");
    check_error({path}, {path, "invalid JSON at line 1, column 12"});
  }
  SECTION("an unknown sample kind, with a did-you-mean") {
    const std::string path = write(dir, "a.json", ess_bench("NVIDIA H200", R"({"kind": "gemmm", "stats": {"median_s": 1}})"));
    check_error({path}, {path, "/samples/0/kind", "unknown value \"gemmm\"", "did you mean \"gemm\"?"});
  }
  SECTION("a missing field") {
    const std::string path = write(dir, "a.json", ess_bench("NVIDIA H200", std::string(kGemmSample) +
        R"(, {"kind": "gemm", "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5}})"));
    check_error({path}, {path, "/samples/1/m", "missing"});
  }
  SECTION("a time that is not positive") {
    const std::string path = write(dir, "a.json", ess_bench("NVIDIA H200",
        R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 0}})"));
    check_error({path}, {path, "/samples/0/stats/median_s", "> 0"});
  }
  SECTION("no GPU in the environment") {
    const std::string path = write(dir, "a.json", R"({"schema": "ess-sim/measurements/v1", "environment": {}, "samples": []})");
    check_error({path}, {path, "/environment/gpu", "missing"});
  }
}

TEST_CASE("read_measurements: a file with no row for the chosen GPU is an error", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "h200.json", kEssBench);
  check_error({path}, {path, "no usable measurement for GPU \"A100\" (this file: NVIDIA H200)"}, "A100");
  CHECK(read({path}, "h200").gemm.size() == 1);
}

TEST_CASE("read_measurements: inputs from different GPUs need --gpu", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string h200 = write(dir, "h200.json", kEssBench);
  const std::string a100 = write(dir, "compute_a100_x.csv", vidur_compute_csv());
  check_error({h200, a100}, {"measured on different GPUs", "\"NVIDIA H200\"", "\"a100\"", "--gpu"});
  // With a filter, the H200 file alone would be kept, but then the A100 file contributes nothing.
  check_error({h200, a100}, {a100, "no usable measurement for GPU \"H200\""}, "H200");
}

TEST_CASE("read_measurements: repeated shapes are merged into their mean, within and across files",
          "[measurements]") {
  const ess::test::ScratchDir dir("ess-measurements");
  // The same GEMM three times in one file (10, 20, 60 us) and once more in another (30 us), plus a
  // different m: one point of mean (10 + 20 + 60 + 30) / 4 = 30 us, and the other untouched.
  const std::string a = write(dir, "a.json", ess_bench("NVIDIA H200",
      R"({"kind": "gemm", "m": 4, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5}},
         {"kind": "gemm", "m": 4, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 2e-5}},
         {"kind": "gemm", "m": 8, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 5e-5}},
         {"kind": "gemm", "m": 4, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 6e-5}},
         {"kind": "gemm", "m": 4, "n": 64, "k": 64, "dtype": "fp16", "stats": {"median_s": 7e-5}})"));
  const std::string b = write(dir, "b.json", ess_bench("NVIDIA H200",
      R"({"kind": "gemm", "m": 4, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 3e-5}},
         {"kind": "p2p", "src": 0, "dst": 1, "bytes": 1024, "stats": {"median_s": 4e-6}},
         {"kind": "p2p", "src": 1, "dst": 0, "bytes": 1024, "stats": {"median_s": 6e-6}})"));
  const ess::MeasurementSet s = read({a, b});
  // bf16 m 4 (merged), bf16 m 8, fp16 m 4 (another dtype: not a duplicate).
  REQUIRE(s.gemm.size() == 3);
  CHECK(s.gemm[0].shape.m == 4);
  CHECK(s.gemm[0].shape.dtype == DType::bf16);
  CHECK(s.gemm[0].seconds == same(3e-5));
  CHECK(s.gemm[1].shape.m == 8);
  CHECK(s.gemm[1].seconds == 5e-5);
  CHECK(s.gemm[2].shape.dtype == DType::fp16);
  CHECK(s.gemm[2].seconds == 7e-5);
  // P2P: (4 + 6) / 2 = 5 us.
  REQUIRE(s.p2p.size() == 1);
  CHECK(s.p2p[0].seconds == same(5e-6));
  // 3 repeated GEMMs + 1 repeated P2P.
  CHECK(s.duplicates_merged == 4);
  CHECK(s.inputs.size() == 2);
}

// --- hostile input: every bad file is a MeasurementError naming where, never a crash, an internal
// error or a silently accepted value (each case below was accepted, crashed or exited 3 before) ---

namespace {

// The Llama-2-7B TP 1 row with `changes` applied, as a whole Vidur compute file.
std::string vidur_file(const std::map<std::string, std::string>& changes) {
  auto row = llama2_7b("8", "1");
  for (const auto& [k, v] : changes) row[k] = v;
  return std::string(kVidurComputeHeader) + "\n" + vidur_row(row) + "\n";
}

// An ess-bench file with one sample.
std::string one_sample(const std::string& sample) { return ess_bench("NVIDIA H200", sample); }

}  // namespace

TEST_CASE("hostile input: integers that overflow or do not fit are rejected, not wrapped", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  SECTION("rows x row_bytes of a gather beyond int64 (was signed overflow)") {
    const std::string path = write(dir, "a.json", one_sample(
        R"({"kind": "gather", "direction": "h2d", "method": "uva_kernel", "rows": 1099511627776,
            "row_bytes": 1099511627776, "calls": 0, "stats": {"median_s": 1e-3}})"));
    // 2^40 rows are beyond the 2^32-row bound already; with rows in range the product is checked.
    check_error({path}, {path, "/samples/0/rows", "expected an integer from 1 to 4294967296 (rows)"});
    const std::string product = write(dir, "b.json", one_sample(
        R"({"kind": "gather", "direction": "h2d", "method": "uva_kernel", "rows": 4294967296,
            "row_bytes": 1099511627776, "calls": 0, "stats": {"median_s": 1e-3}})"));
    check_error({product}, {product, "/samples/0/rows", "rows x row_bytes (4294967296 x 1099511627776)", "1 TiB"});
  }
  SECTION("a Vidur row whose (heads + 2 kv) x head_dim overflowed (was signed overflow)") {
    // n_embd 2^52, n_head 2^26, n_kv_head 2^40: now each is outside its physical range.
    const std::string path = write(dir, "compute_a100_x.csv", vidur_file({{"n_embd", "4503599627370496"},
                                                                         {"n_head", "67108864"},
                                                                         {"n_kv_head", "1099511627776"}}));
    check_error({path}, {path, "line 2, column 53", "\"n_embd\"", "expected an integer from 1 to 4194304 (features)"});
    const std::string heads = write(dir, "compute_a100_y.csv", vidur_file({{"n_head", "67108864"}}));
    check_error({heads}, {heads, "line 2, column 51", "\"n_head\"", "from 1 to 65536 (heads)"});
  }
  SECTION("gpus = 2^32 + 2 is not read as 2 GPUs (was truncated to int)") {
    const std::string path = write(dir, "a.json", one_sample(
        R"({"kind": "allreduce", "gpus": 4294967298, "bytes": 1048576, "dtype": "bf16", "stats": {"median_s": 1e-4}})"));
    check_error({path}, {path, "/samples/0/gpus", "expected an integer from 2 to 65536 (GPUs)", "4294967298"});
    const std::string csv = write(dir, "network_a100_dgx_all_reduce.csv",
        ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,"
        "time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
        "0,0.04,0.06,0.05,0.05,0.01,0,4294967298,1048576,all_reduce,4294967298,8\n");
    check_error({csv}, {csv, "line 2, column 8", "\"num_workers\"", "from 2 to 65536 (GPUs)"});
  }
  SECTION("integers beyond uint64, negative or written as fractions") {
    for (const char* m : {"18446744073709551616", "-1", "0", "1.5", "8.0", "\"8\"", "1e3"}) {
      INFO(m);
      const std::string path = write(dir, "a.json", one_sample(std::string(R"({"kind": "gemm", "m": )") + m +
                                                               R"(, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5}})"));
      CHECK_THROWS_AS(read({path}), MeasurementError);
    }
  }
  SECTION("a byte count above 1 TiB") {
    const std::string path = write(dir, "a.json", one_sample(
        R"({"kind": "copy", "direction": "h2d", "host_memory": "pinned", "bytes": 1099511627777, "stats": {"median_s": 1}})"));
    check_error({path}, {path, "/samples/0/bytes", "from 1 to 1099511627776 (bytes)"});
  }
}

TEST_CASE("hostile input: an integral decimal and the bounds themselves are accepted", "[measurements]") {
  // The checks must not refuse real data: pandas writes "4096.0" for integer columns, and a value
  // on a bound is inside it.
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "compute_a100_x.csv", vidur_file({{"num_tokens", "4096.0"}}));
  const auto s = read({path});
  REQUIRE(s.gemm.size() == 4);
  CHECK(s.gemm[0].shape.m == 4096);
  const std::string edge = write(dir, "a.json", one_sample(
      R"({"kind": "gemm", "m": 16777216, "n": 4194304, "k": 1, "dtype": "bf16", "stats": {"median_s": 3600}},
         {"kind": "gemm", "m": 1, "n": 1, "k": 1, "dtype": "bf16", "stats": {"median_s": 1e-9}})"));
  const auto e = read({edge});
  REQUIRE(e.gemm.size() == 2);
  CHECK(e.gemm[0].shape.m == 16777216);
  CHECK(e.gemm[1].seconds == 1e-9);
}

TEST_CASE("hostile input: numbers beyond a double are a MeasurementError, not an internal error", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string path = write(dir, "a.json", one_sample(
      R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e400}})"));
  check_error({path}, {path, "invalid JSON", "number overflow", "1e400"});
  // Also inside the JSON cell of a Liger row.
  std::string liger = kLiger;
  const std::string cell = R"({""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06})";
  liger.replace(liger.find(cell), cell.size(), R"({""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e400})");
  const std::string csv = write(dir, "liger.csv", liger);
  check_error({csv}, {csv, "line 2, column 12", "extra_benchmark_config_str", "not JSON", "number overflow"}, "A100");
}

TEST_CASE("hostile input: JSON with duplicate keys or deep nesting is refused", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string dup = write(dir, "a.json", one_sample(
      R"({"kind": "gemm", "m": 1, "m": 4096, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5}})"));
  check_error({dup}, {dup, "/samples/0/m", "duplicate key \"m\""});
  const std::string deep = write(dir, "b.json", R"({"schema": "ess-sim/measurements/v1", "environment": {"gpu": "x", "method": )" +
                                                    std::string(100, '[') + std::string(100, ']') + "}}");
  check_error({deep}, {deep, "nested deeper than 64"});
  std::string liger = kLiger;
  const std::string cell = R"({""M"": 2048, ""dtype"": ""torch.bfloat16"", ""eps"": 1e-06})";
  liger.replace(liger.find(cell), cell.size(), R"({""M"": 2048, ""M"": 8, ""dtype"": ""torch.bfloat16""})");
  const std::string csv = write(dir, "liger.csv", liger);
  check_error({csv}, {csv, "line 2", "duplicate key \"M\""}, "A100");
}

TEST_CASE("hostile input: times outside 1 ns to 1 hour are refused with their row and column", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  // A 1e308 ms cell used to give a ruined profile and exit 0. time_stats.attn_pre_proj.median is
  // column 14.
  for (const char* ms : {"1e308", "3600001", "5e-7", "-1", "0"}) {
    INFO(ms);
    const std::string path = write(dir, "compute_a100_x.csv", vidur_file({{"time_stats.attn_pre_proj.median", ms}}));
    check_error({path}, {path, "line 2, column 14", "\"time_stats.attn_pre_proj.median\"", "between 1 ns and 1 hour"});
  }
  // 2e-6 ms = 2 ns and 3.5e6 ms (58 minutes) are inside.
  CHECK(read({write(dir, "compute_a100_y.csv", vidur_file({{"time_stats.attn_pre_proj.median", "2e-6"},
                                                           {"time_stats.mlp_up_proj.median", "3.5e6"}}))})
            .gemm.size() == 4);
  for (const char* s : {"1e308", "3601", "9e-10", "1e-30"}) {
    INFO(s);
    const std::string path = write(dir, "a.json", one_sample(std::string(R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": )") +
                                                             s + "}}"));
    check_error({path}, {path, "/samples/0/stats/median_s", "between 1e-09 (1 ns) and 3600 (1 hour)"});
  }
  // An unused statistic must still be a number.
  const std::string junk = write(dir, "compute_a100_z.csv", vidur_file({{"time_stats.attn_rope.std", "nan"}}));
  check_error({junk}, {junk, "line 2, column 20", "\"time_stats.attn_rope.std\"", "expected a number"});
}

TEST_CASE("hostile input: duplicate, unknown and missing CSV columns and rows of another width", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string row = vidur_row(llama2_7b("8", "1"));
  SECTION("a duplicate column") {
    const std::string path = write(dir, "compute_a100_x.csv", std::string(kVidurComputeHeader) + ",num_tokens\n" + row + ",16\n");
    check_error({path}, {path, "line 1, column 59", "duplicate column \"num_tokens\" (also column 57)"});
  }
  SECTION("an unknown column, with a did-you-mean") {
    const std::string path = write(dir, "compute_a100_x.csv",
                                   std::string(kVidurComputeHeader) + ",time_stats.attn_pre_proj.meadian\n" + row + ",1\n");
    check_error({path}, {path, "line 1, column 59", "unknown column \"time_stats.attn_pre_proj.meadian\"",
                         "Vidur compute", "did you mean \"time_stats.attn_pre_proj.median\"?"});
    std::string liger = kLiger;
    liger.replace(liger.find("liger_version"), 13, "liger_version,y_value_55");
    const std::string csv = write(dir, "liger.csv", liger);
    check_error({csv}, {csv, "line 1, column 16", "unknown column \"y_value_55\""}, "A100");
  }
  SECTION("a network table with both collectives' columns") {
    const std::string path = write(dir, "network_a100_dgx_all_reduce.csv",
        ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,"
        "time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node,"
        "time_stats.send_recv.median\n0,0.04,0.06,0.05,0.05,0.01,0,4,1048576,all_reduce,4,8,0.05\n");
    check_error({path}, {path, "line 1, column 13", "unknown column \"time_stats.send_recv.median\"", "Vidur all_reduce"});
  }
  SECTION("a collective column that contradicts the time column") {
    const std::string path = write(dir, "network_a100_dgx_all_reduce.csv",
        ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,"
        "time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
        "0,0.04,0.06,0.05,0.05,0.01,0,4,1048576,send_recv,4,8\n");
    check_error({path}, {path, "line 2, column 10", "expected all_reduce", "send_recv"});
  }
  SECTION("more devices per node than the row's node has") {
    const std::string path = write(dir, "network_a100_dgx_all_reduce.csv",
        ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,"
        "time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"
        "0,0.04,0.06,0.05,0.05,0.01,0,16,1048576,all_reduce,16,8\n");
    check_error({path}, {path, "line 2, column 11", "\"devices_per_node\"", "max_devices_per_node (8)"});
  }
  SECTION("a row with an extra or a missing field") {
    const std::string extra = write(dir, "compute_a100_x.csv", std::string(kVidurComputeHeader) + "\n" + row + "\n" + row + ",7\n");
    check_error({extra}, {extra, "line 3", "has 59 fields, the header has 58"});
    const std::string missing = write(dir, "compute_a100_y.csv",
                                      std::string(kVidurComputeHeader) + "\n" + row.substr(0, row.rfind(',')) + "\n");
    check_error({missing}, {missing, "line 2", "has 57 fields, the header has 58"});
  }
}

TEST_CASE("hostile input: unknown keys and inconsistent fields in ess-bench samples", "[measurements][errors]") {
  const ess::test::ScratchDir dir("ess-measurements");
  const std::string key = write(dir, "a.json", one_sample(
      R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "mm": 2, "stats": {"median_s": 1e-5}})"));
  check_error({key}, {key, "/samples/0/mm", "unknown key \"mm\"", "did you mean \"m\"?"});
  const std::string stats = write(dir, "b.json", one_sample(
      R"({"kind": "gemm", "m": 1, "n": 64, "k": 64, "dtype": "bf16", "stats": {"median_s": 1e-5, "medain_s": 1}})"));
  check_error({stats}, {stats, "/samples/0/stats/medain_s", "did you mean \"median_s\"?"});
  const std::string top = write(dir, "c.json", R"({"schema": "ess-sim/measurements/v1", "environment": {"gpu": "x"},
                                                    "samples": [], "sample": []})");
  check_error({top}, {top, "/sample", "unknown key"});
  // A per-row gather of 64 rows makes 64 calls; 1e9 calls is a corrupted count.
  const std::string calls = write(dir, "d.json", one_sample(
      R"({"kind": "gather", "direction": "h2d", "method": "per_row", "rows": 64, "row_bytes": 656, "calls": 1000000000,
          "stats": {"median_s": 1e-3}})"));
  check_error({calls}, {calls, "/samples/0/calls", "a per_row gather of 64 rows makes 64 copy calls, got 1000000000"});
  const std::string peer = write(dir, "e.json", one_sample(
      R"({"kind": "p2p", "src": 1, "dst": 1, "bytes": 1024, "stats": {"median_s": 1e-5}})"));
  check_error({peer}, {peer, "/samples/0/dst", "src != dst"});
}

TEST_CASE("read_measurement_text reads text with the GPU of its origin's file name", "[measurements]") {
  ess::ReadOptions o;
  const ess::MeasurementSet s = ess::read_measurement_text(kVidurAllReduce, "dir/network_h100_dgx_all_reduce.csv", o);
  REQUIRE(s.inputs.size() == 1);
  CHECK(s.inputs[0].gpu == "h100");
  CHECK(s.inputs[0].path == "dir/network_h100_dgx_all_reduce.csv");
  CHECK(s.inputs[0].sha256 == kVidurAllReduceSha256);
  CHECK(s.allreduce.size() == 2);
  CHECK_THROWS_WITH(ess::read_measurement_text("{\"schema\": 1", "fuzz-input", o), Contains("fuzz-input"));
}

// --- DeepSeek transcriptions (calibration/data/public/deepseek/) --------------------------------

const char* const kDeepGemm =
    "# a header comment, as the transcriptions carry\n"
    "# a second comment line\n"
    "readme_commit,gpu,kind,groups,m,n,k,tflops,gbps,us_derived,speedup_vs_cutlass36\n"
    "aaaa,H800 SXM5,normal,1,4096,7168,2048,1025,697,117.33,1.1x\n"
    "aaaa,H800 SXM5,grouped-masked,2,512,4096,7168,1040,1288,57.82,1.2x\n"
    "bbbb,H800 SXM5,normal,1,4096,7168,2048,1168,794,102.96,1.2x\n"
    "bbbb,H800 SXM5,normal,1,64,2112,7168,206,1688,9.41,2.7x\n";

TEST_CASE("DeepGEMM CSV: the newest README version of each shape, times from TFLOPS", "[measurements][deepseek]") {
  const ess::test::ScratchDir dir("deepgemm");
  const auto m = read({write(dir, "g.csv", kDeepGemm)});
  REQUIRE(m.inputs.size() == 1);
  CHECK(m.inputs[0].format == "deepgemm");
  CHECK(m.inputs[0].gpu == "H800 SXM5");
  // 4096 x 7168 x 2048 appears in both versions: the later one (1168 TFLOPS) is used, the other counted.
  REQUIRE(m.gemm.size() == 2);
  CHECK(m.gemm[0].shape.m == 4096);
  CHECK(m.gemm[0].shape.dtype == DType::fp8);
  CHECK(m.gemm[0].seconds == same(2.0 * 4096 * 7168 * 2048 / 1168e12));
  CHECK(m.gemm[1].seconds == same(2.0 * 64 * 2112 * 7168 / 206e12));
  CHECK(skipped(m.inputs[0], "superseded") == 1);
  // Grouped: 2 groups of 512 rows each: m_total 1024, FLOP 2 x 2 x 512 x 4096 x 7168.
  REQUIRE(m.grouped_gemm.size() == 1);
  CHECK(m.grouped_gemm[0].shape.groups == 2);
  CHECK(m.grouped_gemm[0].shape.m_total == 1024);
  CHECK(m.grouped_gemm[0].shape.n == 4096);
  CHECK(m.grouped_gemm[0].seconds == same(2.0 * 2 * 512 * 4096 * 7168 / 1040e12));
  CHECK(used(m.inputs[0], "gemm") == 2);
  CHECK(used(m.inputs[0], "grouped-gemm") == 1);
}

TEST_CASE("DeepGEMM CSV: a typing error is caught by the header's own arithmetic", "[measurements][deepseek][errors]") {
  const ess::test::ScratchDir dir("deepgemm-bad");
  std::string t = kDeepGemm;
  // us_derived 127.33 instead of 117.33: 8.5% off what 1025 TFLOPS gives. Line 4, column 10.
  t.replace(t.find("117.33"), 6, "127.33");
  CHECK_THROWS_WITH(read({write(dir, "us.csv", t)}),
                    Contains("us.csv: line 4, column 10: \"us_derived\": is 127.33 but 2 groups m n k / TFLOPS gives"));
  t = kDeepGemm;
  t.replace(t.find("697"), 3, "797");
  CHECK_THROWS_WITH(read({write(dir, "gbps.csv", t)}), Contains("line 4, column 9: \"gbps\""));
  t = kDeepGemm;
  t.replace(t.find("grouped-masked"), 14, "grouped-maskd");
  CHECK_THROWS_WITH(read({write(dir, "kind.csv", t)}),
                    Contains("line 5, column 3: \"kind\": unknown value \"grouped-maskd\" (did you mean \"grouped-masked\"?)"));
  t = kDeepGemm;
  t.replace(t.find("1.2x\nbbbb"), 4, "1.2");
  CHECK_THROWS_WITH(read({write(dir, "x.csv", t)}), Contains("expected a speed-up such as 1.4x"));
  // A version listed again after another began: the newest-version rule needs them in order.
  t = std::string(kDeepGemm) + "aaaa,H800 SXM5,normal,1,128,2112,7168,352,1509,11.01,2.4x\n";
  CHECK_THROWS_WITH(read({write(dir, "order.csv", t)}), Contains("line 8, column 1: \"readme_commit\": version aaaa reappears after bbbb"));
  // The header sits on line 3 (after the comments): a misspelt column names that line.
  t = kDeepGemm;
  t.replace(t.find("tflops"), 6, "tflop");
  CHECK_THROWS_WITH(read({write(dir, "col.csv", t)}),
                    Contains("line 3, column 8: unknown column \"tflop\" for a DeepGEMM table (did you mean \"tflops\"?)"));
}

TEST_CASE("FlashMLA CSV: dense peak rates (the last of each) and sparse kernel times", "[measurements][deepseek]") {
  const ess::test::ScratchDir dir("flashmla");
  const auto m = read({write(dir, "f.csv",
                             "# comment\n"
                             "gpu,kernel,regime,batch,h_q,s_q,topk,tflops,gbps,us_derived,cuda,commit\n"
                             "H800,dense-bf16,memory-bound,,,,,,3000,,12.8,c1\n"
                             "H800,dense-bf16,compute-bound,,,,,580,,,12.6,c1\n"
                             "H800,dense-bf16,compute-bound,,,,,660,,,12.8,c2\n"
                             "H800,sparse-fp8kv,,128,128,2,2048,410,,356.2,12.8,c3\n"
                             "H800,sparse-fp8kv-no-crossover,,128,128,2,2048,250,,584.1,12.8,c3\n")});
  REQUIRE(m.attention_rates.size() == 2);
  CHECK_FALSE(m.attention_rates[0].compute);
  CHECK(m.attention_rates[0].rate == same(3000e9));
  CHECK(m.attention_rates[1].compute);
  CHECK(m.attention_rates[1].rate == same(660e12));  // CUDA 12.8's figure replaces 12.6's
  REQUIRE(m.sparse_attention.size() == 1);
  const auto& s = m.sparse_attention[0];
  CHECK(s.shape.requests == 128);
  CHECK(s.shape.queries_per_request == 2);
  CHECK(s.shape.heads == 128);
  CHECK(s.shape.qk_dim == 576);
  CHECK(s.shape.v_dim == 512);
  CHECK(s.shape.entry_bytes.value() == 656.0);
  CHECK(s.selected == 2048);
  CHECK(s.seconds == same(2.0 * 128 * 2 * 128 * 2048 * 1088 / 410e12));
  CHECK(skipped(m.inputs[0], "ablation") == 1);
  CHECK(skipped(m.inputs[0], "superseded") == 1);
}

TEST_CASE("FlashMLA dense test CSV: fixed-length kernel times with 64-row tiles, variable lengths skipped",
          "[measurements][deepseek]") {
  const ess::test::ScratchDir dir("flashmla-dense");
  const std::string header = "gpu,batch,s_q,mean_s_k,h_q,varlen,ms,tflops,gbps\n";
  const auto m = read({write(dir, "f.csv",
                             "# comment\n" + header +
                                 "H20,128,1,4096,16,False,0.601,30,1012\n"
                                 "H20,128,1,4096,16,True,0.627,29,975\n"
                                 "H20,128,2,4096,128,False,2.379,123,284\n")});
  CHECK(m.inputs[0].format == "flashmla-dense");
  REQUIRE(m.dense_attention.size() == 2);
  const auto& p = m.dense_attention[0];
  CHECK(p.shape.requests == 128);
  CHECK(p.shape.queries_per_request == 1);
  CHECK(p.shape.heads == 16);
  CHECK(p.shape.row_tile == 64);
  CHECK(p.shape.entry_bytes.value() == 1152.0);  // BF16 cache: (512 + 64) x 2
  CHECK(p.context == 4096);
  CHECK(p.seconds == same(0.601e-3));
  CHECK(skipped(m.inputs[0], "variable-length") == 1);
  // A TFLOPS figure that disagrees with its time (2 b s_q h_q s_k 1088 / ms = 30.4) is a typing error.
  CHECK_THROWS_WITH(read({write(dir, "bad.csv", header + "H20,128,1,4096,16,False,0.601,40,1012\n")}),
                    Contains("line 2, column 8: \"tflops\""));
  // Rows of two GPUs need --gpu, which keeps one.
  const std::string two = header + "H20,128,1,4096,16,False,0.601,30,1012\nH100,128,1,4096,16,False,0.215,85,2826\n";
  CHECK_THROWS_WITH(read({write(dir, "two.csv", two)}), Contains("several GPUs"));
  const auto h100 = read({write(dir, "two2.csv", two)}, "H100");
  REQUIRE(h100.dense_attention.size() == 1);
  CHECK(h100.dense_attention[0].seconds == same(0.215e-3));
}

TEST_CASE("DeepEP low-latency CSV: NVLink rows, bytes as DeepEP counts them", "[measurements][deepseek]") {
  const ess::test::ScratchDir dir("deepep");
  const auto m = read({write(dir, "d.csv",
                             "readme_commit,kernels,ep,tokens_per_rank,dispatch_us,dispatch_gbps,combine_us,combine_gbps\n"
                             "old,low-latency pure RDMA,8,128,163,46,318,46\n"
                             "new,low-latency with NVLink,8,128,77,98,114,127\n"
                             "new,low-latency with NVLink,16,128,118,63,195,74\n")});
  CHECK(m.inputs[0].format == "deepep-ll");
  REQUIRE(m.expert_alltoall.size() == 4);
  // 128 tokens x 8 copies x 7408 B dispatched, x 14336 B combined.
  CHECK(m.expert_alltoall[0].expert_parallel == 8);
  CHECK(m.expert_alltoall[0].gpus_per_node == 8);
  CHECK(m.expert_alltoall[0].bytes == same(128.0 * 8 * 7408));
  CHECK(m.expert_alltoall[0].seconds == same(77e-6));
  CHECK(m.expert_alltoall[1].bytes == same(128.0 * 8 * 14336));
  CHECK(m.expert_alltoall[1].seconds == same(114e-6));
  CHECK(m.expert_alltoall[2].expert_parallel == 16);
  CHECK(skipped(m.inputs[0], "pure-RDMA") == 1);
  // A GB/s figure that does not match its time and bytes is a typing error (line 3, column 6).
  CHECK_THROWS_WITH(read({write(dir, "bad.csv",
                                "readme_commit,kernels,ep,tokens_per_rank,dispatch_us,dispatch_gbps,combine_us,combine_gbps\n"
                                "new,low-latency with NVLink,8,128,77,98,114,127\n"
                                "new,low-latency with NVLink,16,128,118,73,195,74\n")}),
                    Contains("line 3, column 6: \"dispatch_gbps\""));
  // An EP group over partial nodes cannot be carried the way the engine does.
  CHECK_THROWS_WITH(read({write(dir, "ep.csv",
                                "readme_commit,kernels,ep,tokens_per_rank,dispatch_us,dispatch_gbps,combine_us,combine_gbps\n"
                                "new,low-latency with NVLink,12,128,77,98,114,127\n")}),
                    Contains("line 2, column 3: \"ep\": EP 12 neither divides nor is a multiple of the base's 8 GPUs per node"));
}

TEST_CASE("PCIe sweep CSV: 1000 copies per block size, and the UVA kernel as a gather", "[measurements][deepseek]") {
  const ess::test::ScratchDir dir("sweep");
  const auto m = read({write(dir, "p.csv",
                             "block_kib,h2d_dma_gbps,h2d_kernel_gbps,d2h_dma_gbps,d2h_kernel_gbps\n"
                             "4,1.1,12.5,0.9,5.2\n"
                             "2048,47.7,47.6,46.2,48.6\n")});
  CHECK(m.inputs[0].format == "pcie-sweep");
  CHECK_THAT(m.inputs[0].gpu, Contains("H100"));
  REQUIRE(m.copy.size() == 4);
  CHECK(m.copy[0].direction == CopyDirection::h2d);
  CHECK(m.copy[0].calls == 1000);
  CHECK(m.copy[0].bytes == same(4096.0 * 1000));
  CHECK(m.copy[0].seconds == same(4096.0 * 1000 / 1.1e9));
  CHECK(m.copy[1].direction == CopyDirection::d2h);
  REQUIRE(m.gather.size() == 4);
  CHECK(m.gather[3].bytes == same(2048.0 * 1024 * 1000));
  CHECK(m.gather[3].seconds == same(2048.0 * 1024 * 1000 / 48.6e9));
  // Only an H100 file: --gpu H800 finds no row.
  CHECK_THROWS_AS(read({write(dir, "p2.csv",
                              "block_kib,h2d_dma_gbps,h2d_kernel_gbps,d2h_dma_gbps,d2h_kernel_gbps\n4,1.1,12.5,0.9,5.2\n")},
                       "H800"),
                  MeasurementError);
  CHECK_THROWS_WITH(read({write(dir, "p3.csv",
                                "block_kib,h2d_dma_gbps,h2d_kernel_gbps,d2h_dma_gbps,d2h_kernel_gbps\n4,1.1,-12.5,0.9,5.2\n")}),
                    Contains("line 2, column 3: \"h2d_kernel_gbps\": expected a number > 0"));
}

TEST_CASE("the shipped DeepSeek tables are read with the points their headers describe", "[measurements][deepseek]") {
  const std::string d = std::string(ESS_SOURCE_DIR) + "/calibration/data/public/deepseek/";
  const auto m = read({d + "deepgemm_h800_fp8_gemm.csv", d + "flashmla_h800.csv", d + "deepep_h800_low_latency.csv",
                       d + "deepep_h800_normal.csv"},
                      "H800");
  // 6 weight shapes x m 64, 128, 4096 (three README versions of each: the newest kept).
  CHECK(m.gemm.size() == 18);
  // 4 contiguous + 6 masked grouped shapes.
  CHECK(m.grouped_gemm.size() == 10);
  CHECK(skipped(m.inputs[0], "superseded") == 56);
  CHECK(m.attention_rates.size() == 2);
  CHECK(m.sparse_attention.size() == 2);
  CHECK(m.expert_alltoall.size() == 12);  // 6 EP sizes x dispatch, combine
  CHECK(m.alltoall_normal.size() == 8);   // EP 8 NVLink, EP 16-64 RDMA (newest) x dispatch, combine
  // FlashMLA's dense test: 5 fixed-length H100 rows, 18 fixed-length H20 rows.
  CHECK(read({d + "flashmla_h100_h20_dense.csv"}, "H100").dense_attention.size() == 5);
  CHECK(read({d + "flashmla_h100_h20_dense.csv"}, "H20").dense_attention.size() == 18);
}

TEST_CASE("FlashAttention forward CSV: causal and full kernel times from the paper's TFLOPS convention",
          "[measurements][prefill]") {
  const ess::test::ScratchDir dir("flashattention");
  const std::string header = "gpu,head_dim,causal,batch,heads,seqlen,tflops\n";
  const auto m = read({write(dir, "fa.csv",
                             "# comment\n" + header +
                                 "H100 80GB SXM5,128,True,32,16,512,292\n"
                                 "H100 80GB SXM5,128,False,1,16,16384,648\n")});
  CHECK(m.inputs[0].format == "flashattention");
  REQUIRE(m.prefill_attention.size() == 2);
  const auto& c = m.prefill_attention[0];
  CHECK(c.shape.queries == 32 * 512);
  CHECK(c.shape.key_pairs == same(32.0 * 512 * 513 / 2));
  CHECK(c.shape.heads == 16);
  CHECK(c.shape.kv_heads == 16);
  CHECK(c.shape.qk_dim == 128);
  CHECK(c.shape.v_dim == 128);
  // Causal: the paper counts half of 4 batch seqlen^2 heads head_dim.
  CHECK(c.seconds == same(4.0 * 32 * 512 * 512 * 16 * 128 / 2 / 292e12));
  const auto& f = m.prefill_attention[1];
  CHECK(f.shape.key_pairs == same(16384.0 * 16384));
  CHECK(f.seconds == same(4.0 * 16384 * 16384 * 16 * 128 / 648e12));
  // The shipped table: 18 rows, one GPU.
  const auto shipped = read({std::string(ESS_SOURCE_DIR) + "/calibration/data/public/flashattention/fa3_h100_forward.csv"});
  CHECK(shipped.prefill_attention.size() == 18);
  CHECK_THAT(shipped.inputs[0].gpu, Contains("H100"));
  CHECK_THROWS_WITH(read({write(dir, "bad.csv", header + "H100,128,maybe,32,16,512,292\n")}), Contains("causal"));
  CHECK_THROWS_WITH(read({write(dir, "neg.csv", header + "H100,128,True,32,16,512,-292\n")}),
                    Contains("expected a number > 0"));
}
