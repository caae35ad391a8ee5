#include "sim/io/chrome_trace.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "sim/base/error.h"

namespace ess {

namespace {

using nlohmann::ordered_json;

constexpr double k_picoseconds_per_second = 1e12;
constexpr double k_picoseconds_per_microsecond = 1e6;

void check_time(double value, const char* what) {
  if (!std::isfinite(value) || value < 0.0) {
    throw InternalError(std::string("ChromeTrace: ") + what + " must be a finite number >= 0, got " +
                        std::to_string(value));
  }
}

// Seconds to a whole number of picoseconds, still as a double: exact up to 2^53 ps (about 2.5
// hours of simulated time), and beyond that the nearest double, which is all a double can hold.
double to_picoseconds(double seconds, const char* what) {
  const double ps = std::round(seconds * k_picoseconds_per_second);
  if (!std::isfinite(ps)) {
    throw InternalError(std::string("ChromeTrace: ") + what + " is too large: " + std::to_string(seconds) + " s");
  }
  return ps;
}

// Whole picoseconds to microseconds. Division is correctly rounded, so the result is the double
// nearest the exact decimal and prints with its short digits ("1.5", not "1.4999999999999998").
double to_microseconds(double picoseconds) { return picoseconds / k_picoseconds_per_microsecond; }

// Compact, deterministic text; invalid UTF-8 in a name is the caller's bug.
std::string serialize(const ordered_json& event) {
  try {
    return event.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw InternalError(std::string("ChromeTrace: cannot serialize event: ") + e.what());
  }
}

ordered_json metadata_event(const char* name, int pid, int tid, ordered_json args) {
  ordered_json event = {{"ph", "M"}, {"name", name}, {"pid", pid}};
  if (tid > 0) event["tid"] = tid;
  event["args"] = std::move(args);
  return event;
}

}  // namespace

int ChromeTrace::process_id(const std::string& process) {
  if (const auto found = pids_.find(process); found != pids_.end()) return found->second;
  processes_.push_back(Process{process, {}, {}});
  const int pid = static_cast<int>(processes_.size());
  pids_.emplace(process, pid);
  return pid;
}

TraceTrack ChromeTrace::track(const std::string& process, const std::string& thread) {
  // Fails here, at the caller's mistake, rather than later in to_json.
  (void)serialize(ordered_json::array({process, thread}));
  const int pid = process_id(process);
  Process& p = processes_[static_cast<std::size_t>(pid - 1)];
  if (const auto found = p.tids.find(thread); found != p.tids.end()) return TraceTrack{pid, found->second};
  // Unique over the whole trace, not per process: Perfetto versions before 2025 matched thread
  // names by tid alone (google/perfetto#363).
  const int tid = ++thread_count_;
  p.threads.emplace_back(thread, tid);
  p.tids.emplace(thread, tid);
  return TraceTrack{pid, tid};
}

void ChromeTrace::slice(TraceTrack t, const std::string& name, const std::string& category, double start_s,
                        double duration_s, const ordered_json& args) {
  const auto known = [&] {
    if (t.pid < 1 || static_cast<std::size_t>(t.pid) > processes_.size()) return false;
    for (const auto& [thread_name, tid] : processes_[static_cast<std::size_t>(t.pid - 1)].threads) {
      if (tid == t.tid) return true;
    }
    return false;
  };
  if (!known()) {
    throw InternalError("ChromeTrace: slice on a track not made by track(): pid " + std::to_string(t.pid) +
                        ", tid " + std::to_string(t.tid));
  }
  check_time(start_s, "slice start");
  check_time(duration_s, "slice duration");
  if (!args.is_null() && !args.is_object()) {
    throw InternalError("ChromeTrace: slice args must be null or an object, got " + args.dump());
  }
  const double start_ps = to_picoseconds(start_s, "slice start");
  const double end_ps = to_picoseconds(start_s + duration_s, "slice end");

  ordered_json event = {{"ph", "X"},
                        {"name", name},
                        {"cat", category},
                        {"pid", t.pid},
                        {"tid", t.tid},
                        {"ts", to_microseconds(start_ps)},
                        {"dur", to_microseconds(end_ps - start_ps)}};
  if (!args.is_null()) event["args"] = args;
  events_.push_back(serialize(event));
  ++slice_count_;
}

void ChromeTrace::counter(const std::string& process, const std::string& name, double time_s,
                          const ordered_json& values) {
  check_time(time_s, "counter time");
  if (!values.is_object() || values.empty()) {
    throw InternalError("ChromeTrace: counter values must be a non-empty object, got " + values.dump());
  }
  for (const auto& [key, value] : values.items()) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      throw InternalError("ChromeTrace: counter value \"" + key + "\" must be a finite number, got " +
                          value.dump());
    }
  }
  const double time_ps = to_picoseconds(time_s, "counter time");
  (void)serialize(ordered_json::array({process}));
  const int pid = process_id(process);
  ordered_json event = {
      {"ph", "C"}, {"name", name}, {"pid", pid}, {"ts", to_microseconds(time_ps)}, {"args", values}};
  events_.push_back(serialize(event));
}

void ChromeTrace::set_metadata(const std::string& key, ordered_json value) {
  (void)serialize(ordered_json::array({key, value}));
  metadata_[key] = std::move(value);
}

std::string ChromeTrace::to_json() const {
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  const auto append = [&](const std::string& event) {
    out += first ? "\n" : ",\n";
    out += event;
    first = false;
  };
  // Sort indices equal to the ids keep rows in order of first use rather than the viewer's default
  // (alphabetical in chrome://tracing).
  for (std::size_t p = 0; p < processes_.size(); ++p) {
    const int pid = static_cast<int>(p + 1);
    const Process& process = processes_[p];
    append(serialize(metadata_event("process_name", pid, 0, {{"name", process.name}})));
    append(serialize(metadata_event("process_sort_index", pid, 0, {{"sort_index", pid}})));
    for (const auto& [name, tid] : process.threads) {
      append(serialize(metadata_event("thread_name", pid, tid, {{"name", name}})));
      append(serialize(metadata_event("thread_sort_index", pid, tid, {{"sort_index", tid}})));
    }
  }
  for (const std::string& event : events_) append(event);
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":";
  out += serialize(metadata_);
  out += "}\n";
  return out;
}

}  // namespace ess
