// What ess-bench measures (kernels/bench/sweep.h): the model GEMM shapes against the models'
// published configurations, well-formed size lists, and the number of samples per sweep.
#include "kernels/bench/sweep.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/norm_launch.h"

using ess::bench::GemmDtype;
using ess::bench::GemmShape;
using ess::bench::Sweep;

namespace {

const GemmShape& find(std::string_view model, std::string_view layer) {
  for (const GemmShape& s : ess::bench::model_gemm_shapes()) {
    if (s.model == model && s.layer == layer) return s;
  }
  FAIL("no shape " << model << " " << layer);
  throw std::logic_error("unreachable");
}

bool strictly_increasing(const std::vector<std::int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), [](auto a, auto b) { return a >= b; }) == v.end();
}

void check_well_formed(const Sweep& s) {
  for (const auto* list : {&s.gemm_m, &s.norm_tokens, &s.norm_hidden, &s.copy_bytes, &s.gather_rows,
                           &s.interference_rows, &s.d2d_bytes, &s.p2p_bytes, &s.collective_bytes}) {
    CHECK_FALSE(list->empty());
    CHECK(strictly_increasing(*list));  // sorted and unique
    CHECK(list->front() >= 1);
  }
  std::set<std::pair<std::string_view, std::string_view>> names;
  for (const GemmShape& g : s.gemm_shapes) {
    INFO(g.model << " " << g.layer);
    CHECK(g.n >= 1);
    CHECK(g.k >= 1);
    // 16-byte rows for every dtype (cuBLASLt's fp8 alignment): k and n multiples of 16
    CHECK(g.k % 16 == 0);
    CHECK(g.n % 16 == 0);
    CHECK(names.insert({g.model, g.layer}).second);
  }
  CHECK_FALSE(s.gemm_dtypes.empty());
  CHECK(s.gemm_dtypes.front() == GemmDtype::bf16);  // bf16 first: cut last under --max-seconds
  for (const std::int64_t h : s.norm_hidden) {
    INFO("hidden " << h);
    CHECK_NOTHROW(ess::bench::norm_launch(1, h));
  }
  CHECK(s.gather_row_bytes == 656);
  CHECK(s.gather_row_bytes % 16 == 0);  // the UVA kernel moves 16-byte vectors
  CHECK(s.gather_rows.back() <= s.gather_pool_rows);
  CHECK(s.interference_rows.back() <= s.gather_pool_rows);
  CHECK(s.gather_pool_rows < (std::int64_t{1} << 31));  // int32 row indices on the device
  for (const int g : s.collective_gpus) CHECK(g >= 2);
  // every all-to-all chunk a whole number of bf16 on up to 8 GPUs
  for (const std::int64_t b : s.collective_bytes) CHECK(b % (2 * 8) == 0);
  CHECK(s.warmups >= 1);
  CHECK(s.repetitions.min >= 10);
}

}  // namespace

TEST_CASE("sweep: DeepSeek-V3.2-Exp GEMM shapes follow its config", "[kernels][sweep]") {
  // the fused q_a||kv_a the simulator and ess-runner issue: q_lora_rank 1536 + kv_lora_rank 512
  // + qk_rope_head_dim 64 = 2112, from hidden 7168
  CHECK(find("deepseek-v3.2-exp", "q_a_kv_a").n == 1536 + 512 + 64);
  CHECK(find("deepseek-v3.2-exp", "q_a_kv_a").k == 7168);
  // q_b: q_lora_rank 1536 -> 128 heads x (128 nope + 64 rope) = 24576
  CHECK(find("deepseek-v3.2-exp", "q_b").n == 128 * (128 + 64));
  CHECK(find("deepseek-v3.2-exp", "q_b").k == 1536);
  // wo: 128 heads x v_head_dim 128 = 16384 -> 7168
  CHECK(find("deepseek-v3.2-exp", "wo").k == 128 * 128);
  CHECK(find("deepseek-v3.2-exp", "wo").n == 7168);
  // fused gate+up of the dense MLP (18432) and of an expert (2048)
  CHECK(find("deepseek-v3.2-exp", "gate_up").n == 2 * 18432);
  CHECK(find("deepseek-v3.2-exp", "shared_gate_up").n == 2 * 2048);
  CHECK(find("deepseek-v3.2-exp", "shared_down").k == 2048);
  // indexer: 64 heads x 128 from q_lora_rank; one 128-wide key and 64 head weights from hidden
  CHECK(find("deepseek-v3.2-exp", "indexer_q").n == 64 * 128);
  CHECK(find("deepseek-v3.2-exp", "indexer_k_w").n == 128 + 64);
  CHECK(find("deepseek-v3.2-exp", "router").n == 256);
  CHECK(find("deepseek-v3.2-exp", "lm_head").n == 129280);
  CHECK(find("deepseek-v3.2-exp", "eh_proj").k == 2 * 7168);
  // q_a and kv_a apart are not what any decode step issues
  for (const GemmShape& g : ess::bench::model_gemm_shapes()) {
    CHECK_FALSE((g.n == 1536 && g.k == 7168));
    CHECK_FALSE((g.n == 576 && g.k == 7168));
  }
}

