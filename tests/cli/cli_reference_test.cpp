// sim/cli/README.md is the command-line reference: every subcommand and `cost` operation that
// `--help` lists is documented there, and it documents none that does not exist (it once listed a
// `cost p2p` and missed `cost routing` and `cost prefill`).
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sim/io/read_file.h"
#include "tests/cli/cli_run.h"

namespace {

// The names under "Subcommands:" in a CLI11 help text.
std::set<std::string> subcommands(const std::string& help) {
  std::set<std::string> out;
  std::istringstream in(help.substr(help.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(^  ([a-z][a-z0-9-]*)\s)"))) out.insert(m[1]);
  }
  return out;
}

// The words after `prefix` wherever the page writes it (e.g. "ess-sim cost " -> "gemm").
std::set<std::string> documented(const std::string& page, const std::string& prefix) {
  std::set<std::string> out;
  const std::regex word(prefix + R"(([a-z][a-z0-9-]*))");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), word); it != std::sregex_iterator(); ++it) out.insert((*it)[1]);
  return out;
}

std::string reference() {
  std::string page;
  REQUIRE(ess::read_whole_file(std::string(ESS_SOURCE_DIR) + "/sim/cli/README.md", page) == ess::ReadProblem::none);
  return page;
}

// Each of `existing` is written after `prefix` on the page, and the page writes nothing else there.
void same_names(const std::set<std::string>& existing, const std::string& prefix) {
  const auto written = documented(reference(), prefix);
  for (const auto& e : existing) {
    INFO(prefix << e);
    CHECK(written.count(e) == 1);
  }
  for (const auto& w : written) {
    INFO("sim/cli/README.md names " << prefix << w);
    CHECK(existing.count(w) == 1);
  }
}

}  // namespace

TEST_CASE("sim/cli/README.md documents every subcommand --help lists, and no other", "[cli][readme]") {
  const auto help = ess::test::run_cli({"--help"});
  REQUIRE(help.code == 0);
  const auto commands = subcommands(help.out);
  REQUIRE(commands.size() > 10);
  same_names(commands, "ess-sim ");
}

TEST_CASE("sim/cli/README.md documents every cost operation, and no other", "[cli][readme]") {
  const auto help = ess::test::run_cli({"cost", "--help"});
  REQUIRE(help.code == 0);
  const auto operations = subcommands(help.out);
  REQUIRE(operations.count("routing") == 1);
  same_names(operations, "ess-sim cost ");
}

TEST_CASE("the reference check fails on a page that names a command that does not exist", "[cli][readme]") {
  const auto written = documented("ess-sim cost p2p --bytes 1\\ness-sim cost gemm", "ess-sim cost ");
  CHECK(written == std::set<std::string>{"p2p", "gemm"});
  const auto help = ess::test::run_cli({"cost", "--help"});
  CHECK(subcommands(help.out).count("p2p") == 0);
}
