// The prefill step graph (sim/graph/prefill_step.h): the causal work of a set of pieces, the
// micro-batch split, the ops a step holds, the per-node all-to-all and its SM share, sampled
// routing against exact routing, and the scenario section's errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>

#include "models/alltoall.h"
#include "models/attention.h"
#include "models/cost.h"
#include "sim/config/config_error.h"
#include "sim/engine/preflight.h"
#include "sim/engine/simulation.h"
#include "sim/base/op_names.h"
#include "sim/graph/prefill_step.h"
#include "sim/graph/step_blocks.h"
#include "test_scenarios.h"
#include "sim/base/error.h"

namespace {

using ess::PrefillPiece;
using ess::test::load;
using ess::test::one_layer_model;
using ess::test::overhead_only_hardware;

nlohmann::json prefill_scenario(nlohmann::json model, int gpus, int nodes, std::int64_t prompt, std::int64_t tokens) {
  nlohmann::json hw = overhead_only_hardware(gpus);
  hw["nodes"] = nodes;
  hw["gpu"]["sm_count"] = 100;
  const int total = gpus * nodes;
  return {{"schema", "ess-sim/scenario/v1"},
          {"model", model},
          {"hardware", hw},
          {"parallelism", {{"attention_dp", total}, {"tensor_parallel", 1}, {"expert_parallel", model.contains("moe") ? total : 1}}},
          {"prefill", {{"prompt_length", prompt}, {"tokens_per_gpu", tokens}, {"steps", 1}}}};
}

// One MoE layer of 4 experts where every token picks all 4 (top-4 of 4: deterministic routing).
nlohmann::json four_expert_model() {
  nlohmann::json m = one_layer_model(true);
  m["moe"]["routed_experts"] = 4;
  m["moe"]["experts_per_token"] = 4;
  return m;
}

double remote_send_bytes(const ess::Segment& seg, int gpu, int per_node) {
  double sum = 0.0;
  const auto E = seg.send_bytes.size();
  for (std::size_t i = 0; i < E; ++i) {
    const auto peer = static_cast<int>(static_cast<std::size_t>(seg.group) * E + i);
    if (peer / per_node != gpu / per_node) sum += seg.send_bytes[i];
  }
  return sum;
}

const ess::Segment& first_of(const ess::GpuStepPlan& g, ess::SegmentKind kind, std::string_view label) {
  const auto it = std::find_if(g.segments.begin(), g.segments.end(),
                               [&](const ess::Segment& s) { return s.kind == kind && s.label == label; });
  REQUIRE(it != g.segments.end());
  return *it;
}

}  // namespace

TEST_CASE("prefill work: causal key pairs, keys read, top-k selections and the longest request, by hand") {
  // (4 new, 0 cached): queries see 1..4 keys; (3 new, 2 cached): 3..5 keys.
  const std::vector<PrefillPiece> pieces = {{4, 0}, {3, 2}};
  const ess::PrefillWork w = ess::prefill_work(pieces, 3);
  CHECK(w.queries == 7);
  CHECK(w.key_pairs == 10.0 + 12.0);
  CHECK(w.keys == 4 + 5);
  CHECK(w.pieces == 2);
  CHECK(w.selected == (1 + 2 + 3 + 3) + (3 + 3 + 3));
  CHECK(w.longest == 5);
  CHECK(ess::prefill_work(pieces, 0).selected == 0.0);  // no indexer
  CHECK_THROWS_AS(ess::prefill_work(std::vector<PrefillPiece>{{0, 0}}, 0), ess::InternalError);
}

