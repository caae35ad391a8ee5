// The command outputs README.md quotes are what the commands print: every fenced block marked
// `<!-- output of: ess-sim ARGS -->` is compared with the output of ARGS, run in-process. Only
// cheap commands may be quoted this way (cost, presets, policies, check). Numbers are compared
// within 0.2% (the README is written on one machine, the test runs on any), the words exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "sim/io/read_file.h"
#include "tests/cli/cli_run.h"

namespace readme_outputs {

struct QuotedOutput {
  std::size_t line = 0;  // of the marker, 1-based
  std::vector<std::string> args;
  std::string text;  // the fenced block, each line ending in '\n'
};

constexpr const char* kMarker = "<!-- output of: ess-sim ";

std::vector<QuotedOutput> quoted_outputs(const std::string& markdown) {
  const auto lines = ess::test::lines_of(markdown);
  std::vector<QuotedOutput> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(kMarker, 0) != 0) continue;
    QuotedOutput q;
    q.line = i + 1;
    std::string command = lines[i].substr(std::string(kMarker).size());
    const auto end = command.rfind("-->");
    if (end != std::string::npos) command = command.substr(0, end);
    std::istringstream words(command);
    for (std::string w; words >> w;) q.args.push_back(w);
    if (i + 1 < lines.size() && lines[i + 1] == "```") {
      for (std::size_t j = i + 2; j < lines.size() && lines[j] != "```"; ++j) q.text += lines[j] + "\n";
    }
    out.push_back(std::move(q));
  }
  return out;
}

// Text split into its words (between numbers) and its numbers: "52.62 us" -> {"", " us"}, {52.62}.
struct Tokens {
  std::vector<std::string> words;  // one more than numbers
  std::vector<std::string> numbers;
};

Tokens tokens_of(const std::string& text) {
  Tokens t;
  std::string word;
  std::size_t i = 0;
  const auto digit = [&](std::size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  while (i < text.size()) {
    if (!digit(i)) {
      word += text[i++];
      continue;
    }
    std::size_t j = i;
    while (digit(j)) ++j;
    if (j < text.size() && text[j] == '.' && digit(j + 1)) {
      ++j;
      while (digit(j)) ++j;
    }
    t.words.push_back(word);
    word.clear();
    t.numbers.push_back(text.substr(i, j - i));
    i = j;
  }
  t.words.push_back(word);
  return t;
}

// "" when `printed` matches `quoted` (numbers within 0.2%, everything else exactly), else the first
// difference.
std::string difference(const std::string& quoted, const std::string& printed) {
  const Tokens q = tokens_of(quoted);
  const Tokens p = tokens_of(printed);
  if (q.numbers.size() != p.numbers.size()) return "a different count of numbers";
  for (std::size_t i = 0; i < q.words.size(); ++i) {
    if (q.words[i] != p.words[i]) return "quoted \"" + q.words[i] + "\", printed \"" + p.words[i] + "\"";
    if (i == q.numbers.size()) break;
    const double a = std::strtod(q.numbers[i].c_str(), nullptr);
    const double b = std::strtod(p.numbers[i].c_str(), nullptr);
    if (std::abs(a - b) > 2e-3 * std::max(std::abs(a), std::abs(b))) {
      return "quoted " + q.numbers[i] + ", printed " + p.numbers[i] + " after \"" + q.words[i] + "\"";
    }
  }
  return "";
}

bool cheap(const std::vector<std::string>& args) {
  return !args.empty() && (args[0] == "cost" || args[0] == "presets" || args[0] == "policies" || args[0] == "check");
}

}  // namespace readme_outputs

TEST_CASE("every command output README.md quotes is what the command prints", "[cli][readme]") {
  // The top-level README and the command-line reference it sends readers to.
  std::size_t blocks = 0;
  for (const char* page : {"README.md", "sim/cli/README.md"}) {
    std::string markdown;
    REQUIRE(ess::read_whole_file(std::string(ESS_SOURCE_DIR) + "/" + page, markdown) == ess::ReadProblem::none);
    const auto quoted = readme_outputs::quoted_outputs(markdown);
    blocks += quoted.size();
    for (const auto& q : quoted) {
      INFO(page << " line " << q.line);
      REQUIRE(readme_outputs::cheap(q.args));
      REQUIRE_FALSE(q.text.empty());
      const auto r = ess::test::run_cli(q.args);
      REQUIRE(r.code == 0);
      const std::string d = readme_outputs::difference(q.text, r.out);
      INFO(d);
      CHECK(d.empty());
    }
  }
  CHECK(blocks > 0);  // the reference quotes at least the cost attention example
}

TEST_CASE("a quoted output that differs from the command's is reported", "[cli][readme]") {
  const std::string printed = "  time      52.62 us  (compute-bound)\n  overhead  2 us\n";
  CHECK(readme_outputs::difference(printed, printed).empty());
  CHECK(readme_outputs::difference("  time      52.65 us  (compute-bound)\n  overhead  2 us\n", printed).empty());  // within 0.2%
  CHECK_FALSE(readme_outputs::difference("  time      53.62 us  (compute-bound)\n  overhead  2 us\n", printed).empty());
  CHECK_FALSE(readme_outputs::difference("  time      52.62 us  (memory-bound)\n  overhead  2 us\n", printed).empty());
  CHECK_FALSE(readme_outputs::difference("  time      52.62 us  (compute-bound)\n", printed).empty());
  const auto q = readme_outputs::quoted_outputs("text\n<!-- output of: ess-sim cost gemm --m 1 -->\n```\nA 1\n```\n");
  REQUIRE(q.size() == 1);
  CHECK(q[0].args == std::vector<std::string>{"cost", "gemm", "--m", "1"});
  CHECK(q[0].text == "A 1\n");
  CHECK(q[0].line == 2);
  CHECK_FALSE(readme_outputs::cheap({"run", "x.json"}));
}
