#include "sim/config/quantity.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using ess::Dimension;
using ess::format_quantity;
using ess::parse_quantity;

namespace {

struct Case {
  const char* text;
  double expected;
};

// The value of `text` or a failed check naming the text and the parser's error.
void check_parses(const char* text, Dimension d, double expected) {
  INFO("parsing \"" << text << "\"");
  const auto q = parse_quantity(text, d);
  INFO("error: " << q.error);
  REQUIRE(q.value.has_value());
  CHECK(q.error.empty());
  CHECK(*q.value == expected);  // exact: every expectation below is the correctly rounded value
}

std::string parse_error(const char* text, Dimension d) {
  const auto q = parse_quantity(text, d);
  INFO("parsing \"" << text << "\"");
  CHECK_FALSE(q.value.has_value());
  CHECK_FALSE(q.error.empty());
  return q.error;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

constexpr std::array kAllDimensions = {Dimension::bytes, Dimension::seconds, Dimension::bytes_per_second,
                                       Dimension::flops_per_second};

}  // namespace

TEST_CASE("sizes parse to bytes with decimal prefixes as powers of 1000 and binary ones as powers of 1024",
          "[quantity]") {
  const std::vector<Case> cases = {
      {"1B", 1.0},
      {"656B", 656.0},
      {"1kB", 1e3},
      {"1KB", 1e3},
      {"1MB", 1e6},
      {"1GB", 1e9},
      {"141GB", 141e9},
      {"1TB", 1e12},
      {"1PB", 1e15},
      {"1KiB", 1024.0},
      {"1MiB", 1048576.0},
      {"1GiB", 1073741824.0},
      {"1TiB", 1099511627776.0},
      {"80GiB", 85899345920.0},          // A100 80GB as nvidia-smi reports it: 81920 MiB
      {"143771MiB", 150754820096.0},     // H200: 143771 x 2^20
      {"0.5KiB", 512.0},
  };
  for (const auto& c : cases) check_parses(c.text, Dimension::bytes, c.expected);
}

TEST_CASE("durations parse to seconds, with \"us\" and the micro sign both meaning microseconds", "[quantity]") {
  const std::vector<Case> cases = {
      {"1s", 1.0},
      {"2ms", 2e-3},
      {"1.5us", 1.5e-6},
      {"1.5\xC2\xB5s", 1.5e-6},  // U+00B5 MICRO SIGN, UTF-8
      {"820ns", 820e-9},
      {"0.82us", 0.82e-6},
      {"37us", 37e-6},
      {"3ns", 3e-9},
      {"0s", 0.0},
  };
  for (const auto& c : cases) check_parses(c.text, Dimension::seconds, c.expected);
}

TEST_CASE("bandwidths parse to bytes per second, bits written out as bit/s and divided by eight", "[quantity]") {
  const std::vector<Case> cases = {
      {"1B/s", 1.0},
      {"1kB/s", 1e3},
      {"1KB/s", 1e3},
      {"1MB/s", 1e6},
      {"55GB/s", 5.5e10},
      {"4.8TB/s", 4.8e12},
      {"1KiB/s", 1024.0},
      {"1MiB/s", 1048576.0},
      {"1GiB/s", 1073741824.0},
      {"1TiB/s", 1099511627776.0},
      {"8bit/s", 1.0},
      {"8kbit/s", 1e3},
      {"8Mbit/s", 1e6},
      {"400Gbit/s", 5e10},
      {"200Gbit/s", 2.5e10},
      {"8Tbit/s", 1e12},
  };
  for (const auto& c : cases) check_parses(c.text, Dimension::bytes_per_second, c.expected);
}

TEST_CASE("compute rates parse to FLOP/s and the FLOPS spellings are aliases", "[quantity]") {
  const std::vector<Case> cases = {
      {"1FLOP/s", 1.0},       {"1FLOPS", 1.0},         {"1GFLOP/s", 1e9},      {"1GFLOPS", 1e9},
      {"989TFLOP/s", 9.89e14}, {"989TFLOPS", 9.89e14}, {"989.4TFLOP/s", 9.894e14}, {"19.5TFLOP/s", 1.95e13},
      {"1PFLOP/s", 1e15},     {"1PFLOPS", 1e15},
  };
  for (const auto& c : cases) check_parses(c.text, Dimension::flops_per_second, c.expected);
}

TEST_CASE("spaces and tabs may separate the number from the unit and surround the text", "[quantity]") {
  check_parses("55 GB/s", Dimension::bytes_per_second, 5.5e10);
  check_parses("55\tGB/s", Dimension::bytes_per_second, 5.5e10);
  check_parses("  55GB/s  ", Dimension::bytes_per_second, 5.5e10);
  check_parses("1.5   us", Dimension::seconds, 1.5e-6);
  check_parses("141 GB", Dimension::bytes, 141e9);
}

TEST_CASE("numbers may carry a sign, a fraction and an exponent, and the range is left to the caller",
          "[quantity]") {
  check_parses("+55GB/s", Dimension::bytes_per_second, 5.5e10);
  check_parses("-5GB/s", Dimension::bytes_per_second, -5e9);
  check_parses("5.5e1GB/s", Dimension::bytes_per_second, 5.5e10);
  check_parses("550e-1GB/s", Dimension::bytes_per_second, 5.5e10);
  check_parses("1E3B", Dimension::bytes, 1000.0);
  check_parses("1e+3 B", Dimension::bytes, 1000.0);
  check_parses("-0.5ms", Dimension::seconds, -0.5e-3);
  check_parses(".5kB", Dimension::bytes, 500.0);
}

TEST_CASE("a quantity without a unit is rejected and the message says the unit is missing", "[quantity]") {
  const auto e = parse_error("55", Dimension::bytes_per_second);
  CHECK(contains(e, "unit is missing"));
  CHECK(contains(e, "a bandwidth"));
  CHECK(contains(e, "\"55GB/s\""));  // the example of the expected dimension
  CHECK(contains(parse_error("1.5", Dimension::seconds), "unit is missing"));
  CHECK(contains(parse_error("141  ", Dimension::bytes), "unit is missing"));
}

TEST_CASE("text that does not start with a number is rejected", "[quantity]") {
  for (const char* text : {"", "   ", "GB/s", "abc", "fast", "++5GB/s", "0x10GB/s"}) {
    INFO("parsing \"" << text << "\"");
    const auto q = parse_quantity(text, Dimension::bytes_per_second);
    CHECK_FALSE(q.value.has_value());
    CHECK(contains(q.error, "a bandwidth"));
  }
  CHECK(contains(parse_error("GB/s", Dimension::bytes_per_second), "must start with a number"));
  CHECK(contains(parse_error("", Dimension::bytes), "must start with a number"));
}

TEST_CASE("an unknown unit is rejected with a did-you-mean and the list of units", "[quantity]") {
  {
    const auto e = parse_error("55GBs", Dimension::bytes_per_second);
    CHECK(contains(e, "unknown unit \"GBs\""));
    CHECK(contains(e, "did you mean \"GB/s\"?"));
    CHECK(contains(e, "\"Gbit/s\""));  // the list of accepted units
  }
  CHECK(contains(parse_error("55 gb", Dimension::bytes), "did you mean \"GB\"?"));
  CHECK(contains(parse_error("1gib", Dimension::bytes), "did you mean \"GiB\"?"));
  CHECK(contains(parse_error("5Ms", Dimension::seconds), "did you mean \"ms\"?"));  // units are case-sensitive
  CHECK(contains(parse_error("1.5sec", Dimension::seconds), "did you mean \"s\"?"));
  CHECK(contains(parse_error("989TFLOPs", Dimension::flops_per_second), "did you mean \"TFLOPS\"?"));
  CHECK(contains(parse_error("55GB/S", Dimension::bytes_per_second), "did you mean \"GB/s\"?"));
  // Nothing plausible: no suggestion, but still the list.
  const auto far = parse_error("5furlongs", Dimension::bytes);
  CHECK_FALSE(contains(far, "did you mean"));
  CHECK(contains(far, "\"GiB\""));
}

TEST_CASE("a lower-case gb/s is rejected and the message points at GB/s", "[quantity]") {
  const auto e = parse_error("55gb/s", Dimension::bytes_per_second);
  CHECK(contains(e, "55gb/s"));
  CHECK(contains(e, "\"GB/s\""));
}

TEST_CASE("a unit of another dimension is rejected and the message names that dimension", "[quantity]") {
  {
    const auto e = parse_error("55GB", Dimension::bytes_per_second);
    CHECK(contains(e, "expected a bandwidth"));
    CHECK(contains(e, "a size"));
    CHECK(contains(e, "\"55GB\""));
  }
  CHECK(contains(parse_error("1.5us", Dimension::bytes), "a duration"));
  CHECK(contains(parse_error("55GB/s", Dimension::seconds), "a bandwidth"));
  CHECK(contains(parse_error("989TFLOP/s", Dimension::bytes_per_second), "a compute rate"));
  CHECK(contains(parse_error("400Gbit/s", Dimension::flops_per_second), "a bandwidth"));
  CHECK(contains(parse_error("141GiB", Dimension::seconds), "a size"));
}

TEST_CASE("Gb/s is rejected as ambiguous between bits and bytes", "[quantity]") {
  for (const char* text : {"400Gb/s", "400 Gb/s", "100Mb/s", "1Tb/s"}) {
    const auto e = parse_error(text, Dimension::bytes_per_second);
    CHECK(contains(e, "ambiguous"));
    CHECK(contains(e, "bit/s"));
  }
  CHECK(std::find(ess::unit_names(Dimension::bytes_per_second).begin(),
                  ess::unit_names(Dimension::bytes_per_second).end(),
                  "Gb/s") == ess::unit_names(Dimension::bytes_per_second).end());
}

TEST_CASE("numbers out of the range of a double are rejected, not turned into infinity or zero", "[quantity]") {
  CHECK(contains(parse_error("1e999GB", Dimension::bytes), "out of range"));
  CHECK(contains(parse_error("-1e999GB", Dimension::bytes), "out of range"));
  CHECK(contains(parse_error("1e300PB", Dimension::bytes), "out of range"));  // finite number, infinite product
  CHECK(contains(parse_error("1e308TFLOP/s", Dimension::flops_per_second), "out of range"));
  CHECK(contains(parse_error("1e-999s", Dimension::seconds), "out of range"));
  parse_error("infGB/s", Dimension::bytes_per_second);
  parse_error("nan s", Dimension::seconds);
  parse_error("-inf B", Dimension::bytes);
}

TEST_CASE("describe, example and unit_names give the words error messages use", "[quantity]") {
  CHECK(ess::describe(Dimension::bytes) == "a size");
  CHECK(ess::describe(Dimension::seconds) == "a duration");
  CHECK(ess::describe(Dimension::bytes_per_second) == "a bandwidth");
  CHECK(ess::describe(Dimension::flops_per_second) == "a compute rate");
  // Every example parses in its own dimension.
  for (Dimension d : kAllDimensions) {
    INFO("example " << ess::example(d));
    CHECK(parse_quantity(ess::example(d), d).value.has_value());
  }
  // Every listed unit parses ("1<unit>") in its dimension and in no other.
  for (Dimension d : kAllDimensions) {
    for (const auto& u : ess::unit_names(d)) {
      for (Dimension other : kAllDimensions) {
        INFO("unit " << u);
        CHECK(parse_quantity("1" + u, other).value.has_value() == (other == d));
      }
    }
  }
}

TEST_CASE("format_quantity picks readable spellings for the values presets use", "[quantity]") {
  CHECK(format_quantity(141e9, Dimension::bytes) == "141GB");
  CHECK(format_quantity(143771.0 * 1048576.0, Dimension::bytes) == "143771MiB");
  CHECK(format_quantity(80.0 * 1073741824.0, Dimension::bytes) == "80GiB");
  CHECK(format_quantity(656.0, Dimension::bytes) == "656B");
  CHECK(format_quantity(1e12, Dimension::bytes) == "1TB");
  CHECK(format_quantity(0.0, Dimension::bytes) == "0B");
  CHECK(format_quantity(5.543e10, Dimension::bytes_per_second) == "55.43GB/s");
  CHECK(format_quantity(5e10, Dimension::bytes_per_second) == "50GB/s");
  CHECK(format_quantity(4.8e12, Dimension::bytes_per_second) == "4.8TB/s");
  CHECK(format_quantity(-5e9, Dimension::bytes_per_second) == "-5GB/s");
  CHECK(format_quantity(1.5e-6, Dimension::seconds) == "1.5us");
  CHECK(format_quantity(820e-9, Dimension::seconds) == "820ns");
  CHECK(format_quantity(2e-6, Dimension::seconds) == "2us");
  CHECK(format_quantity(37e-6, Dimension::seconds) == "37us");
  CHECK(format_quantity(0.0, Dimension::seconds) == "0s");
  CHECK(format_quantity(9.89e14, Dimension::flops_per_second) == "989TFLOP/s");
  CHECK(format_quantity(9.894e14, Dimension::flops_per_second) == "989.4TFLOP/s");
}

TEST_CASE("format_quantity round-trips exactly for a sweep of doubles in every dimension", "[quantity]") {
  std::mt19937_64 rng(0x5eedc0de);
  // A double from 52 random mantissa bits and an exponent in [-70, 90] (1e-21 .. 1e27), by exact
  // arithmetic (ldexp), so the sweep is the same on every platform.
  auto random_double = [&rng]() {
    const double mantissa = 1.0 + static_cast<double>(rng() >> 12) * 0x1p-52;
    const int exponent = static_cast<int>(rng() % 161) - 70;
    const double v = std::ldexp(mantissa, exponent);
    return (rng() & 1U) != 0U ? -v : v;
  };
  // Decimal-looking values (k x 10^p), the kind people write: the round trip must hold for them too.
  auto decimal_double = [&rng]() {
    double v = static_cast<double>(rng() % 100000);
    const int p = static_cast<int>(rng() % 31) - 15;
    for (int i = 0; i < p; ++i) v *= 10.0;
    for (int i = 0; i > p; --i) v /= 10.0;
    return v;
  };
  int checked = 0;
  for (Dimension d : kAllDimensions) {
    for (int i = 0; i < 2000; ++i) {
      const double v = (i % 2 == 0) ? random_double() : decimal_double();
      const std::string text = format_quantity(v, d);
      const auto back = parse_quantity(text, d);
      INFO("value " << ess::shortest_number(v) << " formatted as \"" << text << "\": " << back.error);
      REQUIRE(back.value.has_value());
      REQUIRE(*back.value == v);
      ++checked;
    }
  }
  CHECK(checked == 8000);
}

TEST_CASE("format_quantity round-trips the extremes of the double range", "[quantity]") {
  const double extremes[] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                             std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
                             std::numeric_limits<double>::epsilon(), 9007199254740993.0, 1e-300, 1e300};
  for (Dimension d : kAllDimensions) {
    for (double v : extremes) {
      const std::string text = format_quantity(v, d);
      const auto back = parse_quantity(text, d);
      INFO("value " << ess::shortest_number(v) << " formatted as \"" << text << "\": " << back.error);
      REQUIRE(back.value.has_value());
      CHECK(*back.value == v);
    }
  }
}

TEST_CASE("format_quantity prefers a plain number to exponent notation when one is exact", "[quantity]") {
  for (double v : {141e9, 5.5e10, 9.89e14, 1e15, 123456789.0, 0.5}) {
    for (Dimension d : kAllDimensions) {
      const std::string text = format_quantity(v, d);
      INFO(text);
      CHECK(text.find('e') == std::string::npos);
    }
  }
  for (double v : {1.5e-6, 1e-9, 2.5e-3}) {
    const std::string text = format_quantity(v, Dimension::seconds);
    INFO(text);
    CHECK(text.find('e') == std::string::npos);
  }
}

TEST_CASE("shortest_number gives the shortest text that parses back to the same double", "[quantity]") {
  CHECK(ess::shortest_number(0.1) == "0.1");
  CHECK(ess::shortest_number(1e-7) == "1e-07");
  CHECK(ess::shortest_number(2.0) == "2");
  CHECK(ess::shortest_number(-1.5) == "-1.5");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const double v = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, static_cast<int>(rng() % 200) - 100);
    const std::string s = ess::shortest_number(v);
    INFO(s);
    CHECK(std::stod(s) == v);
  }
}
