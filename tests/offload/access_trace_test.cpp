#include "sim/offload/access_trace.h"

#include <catch2/catch.hpp>

#include "tests/scratch_dir.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/offload/synthetic_access.h"
#include "sim/base/error.h"

using ess::AccessTraceError;
using ess::ReplayAccess;
using ess::SyntheticAccess;
using ess::SyntheticAccessParams;
using ess::TraceStep;
using Positions = std::vector<std::int64_t>;
namespace fs = std::filesystem;

using ess::test::ScratchDir;
using ess::test::read_file;

namespace {



void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Builds trace files byte by byte, independently of the writer, from the documented format.
struct Bytes {
  std::string s;
  Bytes& raw(const std::string& text) {
    s += text;
    return *this;
  }
  Bytes& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFFU));
    return *this;
  }
  Bytes& varint(std::uint64_t v) {
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
    return *this;
  }
  // Header: magic, version 1, then the four counts.
  Bytes& header(std::uint32_t layers, std::uint32_t requests, std::uint32_t top_k, std::uint32_t steps) {
    return raw("ESS-TOPK").u32(1).u32(layers).u32(requests).u32(top_k).u32(steps);
  }
};

SyntheticAccessParams trace_params() {
  SyntheticAccessParams p;
  p.layers = 3;
  p.top_k = 512;
  p.recent_window = 32;
  p.seed = 7;
  return p;
}

std::vector<TraceStep> trace_steps() {
  std::vector<TraceStep> steps;
  for (int s = -4; s < 6; ++s) steps.push_back({s, 3000 + s});
  return steps;
}

// The error a file's content raises, with its offset; fails the test if it loads.
AccessTraceError load_error(const fs::path& path, const std::string& bytes) {
  write_bytes(path, bytes);
  try {
    ReplayAccess replay(path);
  } catch (const AccessTraceError& e) {
    return e;
  }
  FAIL("the file loaded");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a replayed trace gives exactly the selections of the generator that wrote it") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "trace.bin";
  SyntheticAccess writer(trace_params());
  ess::write_access_trace(file, writer, 3, 2, 512, trace_steps());

  ReplayAccess replay(file);
  CHECK(replay.layers() == 3);
  CHECK(replay.requests() == 2);
  CHECK(replay.top_k() == 512);
  CHECK(replay.steps() == trace_steps());

  SyntheticAccess fresh(trace_params());
  Positions expected;
  Positions got;
  for (const TraceStep& ts : trace_steps()) {
    for (int layer = 0; layer < 3; ++layer) {
      for (int r = 0; r < 2; ++r) {
        fresh.select(ts.step, layer, r, ts.context, expected);
        replay.select(ts.step, layer, r, ts.context, got);
        REQUIRE(got == expected);
      }
    }
  }
  // Replay is random access: a later step first, then an earlier one.
  replay.select(5, 2, 1, 3005, got);
  CHECK(got == expected);
  replay.select(-4, 0, 0, 2996, got);
  SyntheticAccess first(trace_params());
  first.select(-4, 0, 0, 2996, expected);
  CHECK(got == expected);
  // Nothing is left besides the file (the temporary was renamed).
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("a trace takes about a byte per selected entry") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "big.bin";
  SyntheticAccessParams p;  // 32K context, top_k 2048
  p.layers = 2;
  SyntheticAccess model(p);
  ess::write_access_trace(file, model, 2, 2, 2048, {{0, 32768}, {1, 32769}, {2, 32770}});
  const double entries = 3.0 * 2 * 2 * 2048;
  const auto size = static_cast<double>(fs::file_size(file));
  INFO("bytes per entry " << size / entries);
  CHECK(size / entries < 1.3);
}

TEST_CASE("replay refuses lookups that the file does not hold") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "trace.bin";
  SyntheticAccess writer(trace_params());
  ess::write_access_trace(file, writer, 3, 2, 512, trace_steps());
  ReplayAccess replay(file);
  Positions out;
  CHECK_THROWS_WITH(replay.select(6, 0, 0, 3006, out), Catch::Contains("step 6 is not recorded"));
  CHECK_THROWS_WITH(replay.select(0, 3, 0, 3000, out), Catch::Contains("layer 3"));
  CHECK_THROWS_AS(replay.select(0, 0, 2, 3000, out), ess::InputError);
  CHECK_THROWS_WITH(replay.select(0, 0, 0, 3001, out), Catch::Contains("recorded at context 3000"));
}

