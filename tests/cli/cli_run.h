// Runs the ess-sim command line in-process and keeps what it printed, for the CLI tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

namespace ess::test {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliRun run_cli(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  CliRun r;
  r.code = ess::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The bundled scenario most CLI tests run.
inline const std::string kBundledScenario = std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-baseline-32k.json";

// The short names the CLI tests use (`using ess::test::run;`): one definition, so that test files
// compiled together (the sanitizer build's unity batches) do not define them twice.
using Run = CliRun;
inline CliRun run(const std::vector<std::string>& args) { return run_cli(args); }
inline const std::string& kScenario = kBundledScenario;

// The lines of `text`, without their '\n' (a last line without one counts too).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return lines;
}

}  // namespace ess::test
