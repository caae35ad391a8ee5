// GPU memory capacity: each line worked out by hand from the model configuration.
#include <catch2/catch.hpp>

#include "sim/memory/memory_plan.h"
#include "tests/engine/test_scenarios.h"

namespace {

ess::Scenario bundled_scenario(const std::string& name, const std::vector<std::string>& sets = {}) {
  std::vector<ess::Override> overrides;
  for (const auto& s : sets) overrides.push_back(ess::parse_override(s));
  return ess::load_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/" + name + ".json", overrides);
}

}  // namespace

TEST_CASE("Llama-2-7B weights are its 6,738,415,616 parameters in fp16") {
  // Per layer: qkv 4096 x 12288 + o 4096 x 4096 + gate/up/down 3 x 4096 x 11008 + 2 norms of 4096
  // = 202,383,360; x 32 layers + embedding and LM head 2 x 32000 x 4096 + final norm 4096
  // = 6,738,415,616 (the parameter count Hugging Face reports). x 2 bytes:
  const auto s = bundled_scenario("llama2-7b-a100-decode");
  CHECK(ess::weight_bytes_per_gpu(ess::decode_run(s)).value() == 13476831232.0);
}

TEST_CASE("Llama-2-7B KV cache: 2 x 32 heads x 128 x 2 B per token per layer") {
  // 512 context + 16 steps x depth 1 = 528 tokens; 32 layers x 528 x 16,384 B = 276,824,064 B.
  const auto s = bundled_scenario("llama2-7b-a100-decode");
  CHECK(ess::cache_tokens(ess::decode_run(s)) == 528);
  const auto b = ess::plan_memory(ess::decode_run(s), 1);
  CHECK(b.line("kv_cache").value() == 276824064.0);
}

TEST_CASE("DeepSeek-V3.2-Exp on 8 x H200 with EP8 holds 103.48 GB of weights per GPU") {
  // Per layer (fp8 with one fp32 scale per 128 x 128 block; bf16 norms):
  //   MLA attention 187,169,504 B: q_a/kv_a 7168 x 2112, q_b 1536 x 24576, kv_b 512 x 32768,
  //     wo 16384 x 7168, norms; indexer 14,421,728 B: wq_b 1536 x 8192, wk 7168 x 128,
  //     weights_proj 7168 x 64 bf16, k_norm.
  //   MoE 1,457,365,504 B: router 7168 x 256 bf16, 1 shared + 256/8 = 32 routed experts of
  //     44,050,944 B (gate, up 7168 x 2048 and down 2048 x 7168), norm.
  //   dense MLP 396,472,832 B (first 3 layers): 7168 x 18432 x 3.
  // 61 layers + 1 MTP module (a MoE layer, plus 102,814,208 B of eh_proj and norms), embedding and
  // LM head 2 x 129280 x 7168 x 2 B: 62 x 201,591,232 + 3 x 396,472,832 + 59 x 1,457,365,504
  // + 102,814,208 + 3,706,730,496 = 103,482,184,320 B.
  const auto s = bundled_scenario("dsv32-baseline-32k");
  CHECK(ess::weight_bytes_per_gpu(ess::decode_run(s)).value() == 103482184320.0);
}

TEST_CASE("the largest DeepSeek-V3.2-Exp batch at 32K on an H200 is 18 requests per GPU") {
  // HBM 143,771 MiB = 150,754,820,096 B; reserve 10% = 15,075,482,009.6; runtime 2 GiB;
  // weights 103,482,184,320 -> 30,049,670,118 B for caches and activations.
  // One request caches 32768 + 16 x 2 = 32,800 tokens x 62 layers x (656 + 132) B = 1,602,489,600 B.
  // 18 requests: 28,844,812,800 B + activations (tens of MB) fits; 19: 30,447,302,400 does not.
  const auto s = bundled_scenario("dsv32-baseline-32k");
  CHECK(ess::resolve_batch(ess::decode_run(s)) == 18);
  const auto b = ess::plan_memory(ess::decode_run(s), 18);
  CHECK(b.line("latent_cache").value() == 18.0 * 32800 * 62 * 656);
  CHECK(b.line("indexer_cache").value() == 18.0 * 32800 * 62 * 132);
  CHECK(b.fits());
  CHECK_FALSE(ess::plan_memory(ess::decode_run(s), 19).fits());
}