TEST_CASE("prefill micro-batches split the tokens in half, a cut piece continuing with its first part cached") {
  const auto one = ess::split_in_two(std::vector<PrefillPiece>{{5, 0}});
  REQUIRE(one[0].size() == 1);
  REQUIRE(one[1].size() == 1);
  CHECK((one[0][0].tokens == 3 && one[0][0].cached == 0));
  CHECK((one[1][0].tokens == 2 && one[1][0].cached == 3));
  const auto three = ess::split_in_two(std::vector<PrefillPiece>{{2, 0}, {2, 0}, {1, 0}});
  REQUIRE(three[0].size() == 2);
  REQUIRE(three[1].size() == 2);
  CHECK((three[0][1].tokens == 1 && three[1][0].tokens == 1 && three[1][0].cached == 1));
  // Both halves together are the causal work of the whole (nothing lost at the cut).
  const auto all = ess::prefill_work(std::vector<PrefillPiece>{{5, 0}}, 0);
  CHECK(ess::prefill_work(one[0], 0).key_pairs + ess::prefill_work(one[1], 0).key_pairs == all.key_pairs);
}

TEST_CASE("whole prompts: as many as fit, then the start of one more") {
  const auto p = ess::whole_prompts(10, 4);
  REQUIRE(p.size() == 3);
  CHECK((p[0].tokens == 4 && p[1].tokens == 4 && p[2].tokens == 2));
  CHECK(ess::whole_prompts(3, 8).size() == 1);
  CHECK_THROWS_AS(ess::whole_prompts(0, 8), ess::InternalError);
}

TEST_CASE("prefill attention prices 2 heads key_pairs (qk + v) FLOPs and rejects impossible shapes") {
  const ess::Hardware hw = load(prefill_scenario(one_layer_model(false), 1, 1, 8, 8)).hardware;
  const ess::PrefillAttentionShape s{8, 36.0, 8, 32, 8, 128, 128, ess::DType::bf16};
  CHECK(ess::prefill_attention(s, hw).flops.value() == Approx(2.0 * 32 * 36.0 * 256));
  ess::PrefillAttentionShape bad = s;
  bad.key_pairs = 4.0;  // fewer than one key per query
  CHECK_THROWS_AS(ess::prefill_attention(bad, hw), ess::InputError);
}

TEST_CASE("a prefill step runs causal attention, no decode attention, and the LM head once per prompt") {
  const ess::Scenario s = load(prefill_scenario(one_layer_model(false), 1, 1, 4, 12));
  const ess::PrefillRun run = ess::prefill_run(s);
  const ess::PrefillStepBuilder builder(run);
  ess::Rng rng(1);
  const auto pieces = ess::whole_prompts(12, 4);
  const ess::StepPlan plan = builder.build(0, pieces, rng);
  int prefill_attention = 0;
  int decode_attention = 0;
  for (const auto& seg : plan.gpus[0].segments) {
    for (const auto& op : seg.ops) {
      if (op.name == ess::opname::prefill_attention) {
        ++prefill_attention;
        CHECK(op.flops.value() == Approx(2.0 * 32 * (3 * 10.0) * 256));  // 3 prompts of 4: 10 key pairs each
      }
      if (op.name == ess::opname::attention) ++decode_attention;
      if (op.name == ess::opname::lm_head) CHECK(op.flops.value() == Approx(2.0 * 3 * 1000 * 4096));  // 3 rows
    }
  }
  CHECK(prefill_attention == 1);
  CHECK(decode_attention == 0);
  CHECK(plan.context == 4);
}

