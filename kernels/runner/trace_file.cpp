#include "kernels/runner/trace_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "kernels/runner/json_out.h"
#include "kernels/runner/version.h"

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
  std::string out = "{\"ph\": \"X\", \"name\": " + json_string(e.name) + ", \"cat\": " + json_string(e.category) +
                    ", \"pid\": 0, \"tid\": " + std::to_string(e.tid) + ", \"ts\": " + json_number(e.ts_us) +
                    ", \"dur\": " + json_number(e.dur_us) + ", \"args\": {\"step\": " + std::to_string(e.step);
  if (e.layer) out += ", \"layer\": " + std::to_string(*e.layer);
  out += "}}";
  return out;
}

}  // namespace

bool is_trace_category(const std::string& category) {
  for (const char* c : {"gemm", "norm", "indexer", "attention", "elementwise", "transfer", "writeback", "wait", "step"}) {
    if (category == c) return true;
  }
  return false;
}

std::string render_trace(const std::vector<TraceEvent>& events, const TraceInfo& info) {
  std::string out = "{\"traceEvents\": [\n";
  for (int tid = kComputeTid; tid <= kWritebackTid; ++tid) {
    out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " + std::to_string(tid) +
           ", \"args\": {\"name\": " + json_string(thread_name(tid)) + "}}";
    out += (tid == kWritebackTid && events.empty()) ? "\n" : ",\n";
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += render_event(events[i]);
    out += i + 1 == events.size() ? "\n" : ",\n";
  }
  out += "],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {";
  out += "\"format\": " + json_string(kTraceFormat);
  out += ", \"tool\": " + json_string(info.tool);
  out += ", \"gpu\": " + json_string(info.gpu);
  out += ", \"driver\": " + json_string(info.driver);
  out += ", \"cuda_runtime\": " + json_string(info.cuda_runtime);
  out += ", \"cublas\": " + json_string(info.cublas);
  out += ", \"date\": " + json_string(info.date);
  out += ", \"host\": " + json_string(info.host);
  out += ", \"scenario_sha256\": " + (info.scenario_sha256 ? json_string(*info.scenario_sha256) : std::string("null"));
  out += ",\n\"config\": {";
  for (std::size_t i = 0; i < info.config.size(); ++i) {
    if (i > 0) out += ", ";
    out += json_string(info.config[i].first) + ": " + info.config[i].second;
  }
  out += "}}}\n";
  return out;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path temp = path.string() + ".tmp";
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  };
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) fail(std::string(std::strerror(errno)) + " (" + temp.string() + ")");
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size() && std::fflush(file) == 0;
  const int write_errno = errno != 0 ? errno : EIO;
  const bool closed = std::fclose(file) == 0;  // always, even after a failed write
  if (!written) fail(std::strerror(write_errno));
  if (!closed) fail(std::strerror(errno != 0 ? errno : EIO));
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) fail(ec.message());
}

}  // namespace ess::runner
