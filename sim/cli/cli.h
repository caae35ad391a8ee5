// The ess-sim command line, callable in-process (tests) and from main().
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ess {

// Exit codes: 0 success, 1 internal error (a bug), 2 bad input (usage, scenario, arguments).
inline constexpr int kExitOk = 0;
// `validate` exits 1 when the simulation misses the threshold; an internal error (a bug) exits 3.
inline constexpr int kExitValidationFailed = 1;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitBadInput = 2;

// Runs ess-sim with `args` (without the program name). Writes results to `out` and diagnostics
// to `err`; never calls exit().
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// ess-sim's version, "0.1.0" (set by CMake from the project version).
#ifndef ESS_SIM_VERSION
#error "ESS_SIM_VERSION must be defined by the build"
#endif

// "ess-sim 0.1.0 (SimGrid 3.32.0)".
std::string version_string();

}  // namespace ess
