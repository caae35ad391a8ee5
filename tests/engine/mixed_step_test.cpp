// A decode step that also prefills a prompt chunk (workload.prefill_chunk, sim/graph/decode_step.h):
// the chunk's tokens join the projections, MLP and head, its attention core runs beside the decode
// requests', and in offload mode its entries are written back; step times by hand on the
// overhead-only GPU (every kernel 10 us).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/graph/decode_step.h"
#include "sim/base/op_names.h"
#include "sim/offload/access_trace.h"
#include "tests/engine/first_four_access.h"
#include "tests/engine/test_scenarios.h"

namespace {

using ess::test::load;

nlohmann::json gqa_decode(std::int64_t batch) {
  return {{"model", ess::test::one_layer_model(false)},
          {"hardware", ess::test::overhead_only_hardware(1)},
          {"workload", {{"batch_per_gpu", batch}, {"context_length", 100}, {"decode_steps", 1}}}};
}

double mixed_step_time(const nlohmann::json& doc) {
  const auto s = load(doc);
  return ess::Simulation(s, {}).run().step_time.at(0);
}

const ess::Op* mixed_find_op(const ess::StepPlan& plan, std::string_view name) {
  for (const auto& seg : plan.gpus[0].segments) {
    for (const auto& op : seg.ops) {
      if (op.name == name) return &op;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a prompt chunk adds its attention core beside decode attention and its tokens to every projection") {
  nlohmann::json doc = gqa_decode(4);
  const ess::Scenario plain = load(doc);
  doc["workload"]["prefill_chunk"] = {{"tokens", 6}, {"cached", 10}};
  const ess::Scenario mixed = load(doc);
  ess::Rng rng_a(1);
  ess::Rng rng_b(1);
  const ess::DecodeRun plain_run = ess::decode_run(plain);
  const ess::DecodeRun mixed_run = ess::decode_run(mixed);
  const ess::StepPlan p0 = ess::DecodeStepBuilder(plain_run, 4).build(0, rng_a);
  const ess::StepPlan p1 = ess::DecodeStepBuilder(mixed_run, 4).build(0, rng_b);
  CHECK(mixed_find_op(p0, ess::opname::prefill_attention) == nullptr);
  const ess::Op* causal = mixed_find_op(p1, ess::opname::prefill_attention);
  REQUIRE(causal != nullptr);
  // 6 queries after 10 cached: 6 x 10 + 21 = 81 key pairs; 32 heads of 128 (qk and v): 2 x 2 x 32 x 128 FLOPs each.
  CHECK(causal->flops.value() == Approx(2.0 * 2 * 32 * 128 * 81.0));
  REQUIRE(mixed_find_op(p1, ess::opname::attention) != nullptr);  // the decode requests' attention stays
  CHECK(mixed_find_op(p1, ess::opname::attention)->flops.value() == Approx(mixed_find_op(p0, ess::opname::attention)->flops.value()));
  // QKV projection over 4 decode + 6 chunk tokens; the LM head over 4 decode rows + the chunk's last token.
  CHECK(mixed_find_op(p1, ess::opname::qkv)->flops.value() == Approx(mixed_find_op(p0, ess::opname::qkv)->flops.value() * 10.0 / 4.0));
  CHECK(mixed_find_op(p1, ess::opname::lm_head)->flops.value() == Approx(mixed_find_op(p0, ess::opname::lm_head)->flops.value() * 5.0 / 4.0));
}

TEST_CASE("on the overhead-only GPU a chunk adds exactly its two GQA core kernels to the step") {
  nlohmann::json doc = gqa_decode(4);
  const double plain = mixed_step_time(doc);
  doc["workload"]["prefill_chunk"] = {{"tokens", 64}};
  CHECK(mixed_step_time(doc) == Approx(plain + 20e-6).epsilon(ess::test::kTol));  // cache_store, prefill_attention
}

TEST_CASE("offload: a chunk's attention core follows the fetch and its entries join the write-back") {
  // offload_test.cpp's serial / copy step (232.05248 us) plus the MLA + indexer core of a 2-token
  // chunk: cache_store, indexer_score, indexer_topk, q_absorb, sparse_mla, v_up = 6 x 10 us. The
  // write-back (1 + 2 entries, 2 runs) runs beside later kernels on a copy engine: it slows nothing.
  const auto path = std::filesystem::temp_directory_path() / "ess-sim-mixed-step-test.trace";
  ess::test::FirstFour access;
  ess::write_access_trace(path, access, 1, 1, 4, {{0, 8}});
  nlohmann::json doc = {{"model", ess::test::one_layer_mla_model()},
                        {"hardware", ess::test::overhead_only_hardware(1)},
                        {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", 1}, {"prefill_chunk", {{"tokens", 2}}}}},
                        {"cache",
                         {{"mode", "offload"}, {"pool_entries", 4}, {"overlap", "serial"}, {"transfer", "copy"},
                          {"sampled_requests", 1}, {"warmup_windows", 0}, {"access", {{"model", "replay"}, {"file", path.string()}}}}}};
  const auto s = load(doc);
  const ess::RunResult r = ess::Simulation(s, {}).run();
  CHECK(r.step_time.at(0) == Approx(292.05248e-6).epsilon(1e-6));
  std::filesystem::remove(path);
}

TEST_CASE("workload.prefill_chunk: bad values, unknown keys and serving runs are refused with the path") {
  nlohmann::json doc = gqa_decode(2);
  doc["workload"]["prefill_chunk"] = {{"tokens", 0}};
  CHECK_THROWS_WITH(load(doc), Catch::Contains("/workload/prefill_chunk/tokens"));
  doc["workload"]["prefill_chunk"] = {{"tokens", 8}, {"cahced", 2}};
  CHECK_THROWS_WITH(load(doc), Catch::Contains("cahced") && Catch::Contains("cached"));
  doc["workload"]["prefill_chunk"] = {{"tokens", 8}};
  doc["serving"] = {{"duration", "1s"}, {"arrivals", {{"kind", "poisson"}, {"rate", "1/s"}, {"prompt_tokens", 10}, {"output_tokens", 10}}}};
  CHECK_THROWS_AS(load(doc), ess::ConfigError);
}
