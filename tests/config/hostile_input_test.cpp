// Inputs a careless or hostile user gives the loader: deep nesting, bytes that are not UTF-8,
// numbers beyond a double, files that are not files. Each must be a ConfigError, never a crash.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/scratch_dir.h"
#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/config/scenario.h"
#include "sim/config/utf8.h"
#include "sim/io/read_file.h"

namespace {

const std::string kBase = R"({"model": "llama-2-7b", "hardware": "a100-80gb-sxm",
  "workload": {"batch_per_gpu": 1, "context_length": 4096}})";

std::string nested_objects(std::size_t depth) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s.append(depth, '}');
  return s;
}

}  // namespace

TEST_CASE("JSON nested deeper than the limit is a ConfigError at its pointer, not a stack overflow") {
  // 100k levels inside a section that overrides a preset (merged recursively) and 1M-level arrays.
  const std::string objects = R"({"model": {"preset": "llama-2-7b", "x": )" + nested_objects(100000) + "}}";
  CHECK_THROWS_WITH(ess::load_scenario_text(objects, "deep.json"),
                    Catch::Contains("deeper than 64 levels") && Catch::Contains("/model/x/a/a"));
  const std::string arrays = "{\"model\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  CHECK_THROWS_AS(ess::load_scenario_text(arrays, "deep.json"), ess::ConfigError);
  // The limit itself: 64 levels parse, 65 do not.
  CHECK_NOTHROW(ess::parse_json_text(nested_objects(64), "ok"));
  CHECK_THROWS_AS(ess::parse_json_text(nested_objects(65), "too deep"), ess::ConfigError);
}

TEST_CASE("set overrides are checked like file contents: UTF-8, depth, duplicate keys and number range") {
  CHECK_THROWS_WITH(ess::parse_override("name=\xff"), Catch::Contains("byte 6 is not valid UTF-8"));
  CHECK_THROWS_WITH(ess::parse_override("na\xc3me=1"), Catch::Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(ess::parse_override("model=" + nested_objects(1000)), Catch::Contains("deeper than 64"));
  CHECK_THROWS_WITH(ess::parse_override(R"(model={"preset": "a", "preset": "b"})"), Catch::Contains("duplicate key"));
  // A number beyond a double is not JSON a double can hold: it stays the string "1e400", which
  // the field's own check refuses.
  CHECK_THROWS_WITH(ess::load_scenario_text(kBase, "base.json", {ess::parse_override("seed=1e400")}),
                    Catch::Contains("/seed") && Catch::Contains("1e400"));
  // Still: a value that is not JSON is a bare string, and valid UTF-8 passes.
  CHECK(ess::parse_override("hardware.pcie.h2d_bandwidth=55GB/s").value == "55GB/s");
  CHECK(ess::parse_override("name=d\xc3\xa9j\xc3\xa0").value == "d\xc3\xa9j\xc3\xa0");
}

TEST_CASE("a scenario path that is not UTF-8 loads, and check prints it without failing") {
  ess::test::ScratchDir dir("ess-hostile");
  const auto path = dir.path() / "bad\xff.json";
  std::ofstream(path) << kBase;
  const ess::Scenario s = ess::load_scenario(path.string());
  const std::string printed = ess::format_resolved(s.resolved);
  CHECK_THAT(printed, Catch::Contains("bad\xef\xbf\xbd.json"));  // U+FFFD in place of the byte
}

TEST_CASE("devices, FIFOs and directories are refused as input files instead of read forever") {
  ess::test::ScratchDir dir("ess-hostile");
  CHECK_THROWS_WITH(ess::load_scenario("/dev/zero"), Catch::Contains("not a regular file"));
  const auto fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ess::load_scenario(fifo.string()), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(ess::load_scenario(dir.path().string()), Catch::Contains("is a directory"));
  // The size cap (1 GiB for real inputs; a small one here).
  const auto big = dir.path() / "big.json";
  std::ofstream(big) << std::string(2000, ' ');
  std::string text;
  CHECK(ess::read_whole_file(big, text, 1000) == ess::ReadProblem::too_large);
  CHECK(text.empty());
  CHECK(ess::read_whole_file(big, text, 2000) == ess::ReadProblem::none);
  CHECK(text.size() == 2000);
  CHECK_THAT(ess::describe(ess::ReadProblem::too_large), Catch::Contains("1024 MiB limit"));
}

TEST_CASE("UTF-8 validation follows RFC 3629") {
  CHECK_FALSE(ess::invalid_utf8_at("plain ascii"));
  CHECK_FALSE(ess::invalid_utf8_at("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  CHECK(ess::invalid_utf8_at("ab\xff") == 2u);
  CHECK(ess::invalid_utf8_at("\xc0\xaf") == 0u);          // overlong '/'
  CHECK(ess::invalid_utf8_at("\xed\xa0\x80") == 0u);      // a surrogate
  CHECK(ess::invalid_utf8_at("\xf4\x90\x80\x80") == 0u);  // above U+10FFFF
  CHECK(ess::invalid_utf8_at("x\xe2\x82") == 1u);         // truncated sequence
  CHECK(ess::printable("a\xffz\xc3\xa9") == "a\\xFFz\xc3\xa9");
}
