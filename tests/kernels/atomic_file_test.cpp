// ess-bench's output is written whole or not at all (kernels/bench/atomic_file.h).
#include "kernels/bench/atomic_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/scratch_dir.h"

namespace fs = std::filesystem;
using ess::test::read_file;
using ess::test::ScratchDir;

TEST_CASE("atomic file: writes the content and leaves no temporary file", "[kernels][atomic]") {
  const ScratchDir dir("ess-bench-atomic");
  const fs::path out = dir.path() / "m.json";
  ess::bench::write_file_atomically(out, "first, longer content\n");
  CHECK(read_file(out) == "first, longer content\n");
  // a shorter rewrite replaces the file whole (no tail of the old content)
  ess::bench::write_file_atomically(out, "second\n");
  CHECK(read_file(out) == "second\n");
  CHECK_FALSE(fs::exists(dir.path() / "m.json.tmp"));
}

TEST_CASE("atomic file: an unwritable place throws and creates nothing", "[kernels][atomic][errors]") {
  const ScratchDir dir("ess-bench-atomic");
  const fs::path out = dir.path() / "missing" / "m.json";
  CHECK_THROWS_AS(ess::bench::write_file_atomically(out, "x"), std::runtime_error);
  CHECK_THROWS_WITH(ess::bench::write_file_atomically(out, "x"),
                    Catch::Contains("cannot create " + (dir.path() / "missing" / "m.json.tmp").string()) &&
                        Catch::Contains("No such file or directory"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("atomic file: a failed rename removes the temporary file", "[kernels][atomic][errors]") {
  const ScratchDir dir("ess-bench-atomic");
  // The target is a non-empty directory: the temporary file is written, the rename fails.
  const fs::path out = dir.path() / "taken";
  fs::create_directories(out / "inside");
  CHECK_THROWS_AS(ess::bench::write_file_atomically(out, "x"), std::runtime_error);
  CHECK_THROWS_WITH(ess::bench::write_file_atomically(out, "x"), Catch::Contains("cannot rename"));
  CHECK_FALSE(fs::exists(dir.path() / "taken.tmp"));
  CHECK(fs::is_directory(out / "inside"));
}

TEST_CASE("atomic file: the writability check creates nothing and keeps an old file", "[kernels][atomic]") {
  const ScratchDir dir("ess-bench-atomic");
  const fs::path out = dir.path() / "m.json";
  ess::bench::write_file_atomically(out, "previous run\n");
  ess::bench::check_writable(out);
  CHECK(read_file(out) == "previous run\n");
  CHECK_FALSE(fs::exists(dir.path() / "m.json.tmp"));
  ess::bench::check_writable(dir.path() / "new.json");
  CHECK_FALSE(fs::exists(dir.path() / "new.json"));
  CHECK_THROWS_WITH(ess::bench::check_writable(dir.path() / "missing" / "m.json"),
                    Catch::Contains("cannot create"));
}