TEST_CASE("sweep: Llama GEMM shapes follow their configs", "[kernels][sweep]") {
  // Llama-2-7B: QKV 3 x 4096; gate+up 2 x 11008
  CHECK(find("llama-2-7b", "qkv").n == 3 * 4096);
  CHECK(find("llama-2-7b", "gate_up").n == 2 * 11008);
  CHECK(find("llama-2-7b", "down").k == 11008);
  CHECK(find("llama-2-7b", "lm_head").n == 32000);
  // Llama-3.1-70B: 64 query heads + 2 x 8 kv heads, x 128 = 10240; gate+up 2 x 28672
  CHECK(find("llama-3.1-70b", "qkv").n == (64 + 2 * 8) * 128);
  CHECK(find("llama-3.1-70b", "gate_up").n == 2 * 28672);
  CHECK(find("llama-3.1-70b", "down").k == 28672);
  CHECK(find("llama-3.1-70b", "lm_head").n == 128256);
  // 12 DeepSeek + 5 + 5 Llama
  CHECK(ess::bench::model_gemm_shapes().size() == 22);
}

TEST_CASE("sweep: a shapes file's shapes go first, built-in duplicates of (n, k) once", "[kernels][sweep]") {
  const std::vector<GemmShape> file = {{"runner", "q_a_kv_a", 2112, 7168}, {"runner", "new", 64, 128}};
  const std::vector<GemmShape> builtin = {{"a", "x", 32, 32}, {"a", "fused", 2112, 7168}, {"a", "y", 64, 64}};
  const std::vector<GemmShape> merged = ess::bench::shapes_first(file, builtin);
  REQUIRE(merged.size() == 4);
  CHECK(merged[0].model == "runner");
  CHECK(merged[0].layer == "q_a_kv_a");
  CHECK(merged[1].layer == "new");
  CHECK(merged[2].layer == "x");
  CHECK(merged[3].layer == "y");
  CHECK(ess::bench::shapes_first({}, builtin).size() == 3);
}

TEST_CASE("sweep: default and quick sweeps are well formed", "[kernels][sweep]") {
  SECTION("default") { check_well_formed(ess::bench::default_sweep()); }
  SECTION("quick") { check_well_formed(ess::bench::quick_sweep()); }
}

