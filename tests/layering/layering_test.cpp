// The source tree keeps README.md's layers; planted violations of each kind are reported.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/layering/layering_check.h"
#include "tests/scratch_dir.h"

namespace fs = std::filesystem;
using ess::layering::check_layers;

namespace {


// A two-layer house: sim/base below models, models' library links nothing of ours.
void small_house(const fs::path& root, const std::string& extra_rows = "") {
  ess::test::write_text(root / "README.md",
             "# x\n<!-- layers -->\n| folder | layer | library | may include |\n|---|---|---|---|\n"
             "| `sim/base` | 1 | (headers only) | nothing |\n"
             "| `models` | 2 | `ess_models` | `sim/base` |\n" +
                 extra_rows +
                 "\nSimGrid headers: `sim/engine/platform.cpp`\n<!-- end of layers -->\n");
  ess::test::write_text(root / "sim/base/error.h", "#pragma once\n#include <string>\n");
  ess::test::write_text(root / "models/gemm.h", "#pragma once\n#include \"sim/base/error.h\"\n#include \"gemm_table.h\"\n");
  ess::test::write_text(root / "models/gemm_table.h", "#pragma once\n");
  ess::test::write_text(root / "models/CMakeLists.txt", "add_library(ess_models STATIC gemm.cpp)\n"
                                             "target_link_libraries(ess_models PRIVATE ess_warnings)\n");
}

}  // namespace

TEST_CASE("the source tree keeps README.md's layers (README \"Layers\")") {
  const auto violations = check_layers(ESS_SOURCE_DIR);
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}

TEST_CASE("a house that keeps its layers passes") {
  const ess::test::ScratchDir dir("layering");
  small_house(dir.path());
  CHECK(check_layers(dir.path()).empty());
}

TEST_CASE("a planted include up the layers is reported with what the folder may include") {
  const ess::test::ScratchDir dir("layering");
  small_house(dir.path());
  ess::test::write_text(dir.path() / "sim/base/rng.h", "#pragma once\n\n#include \"models/gemm.h\"\n");
  const auto violations = check_layers(dir.path());
  REQUIRE(violations.size() == 1);
  CHECK(violations[0] == "sim/base/rng.h:3 includes models/gemm.h: sim/base (layer 1) may include nothing");
}

TEST_CASE("a planted link against the layers is reported") {
  const ess::test::ScratchDir dir("layering");
  small_house(dir.path(), "| `sim/io` | 1 | `ess_io` | `sim/base` |\n");
  ess::test::write_text(dir.path() / "sim/io/CMakeLists.txt", "add_library(ess_io STATIC a.cpp)\n"
                                                   "target_link_libraries(ess_io\n  PUBLIC ess_models)\n");
  const auto violations = check_layers(dir.path());
  REQUIRE(violations.size() == 1);
  CHECK(violations[0] == "sim/io/CMakeLists.txt:2: ess_io links ess_models (models): sim/io (layer 1) may include sim/base");
}

TEST_CASE("SimGrid outside its files, a folder or library the table lacks, are reported") {
  const ess::test::ScratchDir dir("layering");
  small_house(dir.path());
  ess::test::write_text(dir.path() / "models/alltoall.cpp", "#include <simgrid/s4u/Engine.hpp>\n");
  ess::test::write_text(dir.path() / "sim/newroom/x.h", "#pragma once\n");
  ess::test::write_text(dir.path() / "models/more.cmake", "target_link_libraries(ess_models PUBLIC ess_unknown)\n");
  const auto violations = check_layers(dir.path());
  REQUIRE(violations.size() == 3);
  CHECK(violations[0] == "sim/newroom/x.h: folder sim/newroom is not in README.md's layer table");
  CHECK(violations[1] == "models/alltoall.cpp:1 includes a SimGrid header: only the table's SimGrid files may");
  CHECK(violations[2] == "models/more.cmake:1: ess_models links ess_unknown, which is not in README.md's layer table");
}

TEST_CASE("a table that allows a cycle or an include up the layers is refused") {
  const ess::test::ScratchDir dir("layering");
  small_house(dir.path(), "| `sim/io` | 2 | `ess_io` | `sim/config` |\n| `sim/config` | 2 | `ess_config` | `sim/io` |\n");
  CHECK_THROWS_WITH(check_layers(dir.path()), Catch::Contains("the table allows a cycle: sim/config -> sim/io -> sim/config"));
  small_house(dir.path(), "| `sim/io` | 1 | `ess_io` | `models` |\n");
  CHECK_THROWS_WITH(check_layers(dir.path()), "sim/io (layer 1) may include models of layer 2: a folder includes only its own layer or lower");
  ess::test::write_text(dir.path() / "README.md", "no table here\n");
  CHECK_THROWS_WITH(check_layers(dir.path()), Catch::Contains("README.md has no layer table"));
}

namespace {

// The folders under `dir` that have no row "| `NAME/` |" in the markdown page `page`.
std::vector<std::string> folders_without_row(const fs::path& dir, const fs::path& page) {
  std::ifstream in(page);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> missing;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    if (text.find("| `" + name + "/` |") == std::string::npos) missing.push_back(name);
  }
  return missing;
}

}  // namespace

TEST_CASE("every test area has a row in tests/README.md, and every top-level folder one in README.md") {
  const fs::path root(ESS_SOURCE_DIR);
  CHECK(folders_without_row(root / "tests", root / "tests" / "README.md").empty());
  std::vector<std::string> top;
  for (const char* folder : {"models", "sim", "scenarios", "calibration", "kernels", "validate", "tests"}) {
    std::ifstream in(root / "README.md");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("| `" + std::string(folder) + "/` |") == std::string::npos) top.push_back(folder);
  }
  CHECK(top.empty());
  // It can fail: a planted folder with no row is named.
  const ess::test::ScratchDir scratch("layering-rows");
  ess::test::write_text(scratch.path() / "area" / "new" / "x_test.cpp", "");
  ess::test::write_text(scratch.path() / "README.md", "| `old/` | x |\n");
  CHECK(folders_without_row(scratch.path() / "area", scratch.path() / "README.md") == std::vector<std::string>{"new"});
}
