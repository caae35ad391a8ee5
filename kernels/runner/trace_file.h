// ess-runner's output: a Chrome trace (the JSON object form of Google's Trace Event Format) of the
// recorded decode steps, written whole or not at all.
//
//   {"traceEvents": [
//   {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "compute"}},
//   {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "fetch"}},
//   {"ph": "M", "name": "thread_name", "pid": 0, "tid": 2, "args": {"name": "writeback"}},
//   {"ph": "X", "name": "step", "cat": "step", "pid": 0, "tid": 0, "ts": 0, "dur": 812.5, "args": {"step": 0}},
//   {"ph": "X", "name": "attn_norm", "cat": "norm", "pid": 0, "tid": 0, "ts": 3.1, "dur": 4.5, "args": {"step": 0, "layer": 0}},
//   ...
//   ],
//   "displayTimeUnit": "ms",
//   "otherData": {"format": "ess-runner/v1", "tool": "ess-runner 0.1.0", "gpu": ..., "driver": ...,
//                 "cuda_runtime": ..., "cublas": ..., "date": ..., "host": ..., "scenario_sha256": ... | null,
//                 "config": {...}}}
//
// One event per line; ts and dur in microseconds (%.17g), ts from one base event recorded before
// the first recorded step.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ess::runner {

// The rows of the trace: the CUDA streams the runner uses.
inline constexpr int kComputeTid = 0;
inline constexpr int kFetchTid = 1;
inline constexpr int kWritebackTid = 2;

struct TraceEvent {
  std::string name;      // the simulator's op name ("q_b", "sparse_mla_hits"), or "step"
  std::string category;  // gemm, norm, indexer, attention, elementwise, transfer, writeback, wait, step
  int tid = kComputeTid;
  double ts_us = 0.0;
  double dur_us = 0.0;
  int step = 0;
  std::optional<int> layer;  // -1 for embedding and head ops; absent for "step" events
};

struct TraceInfo {
  std::string tool;  // "ess-runner 0.1.0"
  std::string gpu;
  std::string driver;
  std::string cuda_runtime;
  std::string cublas;
  std::string date;  // UTC ISO 8601
  std::string host;
  std::optional<std::string> scenario_sha256;
  std::vector<std::pair<std::string, std::string>> config;  // name -> JSON value text (config_fields)
};

// True for the nine categories above.
[[nodiscard]] bool is_trace_category(const std::string& category);

// The whole file's text. Throws std::invalid_argument (a bug in the caller) for an unknown
// category or tid, a non-finite time or a negative duration.
[[nodiscard]] std::string render_trace(const std::vector<TraceEvent>& events, const TraceInfo& info);
// (Written with ess::write_file_atomically, sim/io/atomic_file.h.)

}  // namespace ess::runner
