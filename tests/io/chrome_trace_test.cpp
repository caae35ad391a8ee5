#include "sim/io/chrome_trace.h"
#include "sim/base/error.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

using ess::ChromeTrace;
using ess::TraceTrack;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

json parse(const ChromeTrace& trace) { return json::parse(trace.to_json()); }

// The trace's events with phase `ph`, in file order.
std::vector<json> events_with_phase(const json& doc, const std::string& ph) {
  std::vector<json> found;
  for (const json& event : doc.at("traceEvents")) {
    if (event.at("ph") == ph) found.push_back(event);
  }
  return found;
}

// The one X event of a trace.
json only_slice(const ChromeTrace& trace) {
  const std::vector<json> slices = events_with_phase(parse(trace), "X");
  REQUIRE(slices.size() == 1);
  return slices.front();
}

// A small trace like a simulation would write: two GPUs, streams and links, a counter.
ChromeTrace sample_trace() {
  ChromeTrace trace;
  const TraceTrack compute = trace.track("GPU 0", "compute");
  const TraceTrack h2d = trace.track("GPU 0", "h2d copy");
  const TraceTrack gpu1 = trace.track("GPU 1", "compute");
  trace.set_metadata("scenario", "dsv32-baseline-32k");
  trace.slice(compute, "attention", "kernel", 0.0, 12.5e-6, {{"layer", 3}});
  trace.slice(h2d, "fetch latents", "copy", 2e-6, 40e-6, {{"bytes", 1 << 20}});
  trace.counter("PCIe", "bandwidth", 2e-6, {{"h2d GB/s", 26.2}});
  trace.slice(gpu1, "attention", "kernel", 0.0, 12.5e-6);
  trace.slice(compute, "mlp", "kernel", 12.5e-6, 30e-6);
  trace.set_metadata("seed", 42);
  return trace;
}

}  // namespace

TEST_CASE("chrome trace output is a JSON object with the format's top-level keys", "[chrome_trace]") {
  const json doc = parse(sample_trace());
  REQUIRE(doc.is_object());
  CHECK(doc.at("traceEvents").is_array());
  CHECK(doc.at("displayTimeUnit") == "ns");
  CHECK(doc.at("metadata") == json({{"scenario", "dsv32-baseline-32k"}, {"seed", 42}}));
}

TEST_CASE("an empty chrome trace is still valid JSON", "[chrome_trace]") {
  const ChromeTrace trace;
  const json doc = parse(trace);
  CHECK(doc.at("traceEvents").empty());
  CHECK(doc.at("metadata").is_object());
  CHECK(trace.slice_count() == 0);
}

TEST_CASE("tracks get pids and trace-wide unique tids in order of first use, the same names the same track",
          "[chrome_trace]") {
  ChromeTrace trace;
  const TraceTrack a = trace.track("GPU 0", "compute");
  const TraceTrack b = trace.track("GPU 0", "h2d copy");
  const TraceTrack c = trace.track("NVLink", "gpu0->gpu1");
  const TraceTrack d = trace.track("GPU 1", "compute");
  const TraceTrack a_again = trace.track("GPU 0", "compute");
  CHECK(std::pair(a.pid, a.tid) == std::pair(1, 1));
  CHECK(std::pair(b.pid, b.tid) == std::pair(1, 2));
  // tids are unique across processes (older Perfetto matched thread names by tid alone).
  CHECK(std::pair(c.pid, c.tid) == std::pair(2, 3));
  CHECK(std::pair(d.pid, d.tid) == std::pair(3, 4));
  CHECK(a_again == a);
}

TEST_CASE("every slice's pid and tid have name and sort-index metadata", "[chrome_trace]") {
  const json doc = parse(sample_trace());
  std::set<std::pair<int, std::string>> process_meta;                // (pid, metadata name)
  std::set<std::pair<std::pair<int, int>, std::string>> thread_meta;  // ((pid, tid), metadata name)
  for (const json& event : events_with_phase(doc, "M")) {
    const std::string name = event.at("name");
    if (event.contains("tid")) {
      thread_meta.insert({{event.at("pid").get<int>(), event.at("tid").get<int>()}, name});
    } else {
      process_meta.insert({event.at("pid").get<int>(), name});
    }
  }
  const std::vector<json> slices = events_with_phase(doc, "X");
  REQUIRE(slices.size() == 4);
  for (const json& slice : slices) {
    const int pid = slice.at("pid");
    const int tid = slice.at("tid");
    INFO("slice " << slice.dump());
    CHECK(process_meta.count({pid, "process_name"}) == 1);
    CHECK(process_meta.count({pid, "process_sort_index"}) == 1);
    CHECK(thread_meta.count({{pid, tid}, "thread_name"}) == 1);
    CHECK(thread_meta.count({{pid, tid}, "thread_sort_index"}) == 1);
  }
  // The counter-only process is named too.
  CHECK(process_meta.count({3, "process_name"}) == 1);
}

