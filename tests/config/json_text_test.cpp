#include "sim/config/json_text.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>

#include "sim/config/config_error.h"
#include "tests/config/config_test_support.h"

using ess::ConfigError;
using ess::parse_json_text;
using ess::test::config_error;

namespace {

// The error parse_json_text throws for `text`, or a failed test.
ConfigError parse_failure(const std::string& text, const std::string& origin = "doc.json") {
  try {
    (void)parse_json_text(text, origin);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for: " << text);
  throw std::logic_error("unreachable");
}

// A duplicate key is reported either at the object holding it or at the key itself; both name the
// key in the message. (Unknown-key errors point at the key; see the report on json_text.)
void check_duplicate(const std::string& text, const std::string& object_pointer, const std::string& key) {
  const ConfigError e = parse_failure(text);
  INFO(Catch::Detail::stringify(e));
  CHECK(e.origin() == "doc.json");
  CHECK((e.pointer() == object_pointer || e.pointer() == ess::pointer_append(object_pointer, key)));
  CHECK_THAT(e.message(), Catch::Contains("duplicate key \"" + key + "\""));
}

// An array of `n` small objects shaped like trace events: [{"ph": "X", "ts": 0, "dur": 1.5}, ...].
std::string array_of_objects(std::size_t n) {
  std::string text = "[";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) text += ",";
    text += R"({"ph": "X", "ts": )" + std::to_string(i) + R"(, "dur": 1.5})";
  }
  return text + "]";
}

