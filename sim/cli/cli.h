// The ess-sim command line, callable in-process (tests) and from main().
#pragma once

#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "sim/base/error.h"  // the exit codes: kExitOk, kExitValidationFailed, kExitBadInput, kExitInternal

namespace ess {

// Runs ess-sim with `args` (without the program name). Writes results to `out` and diagnostics
// to `err`; never calls exit().
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// What run_cli does with an exception that escapes a command: writes its message to `err` and
// returns the exit code. An ess::Error exits with its exit_code(): "error: ..." for bad input (2),
// "internal error (please report): ..." for an InternalError (3); any other exception is a bug too
// (3, "please report").
int report_error(const std::exception& e, std::ostream& err);

// ess-sim's version, "0.1.0" (set by CMake from the project version).
#ifndef ESS_SIM_VERSION
#error "ESS_SIM_VERSION must be defined by the build"
#endif

// "ess-sim 0.1.0 (SimGrid 3.32.0)".
std::string version_string();

}  // namespace ess