TEST_CASE("the prefill all-to-all sends a token once per remote node and holds its SMs, and decode's once per copy") {
  // 2 nodes of 2 GPUs, EP4, top-4 of 4 experts: every token goes to all 4 GPUs, 2 of them remote.
  nlohmann::json doc = prefill_scenario(four_expert_model(), 2, 2, 8, 8);
  const ess::Scenario s = load(doc);
  const ess::PrefillRun run = ess::prefill_run(s);
  const ess::StepBlocks blocks(run);
  const std::int64_t T = 8;
  const double copy = ess::dispatch_bytes_per_copy(4096).value();
  for (const auto dedup : {ess::AlltoallDedup::per_copy, ess::AlltoallDedup::per_node}) {
    std::vector<ess::GpuStepPlan> gpus(4);
    ess::Rng rng(3);
    blocks.add_moe(gpus, 0, T, rng, dedup);
    const ess::Segment& dispatch = first_of(gpus[0], ess::SegmentKind::alltoall, "dispatch");
    const double copies = dedup == ess::AlltoallDedup::per_copy ? 2.0 : 1.0;
    CHECK(remote_send_bytes(dispatch, 0, 2) == Approx(static_cast<double>(T) * copies * copy));
    // The default engine (deepseek) holds 24 SMs, of the test GPU's 100.
    CHECK(dispatch.sm_fraction == (dedup == ess::AlltoallDedup::per_node ? Approx(24.0 / 100.0) : Approx(0.0)));
  }
  // Without the GPU's SM count the share cannot be told: the error names both fields.
  doc["hardware"]["gpu"].erase("sm_count");
  const ess::Scenario no_sms = load(doc);
  const ess::PrefillRun no_sms_run = ess::prefill_run(no_sms);
  const ess::StepBlocks unsized(no_sms_run);
  std::vector<ess::GpuStepPlan> gpus(4);
  ess::Rng rng(3);
  CHECK_THROWS_WITH(unsized.add_moe(gpus, 0, T, rng, ess::AlltoallDedup::per_node),
                    Catch::Contains("hardware.gpu.sm_count") && Catch::Contains("engine.prefill_alltoall_sms"));
}

TEST_CASE("sampled routing keeps the expected load: rows and bytes within a few percent of routing every token") {
  nlohmann::json model = one_layer_model(true);
  model["moe"]["routed_experts"] = 16;
  model["moe"]["experts_per_token"] = 4;
  nlohmann::json doc = prefill_scenario(model, 4, 1, 8192, 8192);
  doc["workload"] = {{"expert_skew", 1.0}, {"expert_drift", 0.1}};
  const ess::Scenario s = load(doc);
  const ess::PrefillRun run = ess::prefill_run(s);
  const ess::StepBlocks blocks(run);
  const auto total = [](const std::vector<ess::GpuStepPlan>& gpus, std::string_view op) {
    double sum = 0.0;
    for (const auto& g : gpus) {
      for (const auto& seg : g.segments) {
        for (const auto& o : seg.ops) sum += o.name == op ? o.flops.value() : 0.0;
      }
    }
    return sum;
  };
  std::vector<ess::GpuStepPlan> exact(4);
  std::vector<ess::GpuStepPlan> sampled(4);
  ess::Rng a(5);
  ess::Rng b(5);
  blocks.add_moe(exact, 0, 8192, a, ess::AlltoallDedup::per_node);
  blocks.add_moe(sampled, 0, 8192, b, ess::AlltoallDedup::per_node, 2048);
  const double e = total(exact, ess::opname::experts_gate_up);
  CHECK(e > 0.0);
  CHECK(total(sampled, ess::opname::experts_gate_up) == Approx(e).epsilon(0.03));
  const ess::Segment& de = first_of(exact[1], ess::SegmentKind::alltoall, "dispatch");
  const ess::Segment& ds = first_of(sampled[1], ess::SegmentKind::alltoall, "dispatch");
  const double sent_e = std::accumulate(de.send_bytes.begin(), de.send_bytes.end(), 0.0);
  const double sent_s = std::accumulate(ds.send_bytes.begin(), ds.send_bytes.end(), 0.0);
  CHECK(sent_s == Approx(sent_e).epsilon(0.03));
}

