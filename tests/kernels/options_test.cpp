// ess-bench's command line (kernels/bench/options.h): every option, and a precise error for each
// kind of bad input.
#include "kernels/bench/options.h"

#include <catch2/catch.hpp>
#include <string_view>
#include <vector>

using ess::bench::Action;
using ess::bench::Command;
using ess::bench::OptionError;
using ess::bench::Suite;

namespace {

Command parse(std::vector<std::string_view> args) { return ess::bench::parse_command_line(args); }

}  // namespace

TEST_CASE("ess-bench options: --out alone runs every suite with the defaults", "[kernels][options]") {
  const Command c = parse({"--out", "m.json"});
  CHECK(c.action == Action::run);
  CHECK(c.options.out == "m.json");
  CHECK_FALSE(c.options.quick);
  CHECK(c.options.device == 0);
  CHECK_FALSE(c.options.max_seconds.has_value());
  // All eight, in the order they run.
  CHECK(c.options.suites == std::vector<Suite>{Suite::gemm, Suite::norm, Suite::copy, Suite::gather,
                                               Suite::interference, Suite::d2d, Suite::p2p,
                                               Suite::collectives});
}

TEST_CASE("ess-bench options: every option parsed in both spellings", "[kernels][options]") {
  const Command c = parse({"--out=o.json", "--quick", "--device", "3", "--max-seconds=2.5",
                           "--only", "p2p,gemm", "--gemm-shapes", "prepared/gemm-shapes.csv"});
  CHECK(c.options.out == "o.json");
  CHECK(c.options.gemm_shapes == "prepared/gemm-shapes.csv");
  CHECK(parse({"--out", "o.json", "--gemm-shapes=s.csv"}).options.gemm_shapes == "s.csv");
  CHECK(parse({"--out", "o.json"}).options.gemm_shapes.empty());
  CHECK_THROWS_AS(parse({"--out", "o.json", "--gemm-shapes="}), OptionError);
  CHECK_THROWS_AS(parse({"--out", "o.json", "--gemm-shapes"}), OptionError);
  CHECK(c.options.quick);
  CHECK(c.options.device == 3);
  REQUIRE(c.options.max_seconds.has_value());
  CHECK(*c.options.max_seconds == 2.5);
  // --only keeps the run order (gemm before p2p), not the order given.
  CHECK(c.options.suites == std::vector<Suite>{Suite::gemm, Suite::p2p});
  CHECK(c.options.runs(Suite::gemm));
  CHECK_FALSE(c.options.runs(Suite::norm));
}

TEST_CASE("ess-bench options: help and version need no --out", "[kernels][options]") {
  CHECK(parse({"--help"}).action == Action::help);
  CHECK(parse({"-h"}).action == Action::help);
  CHECK(parse({"--version"}).action == Action::version);
  CHECK(ess::bench::usage().find("--max-seconds S") != std::string::npos);
}

TEST_CASE("ess-bench options: an unknown measurement gets a did-you-mean", "[kernels][options][errors]") {
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--only", "gemm,colectives"}), OptionError,
                       Catch::Message("--only: unknown measurement 'colectives' (did you mean "
                                      "'collectives'?); known: gemm, norm, copy, gather, "
                                      "interference, d2d, p2p, collectives"));
  // Nothing within a third of "xyz"'s length (1 edit) of any name: no suggestion.
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--only", "xyz"}), OptionError,
                       Catch::Message("--only: unknown measurement 'xyz'; known: gemm, norm, "
                                      "copy, gather, interference, d2d, p2p, collectives"));
}

TEST_CASE("ess-bench options: empty and repeated measurement names are errors", "[kernels][options][errors]") {
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--only", "gemm,,norm"}), OptionError,
                       Catch::Message("--only: empty measurement name in 'gemm,,norm' (expected a "
                                      "comma-separated list of: gemm, norm, copy, gather, "
                                      "interference, d2d, p2p, collectives)"));
  CHECK_THROWS_WITH(parse({"--out", "m.json", "--only", ""}),
                    Catch::Contains("empty measurement name"));
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--only", "norm,gemm,norm"}), OptionError,
                       Catch::Message("--only: 'norm' is listed twice"));
}