TEST_CASE("metadata events carry the names and sort indices the viewer shows", "[chrome_trace]") {
  ChromeTrace trace;
  trace.track("GPU 0", "compute");
  trace.track("GPU 0", "h2d copy");
  const std::vector<json> meta = events_with_phase(parse(trace), "M");
  const std::vector<json> expected = {
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "GPU 0"}}}},
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", 1}, {"args", {{"sort_index", 1}}}},
      {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "compute"}}}},
      {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 1}, {"tid", 1}, {"args", {{"sort_index", 1}}}},
      {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", "h2d copy"}}}},
      {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 1}, {"tid", 2}, {"args", {{"sort_index", 2}}}},
  };
  CHECK(meta == expected);
}

TEST_CASE("slice times are written in microseconds", "[chrome_trace]") {
  ChromeTrace trace;
  trace.slice(trace.track("GPU 0", "compute"), "gemm", "kernel", 1.5e-6, 2.5e-3);
  const json slice = only_slice(trace);
  CHECK(slice.at("ts").get<double>() == 1.5);     // 1.5e-6 s = 1.5 us
  CHECK(slice.at("dur").get<double>() == 2500.0);  // 2.5e-3 s = 2500 us
  // As text too: the short decimal, not 1.4999999999999998 from 1.5e-6 * 1e6.
  CHECK_THAT(trace.to_json(), Catch::Contains("\"ts\":1.5,"));
}

TEST_CASE("slice times keep nanoseconds, even late in a long run", "[chrome_trace]") {
  ChromeTrace trace;
  const TraceTrack t = trace.track("GPU 0", "compute");
  trace.slice(t, "a", "kernel", 1e-9, 1e-9);                  // 1 ns at 1 ns
  trace.slice(t, "b", "kernel", 3600.000000001, 0.000000003);  // 3 ns one hour in
  const std::vector<json> slices = events_with_phase(parse(trace), "X");
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].at("ts").get<double>() == 0.001);
  CHECK(slices[0].at("dur").get<double>() == 0.001);
  CHECK(slices[1].at("ts").get<double>() == 3600000000.001);
  CHECK(slices[1].at("dur").get<double>() == Approx(0.003).margin(1e-9));
}

TEST_CASE("back-to-back slices touch exactly after conversion", "[chrome_trace]") {
  // 0.1 + 0.2 != 0.3 in binary; the second slice must still start where the first ends.
  ChromeTrace trace;
  const TraceTrack t = trace.track("GPU 0", "compute");
  trace.slice(t, "first", "kernel", 0.1e-6, 0.2e-6);
  trace.slice(t, "second", "kernel", 0.3e-6, 0.1e-6);
  const std::vector<json> slices = events_with_phase(parse(trace), "X");
  REQUIRE(slices.size() == 2);
  // The decimals written are exact to the picosecond: 0.1 + 0.2 = 0.3 us, as a viewer adding them
  // in integer nanoseconds or picoseconds sees it.
  CHECK(slices[0].at("ts").get<double>() == 0.1);
  CHECK(slices[0].at("dur").get<double>() == 0.2);
  CHECK(slices[1].at("ts").get<double>() == 0.3);
  const auto picoseconds = [](const json& us) { return std::llround(us.get<double>() * 1e6); };
  CHECK(picoseconds(slices[0].at("ts")) + picoseconds(slices[0].at("dur")) == picoseconds(slices[1].at("ts")));
}

TEST_CASE("a slice with zero duration is allowed", "[chrome_trace]") {
  ChromeTrace trace;
  trace.slice(trace.track("GPU 0", "compute"), "marker", "event", 5e-6, 0.0);
  const json slice = only_slice(trace);
  CHECK(slice.at("dur").get<double>() == 0.0);
  CHECK(trace.slice_count() == 1);
}

