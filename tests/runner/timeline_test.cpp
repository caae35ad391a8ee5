#include "kernels/runner/timeline.h"

#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using ess::runner::OpRecord;
using ess::runner::StepTimeline;

TEST_CASE("event indices are handed out in order") {
  StepTimeline t(3);
  CHECK(t.take_event() == 0);
  CHECK(t.take_event() == 1);
  CHECK(t.events_used() == 2);
  CHECK(t.step() == 3);
}

TEST_CASE("a step spans its ops on every stream and ops keep their issue order") {
  // Times in ms chosen exact in binary: 1/128 ms = 7.8125 us.
  StepTimeline t(5);
  t.add(OpRecord{"attn_norm", "norm", 0, 0, 0, 1});
  t.add(OpRecord{"fetch", "transfer", 1, 0, 4, 5});
  t.add(OpRecord{"wait fetch", "wait", 0, 0, 2, 3});
  const std::vector<double> ms{0.5, 0.5078125, 0.515625, 0.625, 0.5, 0.75};
  const auto events = t.resolve(ms);
  REQUIRE(events.size() == 4);
  // The step: from the earliest start (0.5 ms) to the latest end (the fetch, 0.75 ms) = 250 us.
  CHECK(events[0].name == "step");
  CHECK(events[0].category == "step");
  CHECK(events[0].step == 5);
  CHECK_FALSE(events[0].layer.has_value());
  CHECK(events[0].ts_us == 500.0);
  CHECK(events[0].dur_us == 250.0);
  CHECK(events[1].name == "attn_norm");
  CHECK(events[1].ts_us == 500.0);
  CHECK(events[1].dur_us == 7.8125);
  CHECK(events[1].layer == 0);
  CHECK(events[2].name == "fetch");
  CHECK(events[2].tid == 1);
  CHECK(events[2].dur_us == 250.0);
  CHECK(events[3].name == "wait fetch");
  CHECK(events[3].ts_us == 515.625);
  CHECK(events[3].dur_us == 109.375);
}

TEST_CASE("resolving refuses impossible times") {
  StepTimeline t(0);
  t.add(OpRecord{"q_b", "gemm", 0, 1, 0, 1});
  CHECK_THROWS_AS(t.resolve({1.0, 0.5}), std::invalid_argument);  // ends before it starts
  CHECK_THROWS_AS(t.resolve({1.0}), std::invalid_argument);       // event 1 missing
  CHECK_THROWS_AS(t.resolve({std::numeric_limits<double>::quiet_NaN(), 1.0}), std::invalid_argument);
  CHECK(t.resolve({1.0, 1.0})[1].dur_us == 0.0);
}

TEST_CASE("a step's ops follow the simulator's dense offload layer, per overlap mode") {
  using ess::runner::expected_step_ops;
  using ess::runner::OverlapMode;
  const auto names = [](const std::vector<OpRecord>& ops) {
    std::vector<std::string> out;
    for (const auto& op : ops) out.push_back(op.name + "/" + op.category + "/" + std::to_string(op.tid) + "/" + std::to_string(op.layer));
    return out;
  };
  const std::vector<std::string> before{"attn_norm/norm/0/0", "q_a_kv_a/gemm/0/0", "q_norm/norm/0/0",
                                        "kv_norm/norm/0/0", "q_b/gemm/0/0", "indexer_q/gemm/0/0",
                                        "indexer_k_w/gemm/0/0", "indexer_score/indexer/0/0",
                                        "indexer_topk/indexer/0/0", "q_absorb/gemm/0/0"};
  const std::vector<std::string> after{"v_up/gemm/0/0",  "wo/gemm/0/0",    "attn_residual/elementwise/0/0",
                                       "writeback/writeback/2/0", "ffn_norm/norm/0/0", "gate_up/gemm/0/0",
                                       "act/elementwise/0/0", "down/gemm/0/0", "mlp_residual/elementwise/0/0"};
  const std::vector<std::string> head{"final_norm/norm/0/-1", "lm_head/gemm/0/-1", "sampling/elementwise/0/-1",
                                      "wait writeback/wait/0/-1"};
  const auto step = [&](const std::vector<std::string>& attention) {
    std::vector<std::string> all{"embedding/elementwise/0/-1"};
    all.insert(all.end(), before.begin(), before.end());
    all.insert(all.end(), attention.begin(), attention.end());
    all.insert(all.end(), after.begin(), after.end());
    all.insert(all.end(), head.begin(), head.end());
    return all;
  };
  CHECK(names(expected_step_ops(OverlapMode::serial, {true})) ==
        step({"fetch/transfer/1/0", "wait fetch/wait/0/0", "sparse_mla/attention/0/0"}));
  CHECK(names(expected_step_ops(OverlapMode::da, {true})) ==
        step({"sparse_mla_hits/attention/0/0", "fetch_overlap/transfer/1/0", "wait fetch/wait/0/0",
              "sparse_mla_misses/attention/0/0", "attention_merge/elementwise/0/0"}));
  // Nothing to fetch: sparse_mla alone, whatever the mode.
  CHECK(names(expected_step_ops(OverlapMode::da, {false})) == step({"sparse_mla/attention/0/0"}));
  // Two layers: 1 + 2 x (10 + 1 + 9) + 4 ops with no fetch; the second layer is numbered 1.
  const auto two = expected_step_ops(OverlapMode::serial, {false, false});
  CHECK(two.size() == 45);
  CHECK(two[21].name == "attn_norm");
  CHECK(two[21].layer == 1);
}

TEST_CASE("the step check names the first op that differs") {
  using ess::runner::check_step_ops;
  using ess::runner::expected_step_ops;
  const auto expected = expected_step_ops(ess::runner::OverlapMode::serial, {false});
  StepTimeline good(2);
  for (const auto& op : expected) good.add(op);
  CHECK_NOTHROW(check_step_ops(good, expected));
  StepTimeline wrong(2);
  for (auto op : expected) {
    if (op.name == "q_b") op.category = "norm";
    wrong.add(op);
  }
  CHECK_THROWS_WITH(check_step_ops(wrong, expected),
                    "step 2: op 5 is q_b (norm, tid 0, layer 0), expected q_b (gemm, tid 0, layer 0)");
  StepTimeline short_step(2);
  short_step.add(expected.front());
  CHECK_THROWS_WITH(check_step_ops(short_step, expected), "step 2 has 1 ops, expected 25");
}
