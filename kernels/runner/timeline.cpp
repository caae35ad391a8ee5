#include "kernels/runner/timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ess::runner {

namespace {

constexpr double kMicrosecondsPerMillisecond = 1000.0;

}  // namespace

std::vector<TraceEvent> StepTimeline::resolve(const std::vector<double>& event_ms) const {
  const auto time_of = [&](const OpRecord& op, int index) {
    if (index < 0 || static_cast<std::size_t>(index) >= event_ms.size()) {
      throw std::invalid_argument("StepTimeline: op " + op.name + " uses event " + std::to_string(index) + " of " +
                                  std::to_string(event_ms.size()));
    }
    const double ms = event_ms[static_cast<std::size_t>(index)];
    if (!std::isfinite(ms)) throw std::invalid_argument("StepTimeline: op " + op.name + " has a non-finite time");
    return ms * kMicrosecondsPerMillisecond;
  };
  std::vector<TraceEvent> out;
  out.reserve(ops_.size() + 1);
  out.push_back(TraceEvent{"step", "step", kComputeTid, 0.0, 0.0, step_, std::nullopt});
  double first = 0.0;
  double last = 0.0;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const OpRecord& op = ops_[i];
    const double start = time_of(op, op.start_event);
    const double end = time_of(op, op.end_event);
    if (end < start) {
      throw std::invalid_argument("StepTimeline: op " + op.name + " of step " + std::to_string(step_) + " ends " +
                                  std::to_string(start - end) + " us before it starts");
    }
    first = i == 0 ? start : std::min(first, start);
    last = i == 0 ? end : std::max(last, end);
    out.push_back(TraceEvent{op.name, op.category, op.tid, start, end - start, step_, op.layer});
  }
  out.front().ts_us = first;
  out.front().dur_us = last - first;
  return out;
}

std::vector<OpRecord> expected_step_ops(OverlapMode overlap, const std::vector<bool>& fetches) {
  std::vector<OpRecord> ops;
  const auto add = [&](const char* name, const char* category, int layer, int tid = kComputeTid) {
    ops.push_back(OpRecord{name, category, tid, layer, 0, 0});
  };
  add("embedding", "elementwise", -1);
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    const auto l = static_cast<int>(i);
    add("attn_norm", "norm", l);
    add("q_a_kv_a", "gemm", l);
    add("q_norm", "norm", l);
    add("kv_norm", "norm", l);
    add("q_b", "gemm", l);
    add("indexer_q", "gemm", l);
    add("indexer_k_w", "gemm", l);
    add("indexer_score", "indexer", l);
    add("indexer_topk", "indexer", l);
    add("q_absorb", "gemm", l);
    if (!fetches[i]) {
      add("sparse_mla", "attention", l);
    } else if (overlap == OverlapMode::serial) {
      add("fetch", "transfer", l, kFetchTid);
      add("wait fetch", "wait", l);
      add("sparse_mla", "attention", l);
    } else {
      add("sparse_mla_hits", "attention", l);  // queued before the fetch's calls (see DecodeModel)
      add("fetch_overlap", "transfer", l, kFetchTid);
      add("wait fetch", "wait", l);
      add("sparse_mla_misses", "attention", l);
      add("attention_merge", "elementwise", l);
    }
    add("v_up", "gemm", l);
    add("wo", "gemm", l);
    add("attn_residual", "elementwise", l);
    add("writeback", "writeback", l, kWritebackTid);
    add("ffn_norm", "norm", l);
    add("gate_up", "gemm", l);
    add("act", "elementwise", l);
    add("down", "gemm", l);
    add("mlp_residual", "elementwise", l);
  }
  add("final_norm", "norm", -1);
  add("lm_head", "gemm", -1);
  add("sampling", "elementwise", -1);
  add("wait writeback", "wait", -1);
  return ops;
}

void check_step_ops(const StepTimeline& timeline, const std::vector<OpRecord>& expected) {
  const auto& ops = timeline.ops();
  const auto text = [](const OpRecord& op) {
    return op.name + " (" + op.category + ", tid " + std::to_string(op.tid) + ", layer " + std::to_string(op.layer) + ")";
  };
  for (std::size_t i = 0; i < std::min(ops.size(), expected.size()); ++i) {
    const OpRecord& a = ops[i];
    const OpRecord& b = expected[i];
    if (a.name != b.name || a.category != b.category || a.tid != b.tid || a.layer != b.layer) {
      throw std::logic_error("step " + std::to_string(timeline.step()) + ": op " + std::to_string(i) + " is " +
                             text(a) + ", expected " + text(b));
    }
  }
  if (ops.size() != expected.size()) {
    throw std::logic_error("step " + std::to_string(timeline.step()) + " has " + std::to_string(ops.size()) +
                           " ops, expected " + std::to_string(expected.size()));
  }
}

}  // namespace ess::runner
