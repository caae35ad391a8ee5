// The one error type of ess-sim, and the exit code each kind means.
//
// Every error the library throws on purpose is an ess::Error. Its kind decides the exit code the
// command line returns (sim/cli/cli.cpp catches Error once):
//   - InputError (exit 2): bad input a user can fix: a scenario value, a file, an argument, a run
//     too large, a combination the model does not support. The message names where the input came
//     from and what was expected. The specific errors (ConfigError, MeasurementError, ...) derive
//     from it to carry their own fields.
//   - InternalError (exit 3): a broken invariant inside ess-sim, a bug whatever the input. The
//     command line prints "internal error (please report)". Any other exception that escapes
//     (std::bad_alloc, a std::invalid_argument from the standard library) is treated the same.
// Header-only, standard library only: models/, the kernels' host code and every sim/ folder use it.
#pragma once

#include <stdexcept>
#include <string>

namespace ess {

// The exit codes of `ess-sim` (README "Command line").
inline constexpr int kExitOk = 0;
// `validate` found the simulation outside its threshold.
inline constexpr int kExitValidationFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

class Error : public std::runtime_error {
 public:
  [[nodiscard]] int exit_code() const { return exit_code_; }

 protected:
  Error(int exit_code, const std::string& what) : std::runtime_error(what), exit_code_(exit_code) {}

 private:
  int exit_code_;
};

// Bad input: exit 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(kExitBadInput, what) {}
};

// A bug: exit 3, "internal error (please report)".
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what) : Error(kExitInternal, what) {}
};

// Throws InternalError(what) unless `condition` holds: for invariants the code itself guarantees.
inline void check_invariant(bool condition, const char* what) {
  if (!condition) throw InternalError(what);
}

}  // namespace ess
