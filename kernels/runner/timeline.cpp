#include "kernels/runner/timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "sim/base/op_names.h"

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
  out.push_back(TraceEvent{std::string(catname::runner_step), std::string(catname::runner_step), kComputeTid, 0.0, 0.0, step_, std::nullopt});
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
  const auto add = [&](std::string_view name, std::string_view category, int layer, int tid = kComputeTid) {
    ops.push_back(OpRecord{std::string(name), std::string(category), tid, layer, 0, 0});
  };
  add(opname::embedding, catname::elementwise, -1);
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    const auto l = static_cast<int>(i);
    add(opname::attn_norm, catname::norm, l);
    add(opname::q_a_kv_a, catname::gemm, l);
    add(opname::q_norm, catname::norm, l);
    add(opname::kv_norm, catname::norm, l);
    add(opname::q_b, catname::gemm, l);
    add(opname::indexer_q, catname::gemm, l);
    add(opname::indexer_k_w, catname::gemm, l);
    add(opname::indexer_score, catname::indexer, l);
    add(opname::indexer_topk, catname::indexer, l);
    add(opname::q_absorb, catname::gemm, l);
    if (!fetches[i]) {
      add(opname::sparse_mla, catname::attention, l);
    } else if (overlap == OverlapMode::serial) {
      add(opname::fetch, catname::runner_transfer, l, kFetchTid);
      add(opname::wait_fetch, catname::runner_wait, l);
      add(opname::sparse_mla, catname::attention, l);
    } else {
      add(opname::sparse_mla_hits, catname::attention, l);  // queued before the fetch's calls (see DecodeModel)
      add(opname::fetch_overlap, catname::runner_transfer, l, kFetchTid);
      add(opname::wait_fetch, catname::runner_wait, l);
      add(opname::sparse_mla_misses, catname::attention, l);
      add(opname::attention_merge, catname::elementwise, l);
    }
    add(opname::v_up, catname::gemm, l);
    add(opname::wo, catname::gemm, l);
    add(opname::attn_residual, catname::elementwise, l);
    add(opname::writeback, catname::runner_writeback, l, kWritebackTid);
    add(opname::ffn_norm, catname::norm, l);
    add(opname::gate_up, catname::gemm, l);
    add(opname::act, catname::elementwise, l);
    add(opname::down, catname::gemm, l);
    add(opname::mlp_residual, catname::elementwise, l);
  }
  add(opname::final_norm, catname::norm, -1);
  add(opname::lm_head, catname::gemm, -1);
  add(opname::sampling, catname::elementwise, -1);
  add(opname::wait_writeback, catname::runner_wait, -1);
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
