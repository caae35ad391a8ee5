// A run's outputs as one set (sim/io/atomic_file.h): all new files and a manifest, or the old set,
// or none of it; stale temporaries of killed runs cleaned on the next write.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/scratch_dir.h"
#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"

namespace {

int files_in(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// The pid of a process that has exited (and been reaped), so nothing runs under it now.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("an output set is written whole with a manifest of sizes and hashes") {
  ess::test::ScratchDir dir("ess-output-set");
  ess::write_output_set(dir.path(), {{"trace.json", "[1]"}, {"results.json", "{\"a\": 2}\n"}}, "ess-sim test");
  CHECK(ess::test::read_file(dir.path() / "trace.json") == "[1]");
  CHECK(ess::test::read_file(dir.path() / "results.json") == "{\"a\": 2}\n");
  const auto manifest = nlohmann::json::parse(ess::test::read_file(dir.path() / "manifest.json"));
  CHECK(manifest["producer"] == "ess-sim test");
  REQUIRE(manifest["files"].size() == 2);
  CHECK(manifest["files"][0]["name"] == "trace.json");
  CHECK(manifest["files"][0]["bytes"] == 3);
  CHECK(manifest["files"][0]["sha256"] == ess::sha256_hex("[1]"));
  CHECK(files_in(dir.path()) == 3);  // no temporaries left

  // A second set replaces the first whole.
  ess::write_output_set(dir.path(), {{"trace.json", "[]"}, {"results.json", "{}"}}, "ess-sim test");
  CHECK(ess::test::read_file(dir.path() / "trace.json") == "[]");
  CHECK(nlohmann::json::parse(ess::test::read_file(dir.path() / "manifest.json"))["files"][1]["bytes"] == 2);
}

TEST_CASE("a rename that fails half way leaves none of the set, not new files beside old ones") {
  ess::test::ScratchDir dir("ess-output-set");
  ess::write_output_set(dir.path(), {{"trace.json", "old trace"}, {"results.json", "old results"}}, "t");
  // results.json becomes a non-empty directory: the trace's rename succeeds, the results' fails.
  std::filesystem::remove(dir.path() / "results.json");
  std::filesystem::create_directories(dir.path() / "results.json" / "x");
  CHECK_THROWS_WITH(ess::write_output_set(dir.path(), {{"trace.json", "new trace"}, {"results.json", "new"}}, "t"),
                    Catch::Contains("results.json") && Catch::Contains("was removed"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "trace.json"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "manifest.json"));
  CHECK(files_in(dir.path()) == 1);  // only the directory in the way; no temporaries
}

TEST_CASE("a failure before any rename keeps the previous set and its manifest") {
  ess::test::ScratchDir dir("ess-output-set");
  ess::write_output_set(dir.path(), {{"trace.json", "old"}}, "t");
  // A file name that cannot be created (a path through a regular file) fails while writing.
  CHECK_THROWS_AS(ess::write_output_set(dir.path(), {{"trace.json", "new"}, {"trace.json/x", "y"}}, "t"),
                  ess::OutputError);
  CHECK(ess::test::read_file(dir.path() / "trace.json") == "old");
  CHECK(std::filesystem::exists(dir.path() / "manifest.json"));
  CHECK(files_in(dir.path()) == 2);
}

TEST_CASE("temporaries of a killed run are removed, and those of live processes and other files stay") {
  ess::test::ScratchDir dir("ess-output-set");
  const std::string dead = ".trace.json.tmp-" + std::to_string(dead_pid()) + "-0";
  const std::string live = ".trace.json.tmp-" + std::to_string(::getppid()) + "-3";  // the parent runs
  for (const auto& name : {dead, live, std::string(".trace.json.tmp-notapid-1"), std::string("keep.txt")}) {
    std::ofstream(dir.path() / name) << "x";
  }
  CHECK(ess::remove_stale_temporaries(dir.path(), "trace.json") == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path() / dead));
  CHECK(std::filesystem::exists(dir.path() / live));
  CHECK(std::filesystem::exists(dir.path() / ".trace.json.tmp-notapid-1"));
  CHECK(std::filesystem::exists(dir.path() / "keep.txt"));
  // write_output_set cleans them too.
  std::ofstream(dir.path() / dead) << "x";
  ess::write_output_set(dir.path(), {{"trace.json", "t"}}, "t");
  CHECK_FALSE(std::filesystem::exists(dir.path() / dead));
}