TEST_CASE("sweep: the default sweep covers the issue's ranges", "[kernels][sweep]") {
  const Sweep s = ess::bench::default_sweep();
  CHECK(s.gemm_m == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  CHECK(s.gemm_shapes.size() == ess::bench::model_gemm_shapes().size());
  CHECK(s.norm_tokens.front() == 1);
  CHECK(s.norm_tokens.back() == 4096);
  CHECK(s.norm_hidden == std::vector<std::int64_t>{512, 1536, 4096, 7168, 8192, 16384});
  // 1 KiB .. 1 GiB in powers of 4: 4^0 .. 4^10 KiB
  CHECK(s.copy_bytes.size() == 11);
  CHECK(s.copy_bytes.front() == 1024);
  CHECK(s.copy_bytes.back() == (std::int64_t{1} << 30));
  CHECK(s.gather_rows == std::vector<std::int64_t>{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536});
  // 1 MiB .. 1 GiB in powers of 2: 11 sizes
  CHECK(s.d2d_bytes.size() == 11);
  CHECK(s.d2d_bytes.front() == (std::int64_t{1} << 20));
  // the interference GEMM is DeepSeek's lm_head at 64 tokens
  CHECK(s.interference_gemm.n == find("deepseek-v3.2-exp", "lm_head").n);
  CHECK(s.interference_gemm.k == find("deepseek-v3.2-exp", "lm_head").k);
  CHECK(s.interference_gemm.m == 64);
}

TEST_CASE("sweep: the quick sweep is a subset of the default one", "[kernels][sweep]") {
  const Sweep d = ess::bench::default_sweep();
  const Sweep q = ess::bench::quick_sweep();
  const auto subset = [](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
    return std::includes(b.begin(), b.end(), a.begin(), a.end());
  };
  CHECK(subset(q.gemm_m, d.gemm_m));
  CHECK(subset(q.norm_tokens, d.norm_tokens));
  CHECK(subset(q.norm_hidden, d.norm_hidden));
  CHECK(subset(q.copy_bytes, d.copy_bytes));
  CHECK(subset(q.gather_rows, d.gather_rows));
  CHECK(subset(q.d2d_bytes, d.d2d_bytes));
  CHECK(q.repetitions.target_s < d.repetitions.target_s);
  CHECK(q.gemm_shapes.size() < d.gemm_shapes.size());
}

TEST_CASE("sweep: sample counts per kind", "[kernels][sweep]") {
  const Sweep d = ess::bench::default_sweep();
  SECTION("default on one GPU with fp8 and no NCCL") {
    const auto c = ess::bench::count_samples(d, 1, true, false);
    CHECK(c.gemm == 11 * 22 * 3);  // m values x shapes x {bf16, fp8, fp16} = 726
    CHECK(c.norm == 13 * 6 * 2);   // tokens 1..4096 x hidden x {rms, layer} = 156
    CHECK(c.copy == 11 * 3 * 2);   // sizes x {h2d, d2h, both} x {pinned, pageable} = 66
    CHECK(c.gather == 9 * 3 * 2);  // rows x {per_row, per_run, uva_kernel} x {h2d, d2h} = 54
    CHECK(c.gather_interference == 2);
    CHECK(c.d2d == 11);
    CHECK(c.p2p == 0);
    CHECK(c.allreduce == 0);
    CHECK(c.total() == 726 + 156 + 66 + 54 + 2 + 11);
  }
  SECTION("default on an A100 (no fp8)") {
    CHECK(ess::bench::count_samples(d, 1, false, false).gemm == 11 * 22 * 2);
  }
  SECTION("default on 8 GPUs with NCCL") {
    const auto c = ess::bench::count_samples(d, 8, true, true);
    CHECK(c.p2p == 2 * 11);        // 0->1 and 1->0, 11 sizes
    CHECK(c.allreduce == 3 * 11);  // 2, 4 and 8 GPUs, 11 sizes
    CHECK(c.alltoall == 3 * 11);
  }
  SECTION("default on 4 GPUs with NCCL: no 8-GPU communicator") {
    CHECK(ess::bench::count_samples(d, 4, true, true).allreduce == 2 * 11);
  }
  SECTION("quick on one GPU") {
    const auto c = ess::bench::count_samples(ess::bench::quick_sweep(), 1, true, false);
    CHECK(c.gemm == 4 * 4 * 3);
    CHECK(c.total() == 48 + 3 * 3 * 2 + 3 * 6 + 3 * 6 + 1 + 2);  // 105
  }
}

TEST_CASE("sweep: geometric progressions stop at the last value", "[kernels][sweep]") {
  CHECK(ess::bench::geometric(1, 8, 2) == std::vector<std::int64_t>{1, 2, 4, 8});
  CHECK(ess::bench::geometric(3, 10, 2) == std::vector<std::int64_t>{3, 6});  // 12 > 10
  CHECK(ess::bench::geometric(5, 5, 4) == std::vector<std::int64_t>{5});
  CHECK(ess::bench::geometric(1024, std::int64_t{1} << 30, 4).size() == 11);
  // no overflow near the top of int64
  CHECK(ess::bench::geometric(std::int64_t{1} << 61, std::int64_t{1} << 62, 2).size() == 2);
  CHECK_THROWS_AS(ess::bench::geometric(0, 8, 2), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::geometric(8, 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(ess::bench::geometric(1, 8, 1), std::invalid_argument);
}

TEST_CASE("sweep: peer copies use GPUs 0 and 1 both ways", "[kernels][sweep]") {
  CHECK(ess::bench::peer_pairs(1).empty());
  const auto pairs = ess::bench::peer_pairs(8);
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].src == 0);
  CHECK(pairs[0].dst == 1);
  CHECK(pairs[1].src == 1);
  CHECK(pairs[1].dst == 0);
  CHECK(ess::bench::to_string(ess::bench::GatherMethod::per_run) == "per_run");
  CHECK(ess::bench::to_string(GemmDtype::fp8) == "fp8");
}
