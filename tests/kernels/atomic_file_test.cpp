// ess-bench checks that its output can be written before it measures (kernels/bench/atomic_file.h);
// the write itself is the simulator's (sim/io/atomic_file.h, tested in tests/io/).
#include "kernels/bench/atomic_file.h"
#include "sim/io/atomic_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/scratch_dir.h"

namespace fs = std::filesystem;
using ess::test::read_file;
using ess::test::ScratchDir;

TEST_CASE("atomic file: the writability check creates nothing and keeps an old file", "[kernels][atomic]") {
  const ScratchDir dir("ess-bench-atomic");
  const fs::path out = dir.path() / "m.json";
  ess::write_file_atomically(out, "previous run\n");
  ess::bench::check_writable(out);
  CHECK(read_file(out) == "previous run\n");
  CHECK_FALSE(fs::exists(dir.path() / "m.json.tmp"));
  ess::bench::check_writable(dir.path() / "new.json");
  CHECK_FALSE(fs::exists(dir.path() / "new.json"));
  CHECK_THROWS_WITH(ess::bench::check_writable(dir.path() / "missing" / "m.json"),
                    Catch::Contains("cannot create"));
}
