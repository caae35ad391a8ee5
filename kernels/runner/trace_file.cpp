#include "kernels/runner/trace_file.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "kernels/bench/json_writer.h"
#include "kernels/runner/version.h"
#include "sim/base/op_names.h"

namespace ess::runner {

namespace {

const char* thread_name(int tid) {
  switch (tid) {
    case kComputeTid: return "compute";
    case kFetchTid: return "fetch";
    case kWritebackTid: return "writeback";
    default: return nullptr;
  }
}

std::string render_event(const TraceEvent& e) {
  if (!is_trace_category(e.category)) {
    throw std::invalid_argument("render_trace: unknown category \"" + e.category + "\" of event " + e.name);
  }
  if (thread_name(e.tid) == nullptr) {
    throw std::invalid_argument("render_trace: unknown tid " + std::to_string(e.tid) + " of event " + e.name);
  }
  if (!std::isfinite(e.ts_us) || !std::isfinite(e.dur_us) || e.dur_us < 0.0) {
    throw std::invalid_argument("render_trace: event " + e.name + " of step " + std::to_string(e.step) +
                                " has ts " + std::to_string(e.ts_us) + " us, dur " + std::to_string(e.dur_us) + " us");
  }
  std::string out = "{\"ph\": \"X\", \"name\": " + bench::json_quote(e.name) + ", \"cat\": " + bench::json_quote(e.category) +
                    ", \"pid\": 0, \"tid\": " + std::to_string(e.tid) + ", \"ts\": " + bench::json_number(e.ts_us) +
                    ", \"dur\": " + bench::json_number(e.dur_us) + ", \"args\": {\"step\": " + std::to_string(e.step);
  if (e.layer) out += ", \"layer\": " + std::to_string(*e.layer);
  out += "}}";
  return out;
}

}  // namespace

bool is_trace_category(const std::string& category) {
  for (const std::string_view c : {catname::gemm, catname::norm, catname::indexer, catname::attention, catname::elementwise,
                                   catname::runner_transfer, catname::runner_writeback, catname::runner_wait,
                                   catname::runner_step}) {
    if (category == c) return true;
  }
  return false;
}

std::string render_trace(const std::vector<TraceEvent>& events, const TraceInfo& info) {
  std::string out = "{\"traceEvents\": [\n";
  for (int tid = kComputeTid; tid <= kWritebackTid; ++tid) {
    out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " + std::to_string(tid) +
           ", \"args\": {\"name\": " + bench::json_quote(thread_name(tid)) + "}}";
    out += (tid == kWritebackTid && events.empty()) ? "\n" : ",\n";
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += render_event(events[i]);
    out += i + 1 == events.size() ? "\n" : ",\n";
  }
  out += "],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {";
  out += "\"format\": " + bench::json_quote(kTraceFormat);
  out += ", \"tool\": " + bench::json_quote(info.tool);
  out += ", \"gpu\": " + bench::json_quote(info.gpu);
  out += ", \"driver\": " + bench::json_quote(info.driver);
  out += ", \"cuda_runtime\": " + bench::json_quote(info.cuda_runtime);
  out += ", \"cublas\": " + bench::json_quote(info.cublas);
  out += ", \"date\": " + bench::json_quote(info.date);
  out += ", \"host\": " + bench::json_quote(info.host);
  out += ", \"scenario_sha256\": " + (info.scenario_sha256 ? bench::json_quote(*info.scenario_sha256) : std::string("null"));
  out += ",\n\"config\": {";
  for (std::size_t i = 0; i < info.config.size(); ++i) {
    if (i > 0) out += ", ";
    out += bench::json_quote(info.config[i].first) + ": " + info.config[i].second;
  }
  out += "}}}\n";
  return out;
}

}  // namespace ess::runner
