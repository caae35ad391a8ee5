#include "kernels/runner/trace_file.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/io/atomic_file.h"
#include "tests/scratch_dir.h"

using ess::runner::is_trace_category;
using ess::runner::render_trace;
using ess::runner::TraceEvent;
using ess::runner::TraceInfo;
using ess::write_file_atomically;
using ess::test::read_file;
using ess::test::ScratchDir;

namespace {

TraceInfo info() {
  TraceInfo i;
  i.tool = "ess-runner 0.1.0";
  i.gpu = "NVIDIA H200";
  i.driver = "570.86.15";
  i.cuda_runtime = "13.0";
  i.cublas = "13.1.0";
  i.date = "2025-01-02T03:04:05Z";
  i.host = "gpu-1";
  i.config = {{"layers", "4"}, {"eviction", "\"lru\""}};
  return i;
}

}  // namespace

TEST_CASE("the trace has the documented layout, one event per line") {
  const std::vector<TraceEvent> events{
      {"step", "step", 0, 0.0, 812.5, 0, std::nullopt},
      {"attn_norm", "norm", 0, 3.25, 4.5, 0, 0},
      {"fetch", "transfer", 1, 100.0, 0.1, 0, 3},
      {"lm_head", "gemm", 0, 700.0, 50.0, 0, -1},
  };
  const std::string expected =
      "{\"traceEvents\": [\n"
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \"compute\"}},\n"
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 1, \"args\": {\"name\": \"fetch\"}},\n"
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 2, \"args\": {\"name\": \"writeback\"}},\n"
      "{\"ph\": \"X\", \"name\": \"step\", \"cat\": \"step\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 812.5, \"args\": {\"step\": 0}},\n"
      "{\"ph\": \"X\", \"name\": \"attn_norm\", \"cat\": \"norm\", \"pid\": 0, \"tid\": 0, \"ts\": 3.25, \"dur\": 4.5, \"args\": {\"step\": 0, \"layer\": 0}},\n"
      "{\"ph\": \"X\", \"name\": \"fetch\", \"cat\": \"transfer\", \"pid\": 0, \"tid\": 1, \"ts\": 100, \"dur\": 0.10000000000000001, \"args\": {\"step\": 0, \"layer\": 3}},\n"
      "{\"ph\": \"X\", \"name\": \"lm_head\", \"cat\": \"gemm\", \"pid\": 0, \"tid\": 0, \"ts\": 700, \"dur\": 50, \"args\": {\"step\": 0, \"layer\": -1}}\n"
      "],\n"
      "\"displayTimeUnit\": \"ms\",\n"
      "\"otherData\": {\"format\": \"ess-runner/v1\", \"tool\": \"ess-runner 0.1.0\", \"gpu\": \"NVIDIA H200\", "
      "\"driver\": \"570.86.15\", \"cuda_runtime\": \"13.0\", \"cublas\": \"13.1.0\", \"date\": \"2025-01-02T03:04:05Z\", "
      "\"host\": \"gpu-1\", \"scenario_sha256\": null,\n"
      "\"config\": {\"layers\": 4, \"eviction\": \"lru\"}}}\n";
  CHECK(render_trace(events, info()) == expected);
}

TEST_CASE("an empty trace still has its thread names and no trailing comma") {
  TraceInfo i = info();
  i.scenario_sha256 = "ab";
  const std::string text = render_trace({}, i);
  CHECK(text.find("\"args\": {\"name\": \"writeback\"}}\n],") != std::string::npos);
  CHECK(text.find("\"scenario_sha256\": \"ab\"") != std::string::npos);
}

TEST_CASE("names are escaped in the trace") {
  const std::string text = render_trace({{"a\"b", "gemm", 0, 0.0, 1.0, 2, 1}}, info());
  CHECK(text.find("\"name\": \"a\\\"b\"") != std::string::npos);
}

TEST_CASE("the nine categories are the only ones accepted") {
  for (const char* c : {"gemm", "norm", "indexer", "attention", "elementwise", "transfer", "writeback", "wait", "step"}) {
    CHECK(is_trace_category(c));
  }
  CHECK_FALSE(is_trace_category("transfers"));
  CHECK_FALSE(is_trace_category("exposed"));
  CHECK_THROWS_AS(render_trace({{"x", "collectives", 0, 0.0, 1.0, 0, 0}}, info()), std::invalid_argument);
}

TEST_CASE("bad times and rows are caller bugs") {
  CHECK_THROWS_AS(render_trace({{"x", "gemm", 3, 0.0, 1.0, 0, 0}}, info()), std::invalid_argument);
  CHECK_THROWS_AS(render_trace({{"x", "gemm", 0, 0.0, -1.0, 0, 0}}, info()), std::invalid_argument);
  CHECK_THROWS_AS(render_trace({{"x", "gemm", 0, std::numeric_limits<double>::infinity(), 1.0, 0, 0}}, info()), std::invalid_argument);
}

TEST_CASE("the trace file is written whole through a temporary and replaces an old one") {
  ScratchDir dir("ess-runner-trace");
  const auto path = dir.path() / "t.json";
  write_file_atomically(path, "old");
  write_file_atomically(path, "new text");
  CHECK(read_file(path) == "new text");
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));
}

TEST_CASE("an unwritable trace file names the file and leaves nothing behind") {
  ScratchDir dir("ess-runner-trace");
  const auto path = dir.path() / "missing-dir" / "t.json";
  try {
    write_file_atomically(path, "x");
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
    CHECK(std::string(e.what()).find("No such file or directory") != std::string::npos);
  }
  // The rename fails when the target is a non-empty directory; the temporary goes away.
  const auto blocked = dir.path() / "blocked";
  std::filesystem::create_directories(blocked / "inside");
  CHECK_THROWS_AS(write_file_atomically(blocked, "x"), std::runtime_error);
  CHECK_FALSE(std::filesystem::exists(blocked.string() + ".tmp"));
}