TEST_CASE("under two-batch overlap the prefill all-to-all's SMs slow the compute beside it, counted as collectives") {
  nlohmann::json doc = prefill_scenario(four_expert_model(), 2, 2, 64, 256);
  doc["execution"] = {{"micro_batches", 2}};
  // Slow all-to-all links so that the collectives overlap most of the compute.
  doc["hardware"]["network"]["bandwidth_per_gpu"] = "0.1GB/s";
  const auto step = [&](int sms) {
    nlohmann::json d = doc;
    d["engine"] = {{"preset", "deepseek"}, {"kernel_gap", "0s"}, {"prefill_alltoall_sms", sms}};
    const ess::Scenario s = load(d);
    ess::Simulation sim(s, ess::SimulationOptions(1, 0));
    const ess::RunResult r = sim.run();
    struct Times {
      double kernels = 0.0;  // every category but collectives and transfers: the kernels' own time
      double lost = 0.0;     // compute lost to the all-to-all's SMs
      double transfers = 0.0;
      double collectives_busy = 0.0;
      double collectives_params = 0.0;
    } t;
    for (const auto& g : r.gpu_steps[0]) {
      for (std::size_t c = 0; c < ess::kOpCategoryCount; ++c) {
        if (c != static_cast<std::size_t>(ess::OpCategory::collective) && c != static_cast<std::size_t>(ess::OpCategory::transfer)) {
          t.kernels += g.busy[c];
        }
      }
      t.lost += g.lost_to_collectives;
      t.transfers += g.busy[static_cast<std::size_t>(ess::OpCategory::transfer)] + g.lost_to_gather;
      t.collectives_busy += g.busy[static_cast<std::size_t>(ess::OpCategory::collective)];
      t.collectives_params += g.by_params[static_cast<std::size_t>(ess::ParamSet::alltoall)];
    }
    return t;
  };
  const auto free_sms = step(0);
  const auto half = step(50);
  CHECK(free_sms.lost == 0.0);
  CHECK(half.kernels == Approx(free_sms.kernels));  // the kernels' own times do not change
  // Compute beside the all-to-all runs on half the SMs: at most twice as long.
  CHECK(half.lost > 0.2 * half.kernels);
  CHECK(half.lost < half.kernels + 1e-9);
  // The slow-down is the all-to-all's (category collectives, its parameter set), not a transfer's.
  CHECK(half.transfers == 0.0);
  CHECK(half.collectives_busy >= half.lost);
  CHECK(half.collectives_params >= half.lost);
}

TEST_CASE("under two-batch overlap the SM-holding all-to-all moves its bytes at engine.prefill_alltoall_overlap_efficiency") {
  nlohmann::json doc = prefill_scenario(four_expert_model(), 2, 2, 64, 256);
  // Slow all-to-all links: the step is the all-to-all's, so its rate shows in the step time.
  doc["hardware"]["network"]["bandwidth_per_gpu"] = "0.1GB/s";
  const auto step = [&](int micro_batches, int sms, double efficiency) {
    nlohmann::json d = doc;
    d["execution"] = {{"micro_batches", micro_batches}};
    d["engine"] = {{"preset", "deepseek"}, {"kernel_gap", "0s"}, {"prefill_alltoall_sms", sms},
                   {"prefill_alltoall_overlap_efficiency", efficiency}};
    const ess::Scenario s = load(d);  // the simulation keeps a reference to it
    ess::Simulation sim(s, ess::SimulationOptions(1, 0));
    return sim.run().step_time.at(0);
  };
  // Beside compute, at half its rate: the communication-bound step nearly doubles.
  const double alone = step(2, 20, 1.0);
  const double slowed = step(2, 20, 0.5);
  CHECK(slowed > 1.8 * alone);
  CHECK(slowed < 2.0 * alone + 1e-9);
  // Without two-batch overlap nothing computes beside it: unslowed, as in DeepEP's unit tests.
  // (Approx: runs in one process start from a later SimGrid clock, the last bits may differ.)
  CHECK(step(1, 20, 0.5) == Approx(step(1, 20, 1.0)).epsilon(1e-9));
  // Kernels that hold no SMs (decode's low-latency ones) are not slowed.
  CHECK(step(2, 0, 0.5) == Approx(step(2, 0, 1.0)).epsilon(1e-9));
}

