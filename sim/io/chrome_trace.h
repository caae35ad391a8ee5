// A timeline of a simulation in the Chrome trace event format, which Perfetto (ui.perfetto.dev)
// and chrome://tracing load.
//
// Format: "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
// JSON object form: {"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {...}}.
// Processes ("GPU 0", "PCIe") and threads ("stream 1", "h2d") are the viewer's rows; each gets
// process_name/thread_name and process_sort_index/thread_sort_index metadata events, so rows
// appear with their names in the order they were first used.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

// A row in the viewer. Obtain one from ChromeTrace::track; pid and tid count from 1.
struct TraceTrack {
  int pid;
  int tid;
  bool operator==(const TraceTrack&) const = default;
};

class ChromeTrace {
 public:
  // The row for `thread` inside `process`, created on first use: processes get pids 1, 2, ... in
  // order of first use (here or in counter), threads tids 1, 2, ... within their process. The same
  // names always give the same track.
  TraceTrack track(const std::string& process, const std::string& thread);

  // A complete event ("ph":"X") on track `t`, which must come from this trace's track().
  // Times are seconds of simulated time; they are written in microseconds (the format's unit),
  // rounded to the picosecond, so nanoseconds survive (1.5e-6 s -> "ts":1.5). The duration is
  // written as end - start after rounding both ends, so back-to-back and nested slices keep
  // touching exactly. `args` is null (omitted) or a JSON object shown in the viewer's details.
  // Throws InternalError (a bug in the caller) for a negative or non-finite start or
  // duration, an unknown track, non-object args, or names that are not valid UTF-8.
  void slice(TraceTrack t, const std::string& name, const std::string& category, double start_s,
             double duration_s, const nlohmann::ordered_json& args = nullptr);

  // A counter sample ("ph":"C") in `process` (created on first use), drawn as a graph named
  // `name` with one series per key of `values`, e.g. {"bytes": 1.2e9}. Times as for slice.
  // Throws InternalError for a negative or non-finite time, or unless `values` is a
  // non-empty object of finite numbers.
  void counter(const std::string& process, const std::string& name, double time_s,
               const nlohmann::ordered_json& values);

  // A key of the top-level "metadata" object (scenario name, digest, versions). Setting a key
  // again replaces its value in place; keys stay in order of first setting.
  void set_metadata(const std::string& key, nlohmann::ordered_json value);

  // The whole trace: metadata events for every track first, then slices and counters in the order
  // they were added, one event per line. Deterministic: the same calls give byte-identical text.
  [[nodiscard]] std::string to_json() const;

  // Number of slice() events so far.
  [[nodiscard]] std::size_t slice_count() const { return slice_count_; }

 private:
  struct Process {
    std::string name;
    std::vector<std::pair<std::string, int>> threads;  // (name, tid) in order of first use
    std::map<std::string, int> tids;                   // thread name -> tid
  };

  int process_id(const std::string& process);

  std::vector<Process> processes_;      // index pid - 1
  std::map<std::string, int> pids_;     // process name -> pid
  std::vector<std::string> events_;     // X and C events, each serialized when added
  std::size_t slice_count_ = 0;
  int thread_count_ = 0;  // tids are unique across the whole trace (older Perfetto mixes up equal tids)
  nlohmann::ordered_json metadata_ = nlohmann::ordered_json::object();
};

}  // namespace ess
