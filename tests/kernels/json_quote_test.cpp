// The JSON text both CUDA programs write (kernels/bench/json_writer.h): json_quote, which the
// runner's trace also uses, called json_string here.
#include "kernels/bench/json_writer.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

using ess::bench::json_number;

namespace {
std::string json_string(std::string_view text) { return ess::bench::json_quote(text); }
}  // namespace

TEST_CASE("json strings escape quotes, backslashes and control characters") {
  CHECK(json_string("plain") == "\"plain\"");
  CHECK(json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_string("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(json_string(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(json_string(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  CHECK(json_string("/ and \x7f stay") == "\"/ and \x7f stay\"");
}

TEST_CASE("valid UTF-8 passes through and invalid bytes become U+FFFD") {
  const std::string replacement = "\xEF\xBF\xBD";
  CHECK(json_string("caf\xC3\xA9") == "\"caf\xC3\xA9\"");               // U+00E9
  CHECK(json_string("\xE2\x82\xAC") == "\"\xE2\x82\xAC\"");             // U+20AC
  CHECK(json_string("\xF0\x9F\x98\x80") == "\"\xF0\x9F\x98\x80\"");     // U+1F600
  CHECK(json_string("\xC3(") == "\"" + replacement + "(\"");            // truncated sequence
  CHECK(json_string("\xFF") == "\"" + replacement + "\"");              // never valid
  CHECK(json_string("\xC0\xAF") == "\"" + replacement + replacement + "\"");  // overlong '/'
  CHECK(json_string("\xED\xA0\x80") == "\"" + replacement + replacement + replacement + "\"");  // a surrogate
  CHECK(json_string("\xF4\x90\x80\x80").find(replacement) != std::string::npos);  // above U+10FFFF
  CHECK(json_string("\xE2\x82") == "\"" + replacement + replacement + "\"");  // cut at the end
}

TEST_CASE("json numbers are %.17g and round-trip") {
  CHECK(json_number(0.5) == "0.5");
  CHECK(json_number(3.0) == "3");
  CHECK(json_number(-2.5) == "-2.5");
  CHECK(json_number(0.1) == "0.10000000000000001");
  CHECK(json_number(1e21) == "1e+21");
  CHECK(json_number(1234.5678) == "1234.5678");  // 1234.56780000000003383...: 17 digits end in zeros
  for (const double v : {0.1, 1.0 / 3.0, 812.34567, 6.02214076e23, 5e-324}) {
    CHECK(std::strtod(json_number(v).c_str(), nullptr) == v);
  }
}

TEST_CASE("json numbers refuse NaN and infinity") {
  CHECK_THROWS_AS(json_number(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  CHECK_THROWS_AS(json_number(std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK_THROWS_AS(json_number(-std::numeric_limits<double>::infinity()), std::invalid_argument);
}
