// ess-bench's command line: which measurements to run, where to write them, how long to spend.
//
//   ess-bench --out FILE.json [--only gemm,norm,...] [--quick] [--device N] [--max-seconds S]
//             [--gemm-shapes FILE.csv]
//
// Parsing is pure (no CUDA, no exit()): bad input throws OptionError with a message that names the
// option, the value and what was expected, so main() can print it and exit 2.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ess::bench {

// One family of measurements, selectable with --only. Run (and written) in this order.
enum class Suite { gemm, norm, copy, gather, interference, d2d, p2p, collectives };

inline constexpr std::array<Suite, 8> kAllSuites = {Suite::gemm,   Suite::norm,         Suite::copy,
                                                    Suite::gather, Suite::interference, Suite::d2d,
                                                    Suite::p2p,    Suite::collectives};

[[nodiscard]] std::string_view to_string(Suite s);

// Parses a suite name ("gemm", ...); nullopt for anything else (names are case-sensitive).
[[nodiscard]] std::optional<Suite> parse_suite(std::string_view name);

// The closest of `candidates` to `word` by edit distance, or "" when none is close enough to be a
// plausible typo (distance <= max(1, word length / 3)).
[[nodiscard]] std::string closest_name(std::string_view word,
                                       std::span<const std::string_view> candidates);

class OptionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string out;                 // --out: the measurements JSON file (written atomically)
  std::vector<Suite> suites;       // --only, in kAllSuites order; every suite when not given
  bool quick = false;              // --quick: the reduced smoke-test sweep
  int device = 0;                  // --device: the CUDA device measured (others only for p2p/NCCL)
  std::optional<double> max_seconds;  // --max-seconds: wall-clock budget; later samples skipped
  std::string gemm_shapes;         // --gemm-shapes: a shapes file (gemm_shapes.h) measured first

  [[nodiscard]] bool runs(Suite s) const;
};

enum class Action { run, help, version };

struct Command {
  Action action = Action::run;
  Options options;  // meaningful only for Action::run
};

// Parses the arguments after the program name. Throws OptionError on an unknown option (with a
// "did you mean"), a missing or malformed value, an option given twice, a positional argument, or
// a missing --out.
[[nodiscard]] Command parse_command_line(std::span<const std::string_view> args);

// The --help text.
[[nodiscard]] std::string usage();

// "a, b, c": the names of a choice, for error messages.
[[nodiscard]] std::string join_names(std::span<const std::string_view> names);

}  // namespace ess::bench