TEST_CASE("the largest DeepSeek-V3.2-Exp batch at 128K on an H200 is 4 requests per GPU") {
  // One request: (131072 + 32) x 62 x 788 B = 6,405,409,088 B; 4 of them 25.6 GB fit in the
  // 30.05 GB left, 5 (32.0 GB) do not.
  const auto s = bundled_scenario("dsv32-baseline-128k");
  CHECK(ess::resolve_batch(ess::decode_run(s)) == 4);
}

TEST_CASE("the memory lines and the free memory add up to the HBM capacity") {
  for (const char* name : {"dsv32-baseline-32k", "dsv32-baseline-128k", "llama2-7b-a100-decode"}) {
    const auto s = bundled_scenario(name);
    const auto b = ess::plan_memory(ess::decode_run(s), ess::resolve_batch(ess::decode_run(s)));
    ess::Bytes sum = b.free();
    for (const auto& l : b.lines) {
      CHECK(l.bytes.value() >= 0.0);
      sum += l.bytes;
    }
    CHECK(sum.value() == Approx(b.capacity.value()).epsilon(1e-12));
    CHECK(b.line("reserve").value() == Approx(0.1 * b.capacity.value()));
  }
}

TEST_CASE("memory grows with the batch, and a batch that does not fit is an error with the budget") {
  const auto s = bundled_scenario("dsv32-baseline-32k", {"workload.batch_per_gpu=64"});
  CHECK(ess::plan_memory(ess::decode_run(s), 2).used() > ess::plan_memory(ess::decode_run(s), 1).used());
  CHECK_THROWS_AS(ess::resolve_batch(ess::decode_run(s)), ess::CapacityError);
  CHECK_THROWS_WITH(ess::resolve_batch(ess::decode_run(s)), Catch::Contains("batch_per_gpu 64 does not fit") &&
                                               Catch::Contains("latent_cache") && Catch::Contains("does not fit)"));
}

TEST_CASE("a model whose weights do not fit reports that not even one request fits") {
  const auto s = bundled_scenario("dsv32-baseline-32k", {"parallelism.expert_parallel=1"});
  CHECK_THROWS_WITH(ess::resolve_batch(ess::decode_run(s)), Catch::Contains("not even one request") && Catch::Contains("weights"));
}

TEST_CASE("MLA's latent cache is not split by tensor parallelism, GQA's KV heads are") {
  using ess::test::load;
  auto doc = nlohmann::json{{"model", ess::test::one_layer_model(false)},
                            {"hardware", ess::test::overhead_only_hardware(2)},
                            {"workload", {{"batch_per_gpu", 1}, {"context_length", 1000}, {"decode_steps", 1}}}};
  const auto dp = load(doc);
  doc["parallelism"] = {{"attention_dp", 1}, {"tensor_parallel", 2}};
  const auto tp = load(doc);
  // 1001 tokens x 1 layer x 2 x 8 kv heads x 128 x 2 B = 4,100,096 B; under TP2 each GPU holds 4 heads.
  CHECK(ess::kv_cache_bytes_per_request(ess::decode_run(dp), 1001).value() == 4100096.0);
  CHECK(ess::kv_cache_bytes_per_request(ess::decode_run(tp), 1001).value() == 2050048.0);
}

