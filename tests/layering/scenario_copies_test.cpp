// A loaded Scenario is never copied to be edited and simulated: a run that differs from its
// scenario is a run request (sim/config/run_request.h). This scans the sources for a Scenario
// variable initialised from another one, the way such copies start.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

// "file:line: text" of every `Scenario name = other;`, `Scenario name(other);` or
// `Scenario name{other};` under `root`'s sim/, validate/ and calibration/ sources (a load or a
// function call on the right is not a copy of a loaded scenario).
std::vector<std::string> scenario_copies(const fs::path& root) {
  static const std::regex copy(R"(\bScenario\s+\w+\s*(=\s*\*?[A-Za-z_][\w.>-]*\s*;|\(\s*\*?[A-Za-z_][\w.>-]*\s*\)\s*;|\{\s*\*?[A-Za-z_][\w.>-]*\s*\}\s*;))");
  std::vector<std::string> out;
  for (const char* top : {"sim", "validate", "calibration"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (std::regex_search(line, copy)) {
          out.push_back(fs::relative(entry.path(), root).generic_string() + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  return out;
}


}  // namespace

TEST_CASE("no source copies a loaded Scenario to edit it (runs are requests: sim/config/run_request.h)") {
  const auto copies = scenario_copies(ESS_SOURCE_DIR);
  for (const auto& c : copies) UNSCOPED_INFO(c);
  CHECK(copies.empty());
}

TEST_CASE("a planted Scenario copy is found, and loads and references are not copies") {
  const ess::test::ScratchDir dir("scenario-copies");
  ess::test::write_text(dir.path() / "sim/serving/a.cpp",
             "const Scenario s = load_scenario(path);\n"
             "const Scenario& ref = s;\n"
             "Scenario probe = s;\n"
             "  Scenario at(*base);\n"
             "Scenario t{other.x};\n");
  const auto copies = scenario_copies(dir.path());
  REQUIRE(copies.size() == 3);
  CHECK(copies[0] == "sim/serving/a.cpp:3: Scenario probe = s;");
  CHECK(copies[1] == "sim/serving/a.cpp:4:   Scenario at(*base);");
  CHECK(copies[2] == "sim/serving/a.cpp:5: Scenario t{other.x};");
}
