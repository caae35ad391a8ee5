// The hand-written JSON writer ess-bench uses instead of nlohmann_json (kernels/bench/json_writer.h).
#include "kernels/bench/json_writer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

using ess::bench::json_number;
using ess::bench::json_quote;
using ess::bench::JsonWriter;
using ess::bench::Layout;

TEST_CASE("json writer: a small document has exactly the documented layout", "[kernels][json]") {
  JsonWriter w;
  w.begin_object();
  w.key("a");
  w.integer(1);
  w.key("b");
  w.begin_array(Layout::inline_);
  w.number(0.5);
  w.string("x");
  w.boolean(true);
  w.null();
  w.end_array();
  w.key("c");
  w.begin_object(Layout::inline_);
  w.key("d");
  w.integer(-2);
  w.key("e");
  w.begin_object(Layout::block);  // inside an inline object: inline too
  w.key("f");
  w.integer(3);
  w.end_object();
  w.end_object();
  w.key("g");
  w.begin_array();
  w.begin_object(Layout::inline_);
  w.end_object();
  w.integer(4);
  w.end_array();
  w.key("h");
  w.begin_object();
  w.end_object();
  w.end_object();
  // Block members one per line indented 2 per level, inline members joined by ", ", empty
  // containers as {} / [], and a final newline.
  const std::string expected =
      "{\n"
      "  \"a\": 1,\n"
      "  \"b\": [0.5, \"x\", true, null],\n"
      "  \"c\": {\"d\": -2, \"e\": {\"f\": 3}},\n"
      "  \"g\": [\n"
      "    {},\n"
      "    4\n"
      "  ],\n"
      "  \"h\": {}\n"
      "}\n";
  CHECK(w.finish() == expected);
}

TEST_CASE("json writer: strings escape quotes backslashes and control characters", "[kernels][json]") {
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("say \"hi\" \\o/") == "\"say \\\"hi\\\" \\\\o/\"");
  CHECK(json_quote("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(json_quote(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(json_quote(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  // DEL and UTF-8 need no escape in JSON (RFC 8259, section 7)
  CHECK(json_quote("\x7f") == "\"\x7f\"");
  CHECK(json_quote("H200 \xc3\xa9") == "\"H200 \xc3\xa9\"");
}

TEST_CASE("json writer: doubles print with 17 significant digits", "[kernels][json]") {
  // 0.1 is 0.1000000000000000055511151231257827 in binary: 17 digits show the 1 at the end
  CHECK(json_number(0.1) == "0.10000000000000001");
  CHECK(json_number(0.5) == "0.5");
  CHECK(json_number(3.0) == "3");
  CHECK(json_number(-0.0) == "-0");
  CHECK(json_number(1.0 / 3.0) == "0.33333333333333331");
  CHECK(json_number(1e300) == "1.0000000000000001e+300");
  // the smallest subnormal, 2^-1074
  CHECK(json_number(5e-324) == "4.9406564584124654e-324");
}

TEST_CASE("json writer: doubles read back bit for bit", "[kernels][json]") {
  const double values[] = {0.1,
                           1.0 / 3.0,
                           3.141592653589793,
                           1.2345e-9,
                           6.02214076e23,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           -2.5e-7};
  for (const double v : values) {
    const std::string text = json_number(v);
    const double back = std::strtod(text.c_str(), nullptr);
    INFO(text);
    CHECK(std::memcmp(&back, &v, sizeof v) == 0);
  }
}

TEST_CASE("json writer: NaN and infinities are rejected and nothing is written", "[kernels][json][errors]") {
  CHECK_THROWS_MATCHES(json_number(std::nan("")), std::invalid_argument,
                       Catch::Message("JSON has no representation for NaN"));
  CHECK_THROWS_MATCHES(json_number(std::numeric_limits<double>::infinity()), std::invalid_argument,
                       Catch::Message("JSON has no representation for an infinity"));
  CHECK_THROWS_AS(json_number(-std::numeric_limits<double>::infinity()), std::invalid_argument);
  JsonWriter w;
  w.begin_array(Layout::inline_);
  w.number(1.0);
  CHECK_THROWS_AS(w.number(std::nan("")), std::invalid_argument);
  w.number(2.0);
  w.end_array();
  CHECK(w.finish() == "[1, 2]\n");
}

TEST_CASE("json writer: misuse is a logic error", "[kernels][json][errors]") {
  {
    JsonWriter w;
    w.begin_object();
    CHECK_THROWS_AS(w.integer(1), std::logic_error);  // no key
    w.key("a");
    CHECK_THROWS_AS(w.key("b"), std::logic_error);  // two keys
    CHECK_THROWS_AS(w.end_object(), std::logic_error);  // a key without a value
    w.integer(1);
    CHECK_THROWS_AS(w.end_array(), std::logic_error);  // not an array
    CHECK_THROWS_AS(w.finish(), std::logic_error);     // still open
    w.end_object();
    CHECK_THROWS_AS(w.integer(2), std::logic_error);  // a second top-level value
    CHECK(w.finish() == "{\n  \"a\": 1\n}\n");
  }
  {
    JsonWriter w;
    w.begin_array();
    CHECK_THROWS_AS(w.key("a"), std::logic_error);  // keys only in objects
  }
  {
    const JsonWriter w;
    CHECK_THROWS_AS(w.finish(), std::logic_error);  // empty document
  }
}