TEST_CASE("the writer refuses bad arguments, broken models and unwritable paths") {
  ScratchDir dir("ess-offload-test");
  SyntheticAccess model(trace_params());
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "a", model, 0, 1, 512, {{0, 100}}),
                  ess::InternalError);
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "a", model, 1, 1, 0, {{0, 100}}),
                  ess::InternalError);
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "a", model, 1, 1, 512, {{1, 100}, {1, 101}}),
                  ess::InternalError);
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "a", model, 1, 1, 512, {{0, -1}}),
                  ess::InternalError);

  struct Broken final : ess::AccessModel {
    Positions answer;
    void select(int, int, int, std::int64_t, Positions& out) override { out = answer; }
  };
  Broken wrong_size;
  wrong_size.answer = {1, 2};
  CHECK_THROWS_WITH(ess::write_access_trace(dir.path() / "b", wrong_size, 1, 1, 3, {{0, 10}}),
                    Catch::Contains("expected 3"));
  Broken unsorted;
  unsorted.answer = {1, 3, 2};
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "b", unsorted, 1, 1, 3, {{0, 10}}),
                  ess::InternalError);
  Broken outside;
  outside.answer = {1, 2, 10};
  CHECK_THROWS_AS(ess::write_access_trace(dir.path() / "b", outside, 1, 1, 3, {{0, 10}}),
                  ess::InternalError);
  // Nothing was left behind: neither the file nor a temporary.
  CHECK(fs::is_empty(dir.path()));

  const fs::path missing_dir = dir.path() / "no" / "such" / "dir" / "t.bin";
  try {
    ess::write_access_trace(missing_dir, model, 1, 1, 512, {{0, 100}});
    FAIL("wrote into a missing directory");
  } catch (const AccessTraceError& e) {
    CHECK(e.path() == missing_dir);
    CHECK_FALSE(e.offset().has_value());
    CHECK_THAT(e.what(), Catch::Contains("cannot write"));
  }
}

TEST_CASE("a minimal hand-built file loads and replays") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "t.bin";
  // 1 layer, 2 requests, top_k 2, steps -1 (zigzag 1) at context 4 and 2 at context 1.
  Bytes b;
  b.header(1, 2, 2, 2);
  b.varint(1).varint(4);
  b.varint(0).varint(0).varint(2).varint(1).varint(2);  // positions 1, 3
  b.varint(0).varint(1).varint(2).varint(0).varint(1);  // positions 0, 1
  b.varint(4).varint(1);
  b.varint(0).varint(0).varint(1).varint(0);  // min(2, 1) = 1 position: 0
  b.varint(0).varint(1).varint(1).varint(0);
  write_bytes(file, b.s);
  ReplayAccess replay(file);
  CHECK(replay.steps() == std::vector<TraceStep>{{-1, 4}, {2, 1}});
  Positions out;
  replay.select(-1, 0, 0, 4, out);
  CHECK(out == Positions{1, 3});
  replay.select(-1, 0, 1, 4, out);
  CHECK(out == Positions{0, 1});
  replay.select(2, 0, 1, 1, out);
  CHECK(out == Positions{0});
}

