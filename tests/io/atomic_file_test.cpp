#include "sim/io/atomic_file.h"

#include <catch2/catch.hpp>

#include "tests/scratch_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

using ess::ensure_directory;
using ess::OutputError;
using ess::write_file_atomically;
namespace fs = std::filesystem;

using ess::test::ScratchDir;
using ess::test::read_file;

namespace {



// Every entry of `dir` by name, hidden ones included: temporaries start with a dot.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

// The message of the OutputError that `action` throws, or a failed test.
template <typename Action>
std::string output_error_message(Action action) {
  try {
    action();
  } catch (const OutputError& e) {
    return e.what();
  }
  FAIL("no OutputError was thrown");
  return {};
}

}  // namespace

TEST_CASE("write_file_atomically creates the file with exactly the content", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "run.json";
  const std::string content = std::string("{\"a\":1}\n") + std::string(1, '\0') + std::string(100'000, 'x');
  write_file_atomically(target, content);
  CHECK(read_file(target) == content);
  CHECK(listing(dir.path()) == std::set<std::string>{"run.json"});
}

TEST_CASE("write_file_atomically writes an empty file", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "empty.txt";
  write_file_atomically(target, "");
  CHECK(fs::is_regular_file(target));
  CHECK(fs::file_size(target) == 0);
}

TEST_CASE("write_file_atomically replaces an existing file whole", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "out.txt";
  write_file_atomically(target, "a long first version of the content\n");
  write_file_atomically(target, "short\n");
  CHECK(read_file(target) == "short\n");  // no tail of the longer first version
  CHECK(listing(dir.path()) == std::set<std::string>{"out.txt"});
}

TEST_CASE("write_file_atomically into a missing directory throws and creates nothing", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "no-such-dir" / "out.txt";
  const std::string message = output_error_message([&] { write_file_atomically(target, "x"); });
  CHECK_THAT(message, Catch::Contains(target.string()));
  CHECK_THAT(message, Catch::Contains("No such file or directory"));
  CHECK(listing(dir.path()).empty());
}

TEST_CASE("write_file_atomically onto a directory throws and leaves the directory alone", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "results";
  fs::create_directory(target);
  write_file_atomically(target / "inside.txt", "kept");
  const std::string message = output_error_message([&] { write_file_atomically(target, "x"); });
  CHECK_THAT(message, Catch::Contains(target.string()));
  CHECK_THAT(message, Catch::Contains("Is a directory"));
  CHECK(fs::is_directory(target));
  CHECK(read_file(target / "inside.txt") == "kept");
  CHECK(listing(dir.path()) == std::set<std::string>{"results"});  // the temporary was removed
}

TEST_CASE("write_file_atomically rejects a path without a file name", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  CHECK_THROWS_AS(write_file_atomically(dir.path() / "", "x"), OutputError);
  CHECK(listing(dir.path()).empty());
}

TEST_CASE("write_file_atomically into a read-only directory throws and keeps the old file", "[atomic_file]") {
  if (::geteuid() == 0) {
    WARN("skipped: running as root, which ignores directory permissions");
    return;
  }
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "out.txt";
  write_file_atomically(target, "old");
  fs::permissions(dir.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const std::string message = output_error_message([&] { write_file_atomically(target, "new"); });
  fs::permissions(dir.path(), fs::perms::owner_write, fs::perm_options::add);
  CHECK_THAT(message, Catch::Contains(target.string()));
  CHECK_THAT(message, Catch::Contains("Permission denied"));
  CHECK(read_file(target) == "old");
  CHECK(listing(dir.path()) == std::set<std::string>{"out.txt"});
}

TEST_CASE("OutputError carries the path it is about", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path target = dir.path() / "missing" / "x.json";
  try {
    write_file_atomically(target, "x");
    FAIL("no OutputError was thrown");
  } catch (const OutputError& e) {
    CHECK(e.path() == target);
  }
}

TEST_CASE("ensure_directory creates missing parents and accepts an existing directory", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path nested = dir.path() / "a" / "b" / "c";
  ensure_directory(nested);
  CHECK(fs::is_directory(nested));
  ensure_directory(nested);  // already there: no error
  CHECK(fs::is_directory(nested));
}

TEST_CASE("ensure_directory throws when a file is in the way", "[atomic_file]") {
  const ScratchDir dir("ess-io-test");
  const fs::path file = dir.path() / "file";
  write_file_atomically(file, "x");

  const std::string at_file = output_error_message([&] { ensure_directory(file); });
  CHECK_THAT(at_file, Catch::Contains(file.string()));
  CHECK_THAT(at_file, Catch::Contains("Not a directory"));

  const std::string below_file = output_error_message([&] { ensure_directory(file / "sub"); });
  CHECK_THAT(below_file, Catch::Contains((file / "sub").string()));
  CHECK_THAT(below_file, Catch::Contains("Not a directory"));
  CHECK(read_file(file) == "x");
}
