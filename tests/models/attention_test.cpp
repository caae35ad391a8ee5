#include "models/attention.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>

#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::Bound;
using ess::Bytes;
using ess::DType;
using ess::GqaShape;
using ess::IndexerShape;
using ess::KernelCost;
using ess::MlaShape;
using ess::TopkShape;
using ess::test::near;

// Test GPU rates:
//   hardware.kernels.indexer:      fp8 5e13 FLOP/s, HBM 5e11 B/s effective, 4 us, no ramps
//   hardware.kernels.attention:    bf16 4e13 FLOP/s, HBM 8e11 B/s effective, 3 us, no ramps
//   hardware.kernels.memory_bound: HBM 5e11 B/s effective, memory ramp 1e5 B, 1 us; top-k passes 3

namespace {

// DeepSeek-V3.2-Exp lightning indexer: 64 heads of 128, 132-byte keys.
IndexerShape indexer_shape(std::int64_t requests, std::int64_t queries, std::int64_t context) {
  return {.requests = requests,
          .queries_per_request = queries,
          .heads = 64,
          .head_dim = 128,
          .context = context,
          .key_bytes_per_token = Bytes(132.0)};
}

// DeepSeek MLA decode: 128 heads, qk 576, v 512, 656-byte latent entries.
MlaShape mla_shape(std::int64_t requests, std::int64_t queries, std::int64_t heads = 128) {
  return {.requests = requests,
          .queries_per_request = queries,
          .heads = heads,
          .qk_dim = 576,
          .v_dim = 512,
          .entry_bytes = Bytes(656.0)};
}

// Llama-3-70B-like GQA: 64 query heads, 8 KV heads of 128.
GqaShape gqa_shape(std::int64_t context, DType kv = DType::bf16) {
  return {.requests = 4,
          .queries_per_request = 1,
          .heads = 64,
          .kv_heads = 8,
          .head_dim = 128,
          .context = context,
          .kv_dtype = kv,
          .compute_dtype = DType::bf16};
}

}  // namespace

// ---- lightning indexer -------------------------------------------------------------------------

TEST_CASE("indexer: scoring 32K tokens for 8 query tokens is compute-bound on fp8", "[attention]") {
  const KernelCost c = ess::indexer_scoring(indexer_shape(4, 2, 32768), ess::test::test_hardware());
  // q = 4*2 = 8; flops = 2*8*64*128*32768 = 4,294,967,296; compute = / 5e13 = 85.89934592 us
  CHECK(c.flops.value() == near(4294967296.0));
  CHECK(c.compute.value() == near(8.589934592e-5));
  // bytes = 4*32768*132 (keys) + 8*64*128*1 (fp8 q) + 8*32768*4 (fp32 logits)
  //       = 17,301,504 + 65,536 + 1,048,576 = 18,415,616 B; memory = / 5e11 = 36.831232 us
  CHECK(c.bytes.value() == near(18415616.0));
  CHECK(c.memory.value() == near(3.6831232e-5));
  // time = 85.89934592 + 4 = 89.89934592 us
  CHECK(c.time.value() == near(8.989934592e-5));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("indexer: the query tokens of a request share one read of its keys", "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  // MTP 1: 4*32768*132 + 4*64*128 + 4*32768*4 = 17,301,504 + 32,768 + 524,288 = 17,858,560 B
  CHECK(ess::indexer_scoring(indexer_shape(4, 1, 32768), hw).bytes.value() == near(17858560.0));
  // MTP 2 adds only queries and logits (32,768 + 524,288 = 557,056 B), not a second key read:
  // 17,858,560 + 557,056 = 18,415,616 B
  CHECK(ess::indexer_scoring(indexer_shape(4, 2, 32768), hw).bytes.value() == near(18415616.0));
}

TEST_CASE("indexer needs fp8 tensor cores", "[attention][errors]") {
  CHECK_THROWS_MATCHES(
      ess::indexer_scoring(indexer_shape(1, 1, 1024), ess::test::test_hardware_without_fp8()),
      ess::UnsupportedError,
      Catch::Message(
          "NoFp8GPU has no fp8 peak compute (hardware.gpu.peak_compute.fp8 is not set)"));
}

TEST_CASE("indexer rejects invalid shapes", "[attention][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  const auto fails_with = [&hw](const IndexerShape& s, const std::string& message) {
    CHECK_THROWS_MATCHES(ess::indexer_scoring(s, hw), ess::InputError,
                         Catch::Message(message));
  };
  IndexerShape s = indexer_shape(1, 1, 1024);
  s.requests = 0;
  fails_with(s, "indexer_scoring: requests must be >= 1 (got 0)");
  s = indexer_shape(1, 1, 1024);
  s.queries_per_request = 0;
  fails_with(s, "indexer_scoring: queries_per_request must be >= 1 (got 0)");
  s = indexer_shape(1, 1, 1024);
  s.heads = -2;
  fails_with(s, "indexer_scoring: heads must be >= 1 (got -2)");
  s = indexer_shape(1, 1, 1024);
  s.head_dim = 0;
  fails_with(s, "indexer_scoring: head_dim must be >= 1 (got 0)");
  s = indexer_shape(1, 1, 0);
  fails_with(s, "indexer_scoring: context must be >= 1 (got 0)");
  s = indexer_shape(1, 1, 1024);
  s.key_bytes_per_token = Bytes(0.0);
  fails_with(s, "indexer_scoring: key_bytes_per_token must be > 0 B (got 0 B)");
}