TEST_CASE("malformed trace files fail with the file name and the byte offset") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "bad.bin";
  // Offsets: header 0-27; the block starts at 28 with the step (28) and context (29); the record
  // has layer (30), request (31), count (32), first position (33), gap (34).
  auto one_record = [](std::uint64_t layer, std::uint64_t request, std::uint64_t count,
                       std::uint64_t first, std::uint64_t gap) {
    Bytes b;
    b.header(1, 1, 2, 1).varint(0).varint(4);
    b.varint(layer).varint(request).varint(count).varint(first).varint(gap);
    return b.s;
  };
  struct Case {
    const char* name;
    std::string bytes;
    std::uint64_t offset;
    const char* message;
  };
  std::string valid = one_record(0, 0, 2, 1, 2);
  write_bytes(file, valid);
  REQUIRE_NOTHROW(ReplayAccess(file));
  const std::vector<Case> cases{
      {"empty", "", 0, "truncated file: missing the magic"},
      {"bad magic", Bytes().raw("ESS-TOPX").u32(1).s, 0, "bad magic"},
      {"version", Bytes().raw("ESS-TOPK").u32(2).s, 8, "unsupported version 2"},
      {"no layers", Bytes().raw("ESS-TOPK").u32(1).u32(0).s, 12, "layers 0 outside"},
      {"no requests", Bytes().raw("ESS-TOPK").u32(1).u32(1).u32(0).s, 16, "requests 0 outside"},
      {"no top_k", Bytes().raw("ESS-TOPK").u32(1).u32(1).u32(1).u32(0).s, 20, "top_k 0 outside"},
      {"header cut", Bytes().raw("ESS-TOPK").u32(1).u32(1).s, 16, "truncated file: missing requests"},
      {"too many steps", Bytes().header(1, 1, 2, 1000).s, 28, "more than the file can hold"},
      {"position out of range", one_record(0, 0, 2, 1, 5), 34, "position 1 + 5 out of range [0, 4)"},
      {"first position out of range", one_record(0, 0, 2, 4, 1), 33, "position 4 out of range [0, 4)"},
      {"not ascending", one_record(0, 0, 2, 1, 0), 34, "not strictly ascending"},
      {"wrong count", one_record(0, 0, 3, 1, 1), 32, "expected min(top_k, context) = 2"},
      {"layer out of range", one_record(1, 0, 2, 1, 1), 30, "layer 1 out of range [0, 1)"},
      {"request out of range", one_record(0, 2, 2, 1, 1), 31, "request 2 out of range [0, 1)"},
      {"trailing bytes", valid + "x", 35, "1 unexpected bytes after the last step block"},
      {"context too large", Bytes().header(1, 1, 2, 1).varint(0).varint(std::uint64_t{1} << 31).s, 29,
       "context 2147483648 outside"},
      {"varint too long", Bytes().header(1, 1, 2, 1).varint(0).raw(std::string(11, '\xFF')).s, 29,
       "varint too long"},
      {"step beyond 32 bits", Bytes().header(1, 1, 2, 1).varint(std::uint64_t{1} << 33).s, 28,
       "outside the 32-bit range"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const AccessTraceError e = load_error(file, c.bytes);
    CHECK(e.path() == file);
    CHECK(e.offset() == std::optional<std::uint64_t>(c.offset));
    CHECK_THAT(e.message(), Catch::Contains(c.message));
    CHECK_THAT(e.what(), Catch::StartsWith(file.string() + ": byte " + std::to_string(c.offset) + ": "));
  }
}

TEST_CASE("records and steps out of order are refused") {
  ScratchDir dir("ess-offload-test");
  const fs::path file = dir.path() / "order.bin";
  // Two requests: the first record must be (layer 0, request 0).
  Bytes swapped;
  swapped.header(1, 2, 1, 1).varint(0).varint(4);
  swapped.varint(0).varint(1).varint(1).varint(0);
  swapped.varint(0).varint(0).varint(1).varint(0);
  AccessTraceError e = load_error(file, swapped.s);
  CHECK(e.offset() == std::optional<std::uint64_t>(30));
  CHECK_THAT(e.message(), Catch::Contains("out of order"));
  // Steps 3 then 3 (zigzag 6): the second block starts at 28 + 6 bytes.
  Bytes repeated;
  repeated.header(1, 1, 1, 2);
  repeated.varint(6).varint(4).varint(0).varint(0).varint(1).varint(2);
  repeated.varint(6).varint(4).varint(0).varint(0).varint(1).varint(2);
  e = load_error(file, repeated.s);
  CHECK(e.offset() == std::optional<std::uint64_t>(34));
  CHECK_THAT(e.message(), Catch::Contains("step 3 out of order"));
}

TEST_CASE("every truncation of a valid trace is reported as truncated") {
  ScratchDir dir("ess-offload-test");
  const fs::path good = dir.path() / "good.bin";
  SyntheticAccessParams p = trace_params();
  p.layers = 2;
  p.top_k = 40;
  p.recent_window = 4;
  SyntheticAccess model(p);
  ess::write_access_trace(good, model, 2, 2, 40, {{-1, 300}, {0, 301}, {1, 302}});
  const std::string bytes = read_file(good);
  const fs::path cut = dir.path() / "cut.bin";
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("first " << n << " of " << bytes.size() << " bytes");
    const AccessTraceError e = load_error(cut, bytes.substr(0, n));
    CHECK_THAT(e.message(), Catch::Contains("truncated"));
    REQUIRE(e.offset().has_value());
    CHECK(*e.offset() <= n);
  }
}

TEST_CASE("a missing file is reported without an offset") {
  const fs::path missing = fs::temp_directory_path() / "ess-offload-no-such-trace.bin";
  try {
    ReplayAccess replay(missing);
    FAIL("opened a missing file");
  } catch (const AccessTraceError& e) {
    CHECK_FALSE(e.offset().has_value());
    CHECK_THAT(e.what(), Catch::Contains("ess-offload-no-such-trace.bin: no such file"));
  }
}