TEST_CASE("ess-bench options: an unknown option gets a did-you-mean", "[kernels][options][errors]") {
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--qiuck"}), OptionError,
                       Catch::Message("unknown option '--qiuck' (did you mean '--quick'?); see --help"));
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--frobnicate=1"}), OptionError,
                       Catch::Message("unknown option '--frobnicate'; see --help"));
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "extra"}), OptionError,
                       Catch::Message("unexpected argument 'extra' (ess-bench takes only options; see --help)"));
  CHECK_THROWS_AS(parse({"-q", "--out", "m.json"}), OptionError);
  CHECK_THROWS_WITH(parse({"-q", "--out", "m.json"}), Catch::Contains("unexpected argument '-q'"));
}

TEST_CASE("ess-bench options: missing and repeated values are errors", "[kernels][options][errors]") {
  CHECK_THROWS_MATCHES(parse({}), OptionError, Catch::Message("--out FILE.json is required"));
  CHECK_THROWS_MATCHES(parse({"--quick"}), OptionError, Catch::Message("--out FILE.json is required"));
  CHECK_THROWS_MATCHES(parse({"--out"}), OptionError, Catch::Message("--out needs a value"));
  CHECK_THROWS_MATCHES(parse({"--out="}), OptionError, Catch::Message("--out: expected a file name, got ''"));
  CHECK_THROWS_MATCHES(parse({"--out", "a.json", "--out", "b.json"}), OptionError,
                       Catch::Message("--out is given twice"));
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--quick", "--quick"}), OptionError,
                       Catch::Message("--quick is given twice"));
  CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--quick=yes"}), OptionError,
                       Catch::Message("--quick takes no value"));
}

TEST_CASE("ess-bench options: --device takes a non-negative integer only", "[kernels][options][errors]") {
  CHECK(parse({"--out", "m.json", "--device", "0"}).options.device == 0);
  CHECK(parse({"--out", "m.json", "--device", "7"}).options.device == 7);
  for (const std::string_view bad : {"-1", "1x", "", "1.0", "99999999999"}) {
    INFO("--device " << bad);
    CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--device", bad}), OptionError,
                         Catch::Message("--device: expected a CUDA device index (an integer >= 0), got '" +
                                        std::string(bad) + "'"));
  }
}

TEST_CASE("ess-bench options: --max-seconds takes a finite positive number only", "[kernels][options][errors]") {
  CHECK(*parse({"--out", "m.json", "--max-seconds", "270"}).options.max_seconds == 270.0);
  CHECK(*parse({"--out", "m.json", "--max-seconds", "1e-3"}).options.max_seconds == 0.001);
  for (const std::string_view bad : {"0", "-5", "nan", "inf", "1e400", "abc", "5s", ""}) {
    INFO("--max-seconds " << bad);
    CHECK_THROWS_MATCHES(parse({"--out", "m.json", "--max-seconds", bad}), OptionError,
                         Catch::Message("--max-seconds: expected a number of seconds > 0, got '" +
                                        std::string(bad) + "'"));
  }
}

TEST_CASE("ess-bench options: closest_name allows about one edit per three letters", "[kernels][options]") {
  const std::vector<std::string_view> names = {"gemm", "norm", "d2d", "p2p", "collectives"};
  CHECK(ess::bench::closest_name("gemn", names) == "gemm");         // 1 edit, limit max(1, 4/3) = 1
  CHECK(ess::bench::closest_name("d2h", names) == "d2d");           // 1 edit, limit 1
  CHECK(ess::bench::closest_name("colectivs", names) == "collectives");  // 2 edits, limit 9/3 = 3
  CHECK(ess::bench::closest_name("gxmx", names) == "");             // 2 edits > limit 1
  CHECK(ess::bench::closest_name("", names) == "");                 // 3+ edits > limit 1
  CHECK(ess::bench::parse_suite("interference") == Suite::interference);
  CHECK_FALSE(ess::bench::parse_suite("GEMM").has_value());
  CHECK(ess::bench::to_string(Suite::collectives) == "collectives");
}