TEST_CASE("a prefill scenario names what it does not use, and cannot also be a serving or offload run") {
  const nlohmann::json base = prefill_scenario(one_layer_model(false), 1, 1, 8, 8);
  nlohmann::json with_batch = base;
  with_batch["workload"] = {{"batch_per_gpu", 4}};
  CHECK_THROWS_WITH(load(with_batch), Catch::Contains("/workload/batch_per_gpu") && Catch::Contains("prefill"));
  nlohmann::json with_serving = base;
  with_serving["serving"] = nlohmann::json::object();
  CHECK_THROWS_WITH(load(with_serving), Catch::Contains("not both"));
  nlohmann::json no_prompt = base;
  no_prompt["prefill"].erase("prompt_length");
  CHECK_THROWS_WITH(load(no_prompt), Catch::Contains("/prefill") && Catch::Contains("prompt_length"));
  nlohmann::json zero = base;
  zero["prefill"]["tokens_per_gpu"] = 0;
  CHECK_THROWS_AS(load(zero), ess::ConfigError);
}

TEST_CASE("commands that work on decode steps refuse a prefill scenario and say what to use") {
  const ess::Scenario s = load(prefill_scenario(one_layer_model(false), 1, 1, 8, 8));
  CHECK_THROWS_WITH(ess::require_decode_scenario(s, "a sweep"),
                    Catch::Contains("/prefill") && Catch::Contains("a sweep") && Catch::Contains("cost prefill"));
  // Preflight (what `check` and `compare` run) prices a prefill scenario's first step instead.
  const ess::Preflight p = ess::preflight(ess::run_request(s), 0, 0, ess::ResourceLimits{});
  CHECK(p.steps == 1);
  CHECK(p.batch_per_gpu == 0);
}

TEST_CASE("the normal all-to-all's tokens are permuted into expert rows before the experts and summed back after them") {
  // 2 GPUs of 2 experts each, every token picks all 4: each GPU receives all 2 x 1024 tokens once
  // and holds 2 expert rows of each.
  const ess::Scenario s = load(prefill_scenario(four_expert_model(), 2, 1, 1024, 1024));
  const ess::PrefillRun run = ess::prefill_run(s);
  const ess::StepBlocks blocks(run);
  const auto op_of = [](const ess::GpuStepPlan& g, std::string_view name) -> const ess::Op* {
    for (const auto& seg : g.segments) {
      for (const auto& o : seg.ops) {
        if (o.name == name) return &o;
      }
    }
    return nullptr;
  };
  std::vector<ess::GpuStepPlan> prefill(2);
  ess::Rng rng(3);
  blocks.add_moe(prefill, 0, 1024, rng, ess::AlltoallDedup::per_node);
  const double received = 2.0 * 1024.0;
  const double rows = 2.0 * received;
  const double fp8_row = ess::dispatch_bytes_per_copy(4096).value();
  const double bf16_row = 4096.0 * 2.0;
  for (const auto& g : prefill) {
    const ess::Op* in = op_of(g, ess::opname::experts_permute);
    const ess::Op* out = op_of(g, ess::opname::experts_unpermute);
    REQUIRE(in != nullptr);
    REQUIRE(out != nullptr);
    CHECK(in->bytes.value() == Approx((received + rows) * fp8_row));
    CHECK(out->bytes.value() == Approx((rows + received) * bf16_row));
    CHECK(in->time.value() > 0.0);
    // In order: dispatch, permute, the experts, unpermute, combine.
    std::vector<std::string_view> order;
    for (const auto& seg : g.segments) {
      if (seg.kind == ess::SegmentKind::alltoall) order.push_back(seg.label);
      for (const auto& o : seg.ops) {
        if (o.name == ess::opname::experts_permute || o.name == ess::opname::experts_gate_up ||
            o.name == ess::opname::experts_unpermute) {
          order.push_back(o.name);
        }
      }
    }
    CHECK(order == std::vector<std::string_view>{"dispatch", ess::opname::experts_permute, ess::opname::experts_gate_up,
                                                 ess::opname::experts_unpermute, "combine"});
  }
  // Decode's low-latency kernels deliver expert-major rows themselves: no permutation.
  std::vector<ess::GpuStepPlan> decode(2);
  ess::Rng rng2(3);
  blocks.add_moe(decode, 0, 1024, rng2, ess::AlltoallDedup::per_copy);
  CHECK(op_of(decode[0], ess::opname::experts_permute) == nullptr);
  CHECK(op_of(decode[0], ess::opname::experts_unpermute) == nullptr);
}