TEST_CASE("slice args are written when given and omitted when null", "[chrome_trace]") {
  ChromeTrace trace;
  const TraceTrack t = trace.track("GPU 0", "compute");
  trace.slice(t, "with", "kernel", 0.0, 1e-6, {{"bytes", 4096}, {"layer", "l3"}});
  trace.slice(t, "without", "kernel", 1e-6, 1e-6);
  const std::vector<json> slices = events_with_phase(parse(trace), "X");
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].at("args") == json({{"bytes", 4096}, {"layer", "l3"}}));
  CHECK(slices[0].at("cat") == "kernel");
  CHECK_FALSE(slices[1].contains("args"));
}

TEST_CASE("invalid slice times, tracks and args throw InternalError", "[chrome_trace]") {
  ChromeTrace trace;
  const TraceTrack t = trace.track("GPU 0", "compute");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(trace.slice(t, "x", "k", -1e-9, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", 0.0, -1e-9), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", nan, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", 0.0, nan), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", inf, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", 0.0, inf), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", 1e300, 1e-6), ess::InternalError);  // overflows picoseconds
  CHECK_THROWS_AS(trace.slice(TraceTrack{1, 2}, "x", "k", 0.0, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(TraceTrack{2, 1}, "x", "k", 0.0, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(TraceTrack{0, 0}, "x", "k", 0.0, 1e-6), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "x", "k", 0.0, 1e-6, ordered_json::array({1, 2})), ess::InternalError);
  CHECK_THROWS_AS(trace.slice(t, "\xff", "k", 0.0, 1e-6), ess::InternalError);  // not UTF-8
  CHECK_THROWS_AS(trace.track("GPU \xc3", "compute"), ess::InternalError);
  // Nothing was recorded by the failed calls, and the trace still serializes.
  CHECK(trace.slice_count() == 0);
  CHECK(events_with_phase(parse(trace), "X").empty());
}

TEST_CASE("counters are written with their values and invalid ones throw", "[chrome_trace]") {
  ChromeTrace trace;
  trace.counter("PCIe", "bandwidth", 3e-6, {{"h2d", 25.0}, {"d2h", 1}});
  const std::vector<json> counters = events_with_phase(parse(trace), "C");
  REQUIRE(counters.size() == 1);
  CHECK(counters[0].at("name") == "bandwidth");
  CHECK(counters[0].at("pid") == 1);
  CHECK(counters[0].at("ts").get<double>() == 3.0);
  CHECK(counters[0].at("args") == json({{"h2d", 25.0}, {"d2h", 1}}));
  CHECK(trace.slice_count() == 0);  // counters are not slices

  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", -1.0, {{"h2d", 1}}), ess::InternalError);
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", nan, {{"h2d", 1}}), ess::InternalError);
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", 0.0, {{"h2d", nan}}), ess::InternalError);
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", 0.0, {{"h2d", "fast"}}), ess::InternalError);
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", 0.0, ordered_json::object()), ess::InternalError);
  CHECK_THROWS_AS(trace.counter("PCIe", "bw", 0.0, 5), ess::InternalError);
  CHECK(events_with_phase(parse(trace), "C").size() == 1);
}

TEST_CASE("parsed back, slices and counters appear in the order they were added", "[chrome_trace]") {
  const json doc = parse(sample_trace());
  std::vector<std::string> order;
  bool past_metadata = false;
  for (const json& event : doc.at("traceEvents")) {
    if (event.at("ph") == "M") {
      CHECK_FALSE(past_metadata);  // all metadata comes first
      continue;
    }
    past_metadata = true;
    order.push_back(event.at("ph").get<std::string>() + " " + event.at("name").get<std::string>() + " " +
                    std::to_string(event.at("pid").get<int>()));
  }
  const std::vector<std::string> expected = {"X attention 1", "X fetch latents 1", "C bandwidth 3", "X attention 2",
                                             "X mlp 1"};
  CHECK(order == expected);
  CHECK(sample_trace().slice_count() == 4);
}

TEST_CASE("the same calls give byte-identical text", "[chrome_trace]") {
  const std::string first = sample_trace().to_json();
  const std::string second = sample_trace().to_json();
  CHECK(first == second);
  const ChromeTrace trace = sample_trace();
  CHECK(trace.to_json() == trace.to_json());  // and to_json does not change the trace
}

TEST_CASE("setting a metadata key again replaces it in place", "[chrome_trace]") {
  ChromeTrace trace;
  trace.set_metadata("a", 1);
  trace.set_metadata("b", 2);
  trace.set_metadata("a", "one");
  CHECK_THAT(trace.to_json(), Catch::Contains("\"metadata\":{\"a\":\"one\",\"b\":2}"));
}