// ---- top-k -------------------------------------------------------------------------------------

TEST_CASE("topk: reads the logits once per pass and writes k int32 indices", "[attention]") {
  const KernelCost c =
      ess::topk({.rows = 8, .candidates = 32768, .k = 2048}, ess::test::test_hardware());
  // bytes = 3*8*32768*4 + 8*2048*4 = 3,145,728 + 65,536 = 3,211,264 B
  // memory = (3,211,264 + 1e5) / 5e11 = 6.622528 us; time = 7.622528 us
  CHECK(c.bytes.value() == near(3211264.0));
  CHECK(c.memory.value() == near(6.622528e-6));
  CHECK(c.time.value() == near(7.622528e-6));
  CHECK(c.flops.value() == 0.0);
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("topk: k above the candidates selects every candidate", "[attention]") {
  const KernelCost c =
      ess::topk({.rows = 8, .candidates = 1000, .k = 2048}, ess::test::test_hardware());
  // bytes = 3*8*1000*4 + 8*min(2048, 1000)*4 = 96,000 + 32,000 = 128,000 B
  // memory = (128,000 + 1e5) / 5e11 = 0.456 us; time = 1.456 us
  CHECK(c.bytes.value() == near(128000.0));
  CHECK(c.time.value() == near(1.456e-6));
}

TEST_CASE("topk rejects invalid shapes and passes", "[attention][errors]") {
  ess::Hardware hw = ess::test::test_hardware();
  CHECK_THROWS_MATCHES(ess::topk({.rows = 0, .candidates = 1, .k = 1}, hw), ess::InputError,
                       Catch::Message("topk: rows must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::topk({.rows = 1, .candidates = 0, .k = 1}, hw), ess::InputError,
                       Catch::Message("topk: candidates must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::topk({.rows = 1, .candidates = 1, .k = -3}, hw), ess::InputError,
                       Catch::Message("topk: k must be >= 1 (got -3)"));
  hw.kernels.topk_passes = 0.5;
  CHECK_THROWS_MATCHES(ess::topk({.rows = 1, .candidates = 1, .k = 1}, hw), ess::InputError,
                       Catch::Message("hardware.kernels.topk_passes must be >= 1 (got 0.5)"));
}

// ---- MLA ---------------------------------------------------------------------------------------

TEST_CASE("sparse MLA: each query token reads its own selected entries", "[attention]") {
  const KernelCost c = ess::sparse_mla_attention(mla_shape(4, 2), 2048, ess::test::test_hardware());
  // q = 8; flops = 2*8*128*2048*(576+512) = 4,563,402,752; compute = / 4e13 = 114.0850688 us
  CHECK(c.flops.value() == near(4563402752.0));
  CHECK(c.compute.value() == near(1.140850688e-4));
  // bytes = 8*2048*656 + 8*128*576*2 + 8*128*512*2 = 10,747,904 + 1,179,648 + 1,048,576
  //       = 12,976,128 B; memory = / 8e11 = 16.22016 us
  CHECK(c.bytes.value() == near(12976128.0));
  CHECK(c.memory.value() == near(1.622016e-5));
  // time = 114.0850688 + 3 = 117.0850688 us
  CHECK(c.time.value() == near(1.170850688e-4));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("sparse MLA with few heads is memory-bound", "[attention]") {
  const KernelCost c =
      ess::sparse_mla_attention(mla_shape(1, 1, 8), 2048, ess::test::test_hardware());
  // flops = 2*1*8*2048*1088 = 35,651,584; compute = / 4e13 = 0.8912896 us
  // bytes = 2048*656 + 8*576*2 + 8*512*2 = 1,343,488 + 9,216 + 8,192 = 1,360,896 B
  // memory = / 8e11 = 1.70112 us; time = 4.70112 us
  CHECK(c.compute.value() == near(8.912896e-7));
  CHECK(c.bytes.value() == near(1360896.0));
  CHECK(c.time.value() == near(4.70112e-6));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("dense MLA: the query tokens of a request share one read of the cache", "[attention]") {
  const KernelCost c = ess::dense_mla_attention(mla_shape(4, 2), 32768, ess::test::test_hardware());
  // flops = 2*8*128*32768*1088 = 73,014,444,032; compute = / 4e13 = 1.8253611008 ms
  CHECK(c.flops.value() == near(73014444032.0));
  CHECK(c.compute.value() == near(1.8253611008e-3));
  // bytes = 4*32768*656 + 8*128*576*2 + 8*128*512*2 = 85,983,232 + 2,228,224 = 88,211,456 B
  // memory = / 8e11 = 110.26432 us; time = 1.8253611008 ms + 3 us
  CHECK(c.bytes.value() == near(88211456.0));
  CHECK(c.memory.value() == near(1.1026432e-4));
  CHECK(c.time.value() == near(1.8283611008e-3));
  CHECK(c.bound == Bound::compute);
}

TEST_CASE("sparse MLA over every entry equals dense MLA with one query token per request",
          "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  const KernelCost sparse = ess::sparse_mla_attention(mla_shape(4, 1), 2048, hw);
  const KernelCost dense = ess::dense_mla_attention(mla_shape(4, 1), 2048, hw);
  // flops = 2*4*128*2048*1088 = 2,281,701,376; compute = / 4e13 = 57.0425344 us; time = 60.0425344
  // us bytes = 4*2048*656 + 4*128*576*2 + 4*128*512*2 = 5,373,952 + 589,824 + 524,288 = 6,488,064 B
  for (const KernelCost& c : {sparse, dense}) {
    CHECK(c.flops.value() == near(2281701376.0));
    CHECK(c.bytes.value() == near(6488064.0));
    CHECK(c.time.value() == near(6.00425344e-5));
  }
}

TEST_CASE("MTP query tokens share cache reads in dense MLA but not in sparse MLA", "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  // 2 query tokens per request, 2048 entries each:
  // sparse: 8*2048*656 + 2,228,224 = 12,976,128 B; dense: 4*2048*656 + 2,228,224 = 7,602,176 B
  CHECK(ess::sparse_mla_attention(mla_shape(4, 2), 2048, hw).bytes.value() == near(12976128.0));
  CHECK(ess::dense_mla_attention(mla_shape(4, 2), 2048, hw).bytes.value() == near(7602176.0));
}

// ---- the kernel: 64-row tiles and the MMA's input type ------------------------------------------
TEST_CASE("padded_rows rounds up to whole tiles", "[attention]") {
  CHECK(ess::padded_rows(16, 64) == 64);
  CHECK(ess::padded_rows(64, 64) == 64);
  CHECK(ess::padded_rows(65, 64) == 128);
  CHECK(ess::padded_rows(80, 1) == 80);
  CHECK_THROWS_AS(ess::padded_rows(0, 64), ess::InternalError);
  CHECK_THROWS_AS(ess::padded_rows(16, 0), ess::InternalError);
}

TEST_CASE("dense MLA in 64-row tiles: 16 heads cost as 64 until s_q x h_q passes 64", "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  // FlashMLA packs a request's s_q x h_q query rows into 64-row tiles (the H20 runs of its dense
  // test: h_q 16 at s_q 1..4 take one time, s_q 5 twice that).
  MlaShape s = mla_shape(128, 1, 16);
  s.row_tile = 64;
  // executed flops = 2 * 128 * 64 * 4096 * 1088 = 73,014,444,032 for every s_q in 1..4
  for (std::int64_t sq = 1; sq <= 4; ++sq) {
    s.queries_per_request = sq;
    CHECK(ess::dense_mla_attention(s, 4096, hw).flops.value() == near(73014444032.0));
  }
  s.queries_per_request = 5;  // 80 rows: two tiles
  CHECK(ess::dense_mla_attention(s, 4096, hw).flops.value() == near(2.0 * 73014444032.0));
  // Without tiles the same shape counts its 80 useful rows only.
  s.row_tile = 1;
  CHECK(ess::dense_mla_attention(s, 4096, hw).flops.value() == near(73014444032.0 * 80.0 / 64.0));
}

TEST_CASE("sparse MLA in 64-row tiles pads each query token's heads", "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  // TP8 of 128 heads leaves 16 per GPU: each query token still runs a 64-row tile.
  MlaShape s = mla_shape(4, 2, 16);
  s.row_tile = 64;
  // executed flops = 2 * (4 * 2) * 64 * 2048 * 1088 = 2,281,701,376
  const KernelCost c = ess::sparse_mla_attention(s, 2048, hw);
  CHECK(c.flops.value() == near(2281701376.0));
  // bytes are the useful ones: 8 * 2048 * 656 + 8 * 16 * (576 + 512) * 2
  CHECK(c.bytes.value() == near(8.0 * 2048 * 656 + 8.0 * 16 * 1088 * 2));
  s.heads = 128;  // two full tiles: no padding
  CHECK(ess::sparse_mla_attention(s, 2048, hw).flops.value() == near(2.0 * 8 * 128 * 2048 * 1088));
}

TEST_CASE("MLA with FP8 MMAs is priced at the FP8 peak", "[attention]") {
  const ess::Hardware hw = ess::test::test_hardware();
  MlaShape s = mla_shape(4, 2);
  const KernelCost bf16 = ess::dense_mla_attention(s, 32768, hw);
  s.compute_dtype = DType::fp8;
  const KernelCost fp8 = ess::dense_mla_attention(s, 32768, hw);
  const double ratio = hw.gpu.peak_compute.fp8->value() / hw.gpu.peak_compute.bf16->value();
  CHECK(fp8.flops.value() == near(bf16.flops.value()));
  CHECK(fp8.compute.value() == near(bf16.compute.value() / ratio));
  s.compute_dtype = DType::fp16;
  CHECK_THROWS_WITH(ess::dense_mla_attention(s, 32768, hw), Catch::Contains("compute_dtype must be bf16 or fp8"));
}

TEST_CASE("MLA rejects invalid shapes", "[attention][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  MlaShape s = mla_shape(0, 1);
  CHECK_THROWS_MATCHES(ess::sparse_mla_attention(s, 2048, hw), ess::InputError,
                       Catch::Message("sparse_mla_attention: requests must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::dense_mla_attention(s, 2048, hw), ess::InputError,
                       Catch::Message("dense_mla_attention: requests must be >= 1 (got 0)"));
  s = mla_shape(1, 0);
  CHECK_THROWS_MATCHES(
      ess::sparse_mla_attention(s, 2048, hw), ess::InputError,
      Catch::Message("sparse_mla_attention: queries_per_request must be >= 1 (got 0)"));
  s = mla_shape(1, 1, 0);
  CHECK_THROWS_MATCHES(ess::sparse_mla_attention(s, 2048, hw), ess::InputError,
                       Catch::Message("sparse_mla_attention: heads must be >= 1 (got 0)"));
  s = mla_shape(1, 1);
  s.qk_dim = 0;
  CHECK_THROWS_MATCHES(ess::dense_mla_attention(s, 2048, hw), ess::InputError,
                       Catch::Message("dense_mla_attention: qk_dim must be >= 1 (got 0)"));
  s = mla_shape(1, 1);
  s.v_dim = -1;
  CHECK_THROWS_MATCHES(ess::dense_mla_attention(s, 2048, hw), ess::InputError,
                       Catch::Message("dense_mla_attention: v_dim must be >= 1 (got -1)"));
  s = mla_shape(1, 1);
  s.entry_bytes = Bytes(-656.0);
  CHECK_THROWS_MATCHES(
      ess::sparse_mla_attention(s, 2048, hw), ess::InputError,
      Catch::Message("sparse_mla_attention: entry_bytes must be > 0 B (got -656 B)"));
  CHECK_THROWS_MATCHES(
      ess::sparse_mla_attention(mla_shape(1, 1), 0, hw), ess::InputError,
      Catch::Message("sparse_mla_attention: selected_entries must be >= 1 (got 0)"));
  CHECK_THROWS_MATCHES(ess::dense_mla_attention(mla_shape(1, 1), 0, hw), ess::InputError,
                       Catch::Message("dense_mla_attention: context must be >= 1 (got 0)"));
}

TEST_CASE("MLA rejects invalid hardware.kernels.attention and sparse_attention", "[attention][errors]") {
  ess::Hardware hw = ess::test::test_hardware();
  hw.kernels.attention.memory_efficiency = 0.0;
  CHECK_THROWS_MATCHES(
      ess::dense_mla_attention(mla_shape(1, 1), 2048, hw), ess::InputError,
      Catch::Message("hardware.kernels.attention.memory_efficiency must be in (0, 1] (got 0)"));
  CHECK_NOTHROW(ess::sparse_mla_attention(mla_shape(1, 1), 2048, hw));  // its own class
  hw = ess::test::test_hardware();
  hw.kernels.sparse_attention.memory_efficiency = 0.0;
  CHECK_THROWS_MATCHES(
      ess::sparse_mla_attention(mla_shape(1, 1), 2048, hw), ess::InputError,
      Catch::Message("hardware.kernels.sparse_attention.memory_efficiency must be in (0, 1] (got 0)"));
}

TEST_CASE("sparse MLA is priced with kernels.sparse_attention, dense MLA with kernels.attention", "[attention]") {
  ess::Hardware hw = ess::test::test_hardware();
  // FlashMLA on H800: sparse FP8 410 TFLOP/s vs dense 660, so the sparse class runs at its own rate.
  hw.kernels.sparse_attention.compute_efficiency = 0.2;  // half of attention's 0.4
  hw.kernels.sparse_attention.kernel_overhead = ess::Seconds(5e-6);
  // 64 requests x 2 query tokens x 128 heads x 2048 entries: FLOP = 2*128*128*2048*1088 = 7.3014e13,
  // compute-bound. Sparse: 7.3014444e13 / (1e14 x 0.2) + 5 us; dense with context 2048 and the same
  // FLOP: / (1e14 x 0.4) + 3 us.
  const ess::MlaShape s = mla_shape(64, 2);
  const KernelCost sparse = ess::sparse_mla_attention(s, 2048, hw);
  const KernelCost dense = ess::dense_mla_attention(s, 2048, hw);
  const double flops = 2.0 * 128 * 128 * 2048 * 1088;
  CHECK(sparse.flops.value() == near(flops));
  CHECK(sparse.compute.value() == near(flops / 2e13));
  CHECK(sparse.time.value() == near(flops / 2e13 + 5e-6));
  CHECK(dense.compute.value() == near(flops / 4e13));
  CHECK(dense.time.value() == near(flops / 4e13 + 3e-6));
}

// ---- GQA ---------------------------------------------------------------------------------------

TEST_CASE("GQA decode reads K and V once per request and is memory-bound", "[attention]") {
  const KernelCost c = ess::gqa_attention(gqa_shape(8192), ess::test::test_hardware());
  // q = 4; flops = 4*4*64*128*8192 = 1,073,741,824; compute = / 4e13 = 26.8435456 us
  CHECK(c.flops.value() == near(1073741824.0));
  CHECK(c.compute.value() == near(2.68435456e-5));
  // bytes = 4*2*8*128*8192*2 + 2*4*64*128*2 = 134,217,728 + 131,072 = 134,348,800 B
  // memory = / 8e11 = 167.936 us; time = 170.936 us
  CHECK(c.bytes.value() == near(134348800.0));
  CHECK(c.memory.value() == near(1.67936e-4));
  CHECK(c.time.value() == near(1.70936e-4));
  CHECK(c.bound == Bound::memory);
}

TEST_CASE("GQA with an fp8 KV cache halves the cache bytes", "[attention]") {
  const KernelCost c = ess::gqa_attention(gqa_shape(8192, DType::fp8), ess::test::test_hardware());
  // bytes = 4*2*8*128*8192*1 + 131,072 = 67,108,864 + 131,072 = 67,239,936 B
  // memory = / 8e11 = 84.04992 us; time = 87.04992 us
  CHECK(c.bytes.value() == near(67239936.0));
  CHECK(c.time.value() == near(8.704992e-5));
}

TEST_CASE("GQA requires heads to be a multiple of kv_heads", "[attention][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  GqaShape s = gqa_shape(8192);
  s.kv_heads = 6;
  CHECK_THROWS_MATCHES(
      ess::gqa_attention(s, hw), ess::InputError,
      Catch::Message("gqa_attention: heads (64) must be a multiple of kv_heads (6)"));
  s = gqa_shape(8192);
  s.kv_heads = 0;
  CHECK_THROWS_MATCHES(ess::gqa_attention(s, hw), ess::InputError,
                       Catch::Message("gqa_attention: kv_heads must be >= 1 (got 0)"));
}

TEST_CASE("GQA rejects other invalid shapes and unsupported dtypes", "[attention][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  const auto fails_with = [&hw](const GqaShape& s, const std::string& message) {
    CHECK_THROWS_MATCHES(ess::gqa_attention(s, hw), ess::InputError, Catch::Message(message));
  };
  GqaShape s = gqa_shape(8192);
  s.requests = 0;
  fails_with(s, "gqa_attention: requests must be >= 1 (got 0)");
  s = gqa_shape(8192);
  s.queries_per_request = 0;
  fails_with(s, "gqa_attention: queries_per_request must be >= 1 (got 0)");
  s = gqa_shape(8192);
  s.heads = 0;
  fails_with(s, "gqa_attention: heads must be >= 1 (got 0)");
  s = gqa_shape(8192);
  s.head_dim = 0;
  fails_with(s, "gqa_attention: head_dim must be >= 1 (got 0)");
  fails_with(gqa_shape(0), "gqa_attention: context must be >= 1 (got 0)");

  s = gqa_shape(8192);
  s.compute_dtype = DType::fp8;
  CHECK_THROWS_AS(ess::gqa_attention(s, ess::test::test_hardware_without_fp8()),
                  ess::UnsupportedError);
}

// ---- properties --------------------------------------------------------------------------------

TEST_CASE("attention: time never decreases with context or selected entries",
          "[attention][property]") {
  const ess::Hardware hw = ess::test::test_hardware();
  double indexer = 0.0;
  double topk = 0.0;
  double sparse = 0.0;
  double dense = 0.0;
  double gqa = 0.0;
  for (std::int64_t n = 1; n <= 1'048'576; n += 1 + n / 3) {
    const double t_indexer = ess::indexer_scoring(indexer_shape(4, 2, n), hw).time.value();
    const double t_topk = ess::topk({.rows = 8, .candidates = n, .k = 2048}, hw).time.value();
    const double t_sparse = ess::sparse_mla_attention(mla_shape(4, 2), n, hw).time.value();
    const double t_dense = ess::dense_mla_attention(mla_shape(4, 2), n, hw).time.value();
    const double t_gqa = ess::gqa_attention(gqa_shape(n), hw).time.value();
    CHECK(t_indexer >= indexer);
    CHECK(t_topk >= topk);
    CHECK(t_sparse >= sparse);
    CHECK(t_dense >= dense);
    CHECK(t_gqa >= gqa);
    indexer = t_indexer;
    topk = t_topk;
    sparse = t_sparse;
    dense = t_dense;
    gqa = t_gqa;
  }
}

TEST_CASE("attention: time never decreases with requests", "[attention][property]") {
  const ess::Hardware hw = ess::test::test_hardware();
  double previous_sparse = 0.0;
  double previous_dense = 0.0;
  for (std::int64_t r = 1; r <= 1024; r += 1 + r / 4) {
    const double t_sparse = ess::sparse_mla_attention(mla_shape(r, 2), 2048, hw).time.value();
    const double t_dense = ess::dense_mla_attention(mla_shape(r, 2), 32768, hw).time.value();
    CHECK(t_sparse >= previous_sparse);
    CHECK(t_dense >= previous_dense);
    previous_sparse = t_sparse;
    previous_dense = t_dense;
  }
}

TEST_CASE("prefill attention: each query row pays row_keys keys beyond its causal ones, on its own kernel class",
          "[attention][prefill]") {
  ess::Hardware hw = ess::test::test_hardware();
  hw.kernels.prefill_attention = {.compute_efficiency = 0.5,
                                  .compute_ramp = ess::Flops(0.0),
                                  .memory_efficiency = 0.8,
                                  .memory_ramp = Bytes(0.0),
                                  .kernel_overhead = ess::Seconds(2e-6)};
  // One 1,024-token prompt, 16 heads of 128 (q, k, v): 524,800 causal key pairs.
  ess::PrefillAttentionShape s{1024, 1024.0 * 1025.0 / 2.0, 1024, 16, 16, 128, 128, DType::bf16};
  hw.kernels.prefill_attention_row_keys = 0.0;
  const KernelCost plain = ess::prefill_attention(s, hw);
  CHECK(plain.flops.value() == near(2.0 * 16 * (1024.0 * 1025.0 / 2.0) * 256));
  CHECK(plain.params == ess::ParamSet::prefill_attention);
  hw.kernels.prefill_attention_row_keys = 300.0;
  const KernelCost padded = ess::prefill_attention(s, hw);
  CHECK(padded.flops.value() == near(2.0 * 16 * (1024.0 * 1025.0 / 2.0 + 1024.0 * 300.0) * 256));
  CHECK(padded.bound == Bound::compute);
  const double peak = hw.gpu.peak_compute.at(DType::bf16, hw.gpu.kind).value();
  CHECK(padded.time.value() == near(padded.flops.value() / (peak * 0.5) + 2e-6));
  // The decode attention class does not price it.
  hw.kernels.attention.compute_efficiency = 0.01;
  CHECK(ess::prefill_attention(s, hw).time.value() == near(padded.time.value()));
  hw.kernels.prefill_attention_row_keys = -1.0;
  CHECK_THROWS_WITH(ess::prefill_attention(s, hw), Catch::Contains("prefill_attention.row_keys must be >= 0"));
}