// Seconds of the fastest of `runs` parses of `text` (the run least slowed by other load), and the
// document of the last.
struct TimedParse {
  double seconds;
  nlohmann::json doc;
};
TimedParse fastest_parse(const std::string& text, int runs) {
  TimedParse best{1e300, {}};
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    best.doc = parse_json_text(text, "large.json");
    best.seconds = std::min(best.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

TEST_CASE("a 200k-element array of objects parses in time linear in its length", "[json_text]") {
  // nlohmann 3.11.2's callback parser, which parse_json_text once used, rescans the enclosing
  // array at the end of every object: 4x the time per doubling (release build: 0.10 s for 10k
  // elements, 1.6 s for 40k, about 40 s for 200k). Linear parsing takes ~10x for 10x the elements;
  // the bound of 40x leaves room for a loaded machine and cache effects, quadratic would be 100x.
  // Each size keeps its fastest of several runs, so that one preempted run (ctest -j2 on two
  // cores) cannot decide the ratio.
  constexpr std::size_t kSmall = 20000;
  constexpr std::size_t kLarge = 200000;
  const TimedParse small = fastest_parse(array_of_objects(kSmall), 5);
  const TimedParse large = fastest_parse(array_of_objects(kLarge), 4);
  REQUIRE(small.doc.size() == kSmall);
  REQUIRE(large.doc.size() == kLarge);
  CHECK(large.doc[kLarge - 1] == nlohmann::json{{"ph", "X"}, {"ts", kLarge - 1}, {"dur", 1.5}});
  INFO(kSmall << " elements: " << small.seconds << " s; " << kLarge << " elements: " << large.seconds << " s");
  CHECK(large.seconds < 40.0 * small.seconds);
#ifdef NDEBUG
  CHECK(large.seconds < 5.0);  // optimised builds (release, sanitizers' RelWithDebInfo) take well under 1 s
#endif
}

TEST_CASE("valid JSON parses to the same value nlohmann gives", "[json_text]") {
  const std::string text = R"({"a": [1, 2.5, "x", null, true], "b": {"c": {}}, "d": []})";
  CHECK(parse_json_text(text, "doc.json") == nlohmann::json::parse(text));
  CHECK(parse_json_text("  42  ", "doc.json") == 42);
  // The same key in different objects (siblings, nesting, array elements) is not a duplicate.
  CHECK_NOTHROW(parse_json_text(R"({"a": {"a": 1}, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]})", "doc.json"));
}

TEST_CASE("a syntax error names the line and the column where parsing stopped", "[json_text]") {
  // Line 3 is `  "b": ]`: two spaces, "b" in columns 3-5, ':' in 6, a space in 7, ']' in 8.
  const std::string text = "{\n  \"a\": 1,\n  \"b\": ]\n}\n";
  CHECK_THROWS_MATCHES(parse_json_text(text, "multi.json"), ConfigError,
                       config_error("multi.json", "", {"invalid JSON at line 3, column 8", "unexpected ']'"}));
  // The first character of the document.
  CHECK_THROWS_MATCHES(parse_json_text("]", "one.json"), ConfigError,
                       config_error("one.json", "", {"line 1, column 1"}));
  // A later line, deeper in: line 5 is `    "d": }` with '}' in column 10.
  const std::string deeper = "{\n  \"a\": {\n    \"b\": 1,\n    \"c\": 2,\n    \"d\": }\n  }\n}";
  CHECK_THROWS_MATCHES(parse_json_text(deeper, "deep.json"), ConfigError,
                       config_error("deep.json", "", {"line 5, column 10"}));
}

TEST_CASE("syntax errors of every kind are ConfigErrors without nlohmann's exception prefix", "[json_text]") {
  for (const char* text : {"", "{", "{\"a\": }", "[1, 2", "{\"a\" 1}", "{'a': 1}", "{\"a\": 1,}", "nul",
                           "{\"a\": 01}", "\"unterminated", "{} {}"}) {
    INFO("text: " << text);
    const ConfigError e = parse_failure(text);
    CHECK(e.origin() == "doc.json");
    CHECK(e.pointer().empty());
    CHECK_THAT(e.message(), Catch::StartsWith("invalid JSON at line "));
    CHECK_THAT(e.message(), !Catch::Contains("json.exception"));
  }
}

TEST_CASE("a number too large for a double is a ConfigError, not an nlohmann exception", "[json_text]") {
  for (const char* text : {R"({"a": 1e400})", R"({"a": [-1e400]})"}) {
    INFO(text);
    const ConfigError e = parse_failure(text);
    CHECK(e.origin() == "doc.json");
    CHECK_THAT(e.message(), Catch::StartsWith("invalid JSON"));
    CHECK_THAT(e.message(), Catch::Contains("1e400"));
  }
}

TEST_CASE("a duplicate key is rejected and named with its JSON pointer", "[json_text]") {
  check_duplicate(R"({"a": 1, "a": 2})", "", "a");
  check_duplicate(R"({"x": {"y": 1, "z": 2, "y": 3}})", "/x", "y");
  check_duplicate(R"({"x": {"w": {"y": 1, "y": 1}}})", "/x/w", "y");
  // Inside arrays the element index is part of the pointer.
  check_duplicate(R"({"a": [{"k": 1}, {"k": 1, "k": 2}]})", "/a/1", "k");
  check_duplicate(R"({"a": [1, "two", [3], {"k": 1, "k": 2}]})", "/a/3", "k");
  check_duplicate(R"([{"k": 1}, [{"q": 1}, {"q": 2, "q": 3}]])", "/1/1", "q");
  // Keys containing '/' and '~' are escaped in the pointer (RFC 6901).
  check_duplicate(R"({"a/b": {"c~d": {"e": 1, "e": 2}}})", "/a~1b/c~0d", "e");
}

TEST_CASE("a duplicate key after a completed sibling object is found at the right place", "[json_text]") {
  // The sibling "first" opens and closes a frame before "second" repeats a key.
  check_duplicate(R"({"first": {"k": 1}, "second": {"k": 1, "j": [1, 2], "k": 2}})", "/second", "k");
  check_duplicate(R"({"first": {"k": 1}, "first": {"k": 1}})", "", "first");
}

TEST_CASE("pointer_append escapes '~' as ~0 and '/' as ~1", "[json_text]") {
  CHECK(ess::pointer_append("", "hardware") == "/hardware");
  CHECK(ess::pointer_append("/hardware", "pcie") == "/hardware/pcie");
  CHECK(ess::pointer_append("/x", "a/b") == "/x/a~1b");
  CHECK(ess::pointer_append("/x", "a~b") == "/x/a~0b");
  CHECK(ess::pointer_append("/x", "~/") == "/x/~0~1");
  CHECK(ess::pointer_append("/x", "~1") == "/x/~01");  // not confused with an escaped '/'
  CHECK(ess::pointer_append("", "") == "/");
  // The escaped pointer addresses the key in nlohmann's own pointer implementation.
  const nlohmann::json doc = {{"a/b", {{"c~d", 7}}}};
  CHECK(doc.at(nlohmann::json::json_pointer(ess::pointer_append(ess::pointer_append("", "a/b"), "c~d"))) == 7);
}

TEST_CASE("describe_json names the type and, for scalars, the value", "[json_text]") {
  CHECK(ess::describe_json(nlohmann::json(nullptr)) == "null");
  CHECK(ess::describe_json(nlohmann::json(true)) == "the boolean true");
  CHECK(ess::describe_json(nlohmann::json(false)) == "the boolean false");
  CHECK(ess::describe_json(nlohmann::json("55GB")) == "the string \"55GB\"");
  CHECK(ess::describe_json(nlohmann::json(55)) == "the number 55");
  CHECK(ess::describe_json(nlohmann::json(-3)) == "the number -3");
  CHECK(ess::describe_json(nlohmann::json(1.5)) == "the number 1.5");
  CHECK(ess::describe_json(nlohmann::json::object()) == "an object");
  CHECK(ess::describe_json(nlohmann::json::array()) == "an array");
}

TEST_CASE("read_json_file reads and parses a file, naming it in syntax errors", "[json_text]") {
  const ess::test::TempDir dir;
  const auto good = dir.write("good.json", R"({"a": [1, 2]})");
  CHECK(ess::read_json_file(good) == nlohmann::json::parse(R"({"a": [1, 2]})"));
  const auto bad = dir.write("bad.json", "{\n  \"a\": 1,\n  \"b\": ]\n}\n");
  CHECK_THROWS_MATCHES(ess::read_json_file(bad), ConfigError, config_error(bad.string(), "", {"line 3, column 8"}));
  const auto dup = dir.write("dup.json", R"({"hardware": {"nodes": 1, "nodes": 2}})");
  CHECK_THROWS_MATCHES(ess::read_json_file(dup), ConfigError,
                       Catch::Predicate<ConfigError>([&](const ConfigError& e) {
                         return e.origin() == dup.string() &&
                                e.message().find("duplicate key \"nodes\"") != std::string::npos;
                       }, "duplicate key error naming the file"));
}

TEST_CASE("read_text_file returns the bytes of a file and rejects what is not a readable file", "[json_text]") {
  const ess::test::TempDir dir;
  const std::string bytes = std::string("{\"a\":\r\n1}\0tail", 14);
  CHECK(ess::read_text_file(dir.write("raw.json", bytes)) == bytes);
  const auto missing = dir.path() / "nope.json";
  CHECK_THROWS_MATCHES(ess::read_text_file(missing), ConfigError, config_error(missing.string(), "", {"no such file"}));
  CHECK_THROWS_MATCHES(ess::read_text_file(dir.path()), ConfigError,
                       config_error(dir.path().string(), "", {"is a directory"}));
}

TEST_CASE("read_json_file rejects a missing file and a directory, naming the path", "[json_text]") {
  const ess::test::TempDir dir;
  const auto missing = dir.path() / "no-such-file.json";
  CHECK_THROWS_MATCHES(ess::read_json_file(missing), ConfigError, config_error(missing.string(), "", {"no such file"}));
  CHECK_THROWS_MATCHES(ess::read_json_file(dir.path()), ConfigError,
                       config_error(dir.path().string(), "", {"is a directory"}));
  const auto empty = dir.write("empty.json", "");
  CHECK_THROWS_MATCHES(ess::read_json_file(empty), ConfigError, config_error(empty.string(), "", {"invalid JSON"}));
}