TEST_CASE("memory protection: above 90% of a socket's memory, requests stay GPU-only") {
  // dsv32-ess-128k with the DGX's 1 TB per socket instead of the scenario's 2 TB: one request
  // caches (131072 + 8 steps x 2) = 131,088 tokens x 62 layers x 656 B = 5,331,611,136 B in host
  // memory; 90% of 1 TB holds floor(9e11 / 5,331,611,136) = 168 of them per socket, shared by 4
  // GPUs: 42 per GPU. Of a batch of 54, 12 per GPU stay GPU-only.
  const auto s = bundled_scenario("dsv32-ess-128k", {"hardware.cpu.dram_capacity_per_socket=1TB"});
  const auto p = ess::place_requests(ess::decode_run(s), 54);
  CHECK(p.offloaded == 42);
  CHECK(p.fallback == 12);
  CHECK(p.host_latent_per_socket.value() == 42.0 * 4 * 5331611136.0);
  // Their whole latent caches then land in HBM, and the batch no longer fits.
  const auto b = ess::plan_memory(ess::decode_run(s), 54);
  CHECK(b.line("latent_cache").value() == 12.0 * 5331611136.0);
  CHECK_FALSE(b.fits());
  CHECK_THROWS_WITH(ess::resolve_batch(ess::decode_run(s)), Catch::Contains("GPU-only requests"));
}

TEST_CASE("offload keeps a pool per request and layer on the GPU and the whole indexer cache") {
  // dsv32-ess-32k: pool 0.21 x (32768 + 16) = ceil(6884.64) = 6,885 entries x 62 layers x 656 B
  // per request; 160 requests: 44,800,372,800 B. The indexer cache stays whole: 160 x 32,784 x 62
  // x 132 B = 42,926,426,880 B.
  const auto s = bundled_scenario("dsv32-ess-32k");
  const auto b = ess::plan_memory(ess::decode_run(s), 160);
  CHECK(b.placement.pool_entries == 6885);
  CHECK(b.placement.fallback == 0);
  CHECK(b.line("latent_pool").value() == 160.0 * 6885 * 62 * 656);
  CHECK(b.line("indexer_cache").value() == 160.0 * 32784 * 62 * 132);
  CHECK(b.fits());
}

TEST_CASE("with an NVMe tier, what host memory cannot hold spills to NVMe instead of HBM") {
  const auto s = bundled_scenario("dsv32-ess-128k", {"hardware.cpu.dram_capacity_per_socket=1TB",
                                            "cache.nvme.capacity=8TB", "cache.nvme.bandwidth=12GB/s",
                                            "cache.nvme.latency=80us"});
  const auto p = ess::place_requests(ess::decode_run(s), 54);
  CHECK(p.fallback == 0);
  CHECK(p.offloaded == 54);
  // Wanted per socket 54 x 4 x 5,331,611,136 = 1,151,628,005,376 B; host keeps 9e11, the rest
  // (251,628,005,376 B per socket, x 2 sockets) goes to NVMe.
  CHECK(p.host_latent_per_socket.value() == 9e11);
  CHECK(p.nvme_latent_per_node.value() == Approx(2 * 251628005376.0));
  CHECK(p.cold_fraction == Approx(251628005376.0 / 1151628005376.0));
}

TEST_CASE("a prefill chunk's activations join the step's: its tokens through every buffer, its indexer logits") {
  // DeepSeek-V3.2-Exp, tp 1, bf16 activations, a chunk of 4096 tokens after 16,384 cached:
  //   hidden buffers 4096 x (6 x 7168 + 2 x 65536 (the widest: 128 heads x kv_lora 512)) x 2 B
  //     = 1,426,063,360
  //   indexer 4096 x (20,480 keys + 2048 top-k) x 4 B = 369,098,752
  //   MoE 4096 x 8 copies x (7168 x (1 + 2) B + 2 x 2048 x 2 B) = 973,078,528
  //   LM head: its last token, 129,280 x 4 B = 517,120; in all 2,768,757,760 B more.
  const auto plain = bundled_scenario("dsv32-baseline-32k", {"workload.batch_per_gpu=4"});
  const auto mixed = bundled_scenario("dsv32-baseline-32k",
                                      {"workload.batch_per_gpu=4", "workload.prefill_chunk={\"tokens\":4096,\"cached\":16384}"});
  const double extra = ess::plan_memory(ess::decode_run(mixed), 4).line("activations").value() - ess::plan_memory(ess::decode_run(plain), 4).line("activations").value();
  CHECK(extra == Approx(2768757760.0));
}
