#include "sim/config/reader.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/config_error.h"
#include "tests/config/config_test_support.h"

using ess::ConfigError;
using ess::ObjectReader;
using ess::Origins;
using ess::Range;
using ess::test::config_error;

namespace {

const std::string kDoc = "doc.json";

// A reader over `text` (a JSON object) at pointer "/sec" of the document doc.json.
struct Fixture {
  explicit Fixture(const std::string& text) : value(nlohmann::json::parse(text)), origins(kDoc) {}
  nlohmann::json value;
  Origins origins;
  ObjectReader reader() const { return ObjectReader(value, "/sec", origins); }
};

}  // namespace

TEST_CASE("Origins gives each pointer the origin of its longest registered prefix", "[reader]") {
  Origins o("scenario.json");
  o.set("/hardware", "built-in preset scenarios/hardware/h200-sxm.json");
  o.set("/hardware/gpu/count", "--set hardware.gpu.count=4");
  CHECK(o.at("") == "scenario.json");
  CHECK(o.at("/workload/mtp/depth") == "scenario.json");
  CHECK(o.at("/hardware") == "built-in preset scenarios/hardware/h200-sxm.json");
  CHECK(o.at("/hardware/gpu/kind") == "built-in preset scenarios/hardware/h200-sxm.json");
  CHECK(o.at("/hardware/gpu/count") == "--set hardware.gpu.count=4");
  CHECK(o.at("/hardware/gpu/count/value") == "--set hardware.gpu.count=4");
  // Prefixes are whole reference tokens: "/hardwarex" is not under "/hardware".
  CHECK(o.at("/hardwarex/y") == "scenario.json");
  CHECK(o.at("/hardware/gpu/counter") == "built-in preset scenarios/hardware/h200-sxm.json");
}

TEST_CASE("Range contains and describes its bounds", "[reader]") {
  CHECK_FALSE(Range::positive().contains(0.0));
  CHECK(Range::positive().contains(1e-300));
  CHECK(Range::positive().describe() == "> 0");
  CHECK(Range::non_negative().contains(0.0));
  CHECK_FALSE(Range::non_negative().contains(-1e-300));
  CHECK(Range::non_negative().describe() == ">= 0");
  CHECK(Range::at_least(1).contains(1.0));
  CHECK_FALSE(Range::at_least(1).contains(0.999));
  CHECK(Range::at_least(1).describe() == ">= 1");
  CHECK(Range::closed(1, 64).contains(1.0));
  CHECK(Range::closed(1, 64).contains(64.0));
  CHECK_FALSE(Range::closed(1, 64).contains(64.5));
  CHECK(Range::closed(1, 64).describe() == "in [1, 64]");
  CHECK_FALSE(Range::left_open(0, 1).contains(0.0));
  CHECK(Range::left_open(0, 1).contains(1.0));
  CHECK(Range::left_open(0, 1).describe() == "in (0, 1]");
  CHECK(Range::any().contains(-1e300));
  CHECK(Range::any().describe() == "a finite number");
  // Nothing non-finite is in any range.
  for (const Range r : {Range::any(), Range::positive(), Range::at_least(0)}) {
    CHECK_FALSE(r.contains(std::numeric_limits<double>::infinity()));
    CHECK_FALSE(r.contains(std::numeric_limits<double>::quiet_NaN()));
  }
}

TEST_CASE("a value with provenance is unwrapped and its source recorded", "[reader]") {
  const Fixture f(R"({
    "bw": {"value": "4.8TB/s", "source": "NVIDIA H200 datasheet"},
    "n": {"value": 8, "source": "HGX baseboard"},
    "plain": "55GB/s",
    "nosource": {"value": 3}
  })");
  auto r = f.reader();
  CHECK(r.bandwidth("bw", Range::positive()).value() == 4.8e12);
  CHECK(r.integer("n", Range::at_least(1)) == 8);
  CHECK(r.bandwidth("plain", Range::positive()).value() == 5.5e10);
  CHECK(r.integer("nosource", Range::any()) == 3);
  r.finish();
  const auto& out = r.resolved();
  CHECK(out["bw"] == nlohmann::ordered_json({{"value", "4.8TB/s"}, {"source", "NVIDIA H200 datasheet"}}));
  CHECK(out["n"] == nlohmann::ordered_json({{"value", 8}, {"source", "HGX baseboard"}}));
  // Without a source, the origin of the document is the source.
  CHECK(out["plain"] == nlohmann::ordered_json({{"value", "55GB/s"}, {"source", kDoc}}));
  CHECK(out["nosource"]["source"] == kDoc);
}

TEST_CASE("quantities are recorded in a canonical spelling that parses back to the same value", "[reader]") {
  const Fixture f(R"({"a": "0.82 us", "b": "150754820096B", "c": "400Gbit/s", "d": "989 TFLOPS"})");
  auto r = f.reader();
  CHECK(r.seconds("a", Range::any()).value() == 0.82e-6);
  CHECK(r.bytes("b", Range::any()).value() == 150754820096.0);
  CHECK(r.bandwidth("c", Range::any()).value() == 5e10);
  CHECK(r.compute_rate("d", Range::any()).value() == 9.89e14);
  r.finish();
  CHECK(r.resolved()["a"]["value"] == "820ns");
  CHECK(r.resolved()["b"]["value"] == "143771MiB");
  CHECK(r.resolved()["c"]["value"] == "50GB/s");
  CHECK(r.resolved()["d"]["value"] == "989TFLOP/s");
}

TEST_CASE("a wrapped value takes only \"value\" and \"source\", and the source must be a string", "[reader]") {
  {
    const Fixture f(R"({"n": {"value": 8, "sorce": "typo"}})");
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("n", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/n", {"unknown key \"sorce\"", "\"value\" and \"source\""}));
  }
  {
    const Fixture f(R"({"n": {"value": 8, "source": 42}})");
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("n", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/n", {"\"source\" must be a string", "the number 42"}));
  }
}

TEST_CASE("an unknown key is rejected at finish with a did-you-mean and the list of known keys", "[reader]") {
  {
    const Fixture f(R"({"latency": "2us", "latncy": "3us"})");
    auto r = f.reader();
    CHECK(r.seconds("latency", Range::non_negative()).value() == 2e-6);
    CHECK_THROWS_MATCHES(r.finish(), ConfigError,
                         config_error(kDoc, "/sec/latncy",
                                      {"unknown key \"latncy\"", "did you mean \"latency\"?",
                                       "known keys here: \"latency\""}));
  }
  {
    // Nothing close: no suggestion, only the list.
    const Fixture f(R"({"latency": "2us", "bandwith": "300GB/s"})");
    auto r = f.reader();
    (void)r.seconds("latency", Range::non_negative());
    CHECK_THROWS_WITH(r.finish(), Catch::Contains("unknown key \"bandwith\"; known keys here: \"latency\""));
  }
}

TEST_CASE("the unknown-key message lists every key the object takes", "[reader]") {
  const Fixture f(R"({"bandwidth": "300GB/s", "latency": "2us", "bandwith": "1GB/s"})");
  auto r = f.reader();
  (void)r.bandwidth("bandwidth", Range::positive());
  (void)r.seconds("latency", Range::non_negative());
  (void)r.optional_text("note");  // asked for, absent: still a known key
  CHECK_THROWS_MATCHES(r.finish(), ConfigError,
                       config_error(kDoc, "/sec/bandwith",
                                    {"did you mean \"bandwidth\"?", "known keys here: \"bandwidth\", \"latency\" or \"note\""}));
}

TEST_CASE("an object that takes no keys says so", "[reader]") {
  const Fixture f(R"({"anything": 1})");
  auto r = f.reader();
  CHECK_THROWS_MATCHES(r.finish(), ConfigError,
                       config_error(kDoc, "/sec/anything", {"unknown key \"anything\"", "takes no keys"}));
}

TEST_CASE("unknown keys are reported in sorted order, so the error is deterministic", "[reader]") {
  const Fixture f(R"({"zeta": 1, "alpha": 2, "mid": 3})");
  auto r = f.reader();
  CHECK_THROWS_MATCHES(r.finish(), ConfigError, config_error(kDoc, "/sec/alpha", {"unknown key \"alpha\""}));
}

TEST_CASE("a value of the wrong JSON type is rejected with what was expected and what was found", "[reader]") {
  const Fixture f(R"({"num": 55, "str": "x", "obj": {}, "arr": [], "flt": 1.5, "bool": true})");
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.bandwidth("num", Range::positive()), ConfigError,
                         config_error(kDoc, "/sec/num", {"expected a bandwidth such as \"55GB/s\"",
                                                         "a string with a unit", "got the number 55"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("str", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/str", {"expected an integer", "got the string \"x\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("flt", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/flt", {"expected an integer", "got the number 1.5"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.number("bool", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/bool", {"expected a number", "got the boolean true"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.text("num"), ConfigError,
                         config_error(kDoc, "/sec/num", {"expected a string", "got the number 55"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.flops("str", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/str", {"expected a FLOP count", "got the string \"x\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.choice("arr", {"rms", "layer"}), ConfigError,
                         config_error(kDoc, "/sec/arr", {"expected one of \"rms\" or \"layer\"", "got an array"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.object("num"), ConfigError,
                         config_error(kDoc, "/sec/num", {"expected an object", "got the number 55"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.seconds("obj", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/obj", {"expected a duration", "got an object"}));
  }
}

TEST_CASE("a reader over something that is not an object is rejected at its own pointer", "[reader]") {
  const nlohmann::json array = nlohmann::json::array();
  const Origins origins(kDoc);
  CHECK_THROWS_MATCHES(ObjectReader(array, "/hardware/gpu", origins), ConfigError,
                       config_error(kDoc, "/hardware/gpu", {"expected an object", "got an array"}));
}

TEST_CASE("quantities outside their range are rejected with the range and the text as written", "[reader]") {
  const Fixture f(R"({"neg": "-5GB/s", "zero": "0GB/s", "neg_t": "-1us", "big": "2KiB"})");
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.bandwidth("neg", Range::positive()), ConfigError,
                         config_error(kDoc, "/sec/neg", {"must be > 0", "\"-5GB/s\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.bandwidth("zero", Range::positive()), ConfigError,
                         config_error(kDoc, "/sec/zero", {"must be > 0", "\"0GB/s\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.seconds("neg_t", Range::non_negative()), ConfigError,
                         config_error(kDoc, "/sec/neg_t", {"must be >= 0", "\"-1us\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.bytes("big", Range::closed(0, 2000)), ConfigError,
                         config_error(kDoc, "/sec/big", {"must be in [0B, 2kB]", "\"2KiB\""}));
    // 2KiB = 2048 B fits once the bound allows it.
    auto r2 = f.reader();
    CHECK(r2.bytes("big", Range::closed(0, 2048)).value() == 2048.0);
  }
}

TEST_CASE("a quantity with a bad unit reports the parser's error at the key's pointer", "[reader]") {
  const Fixture f(R"({"bw": "55GB", "t": "1.5 sec"})");
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.bandwidth("bw", Range::positive()), ConfigError,
                         config_error(kDoc, "/sec/bw", {"expected a bandwidth", "a size"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.seconds("t", Range::positive()), ConfigError,
                         config_error(kDoc, "/sec/t", {"unknown unit \"sec\"", "did you mean \"s\"?"}));
  }
}

TEST_CASE("integers and numbers outside their range are rejected with the range", "[reader]") {
  const Fixture f(R"({"count": 0, "gen": 8, "eff": 1.2, "eff0": 0, "steps": -1})");
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("count", Range::at_least(1)), ConfigError,
                         config_error(kDoc, "/sec/count", {"must be >= 1", "got 0"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("gen", Range::closed(1, 7)), ConfigError,
                         config_error(kDoc, "/sec/gen", {"must be in [1, 7]", "got 8"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.number("eff", Range::left_open(0, 1)), ConfigError,
                         config_error(kDoc, "/sec/eff", {"must be in (0, 1]", "got 1.2"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.number("eff0", Range::left_open(0, 1)), ConfigError,
                         config_error(kDoc, "/sec/eff0", {"must be in (0, 1]", "got 0"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.flops("steps", Range::non_negative()), ConfigError,
                         config_error(kDoc, "/sec/steps", {"must be >= 0", "got -1"}));
  }
}

TEST_CASE("integers at the edges of the range are accepted", "[reader]") {
  const Fixture f(R"({"lo": 1, "hi": 7, "min": -9223372036854775808, "max": 9223372036854775807})");
  auto r = f.reader();
  CHECK(r.integer("lo", Range::closed(1, 7)) == 1);
  CHECK(r.integer("hi", Range::closed(1, 7)) == 7);
  CHECK(r.integer("min", Range::any()) == std::numeric_limits<std::int64_t>::min());
  CHECK(r.integer("max", Range::any()) == std::numeric_limits<std::int64_t>::max());
  r.finish();
}

TEST_CASE("an integer beyond 64 bits is rejected as too large, not wrapped", "[reader]") {
  const Fixture f(R"({"u": 9223372036854775808, "umax": 18446744073709551615, "huge": 18446744073709551616,
                     "neg": -9223372036854775809})");
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("u", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/u", {"9223372036854775808", "too large"}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer("umax", Range::at_least(1)), ConfigError,
                         config_error(kDoc, "/sec/umax", {"18446744073709551615", "too large"}));
  }
  // Beyond 2^64 nlohmann reads a double: rejected as not an integer.
  for (const char* key : {"huge", "neg"}) {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.integer(key, Range::any()), ConfigError,
                         config_error(kDoc, std::string("/sec/") + key, {"expected an integer"}));
  }
}

TEST_CASE("numbers accept percentages: \"90%\" is 0.9", "[reader]") {
  const Fixture f(R"({"a": "90%", "b": "100%", "c": "12.5 %", "d": 0.25, "e": "150%", "f": "ninety%", "g": "%",
                     "h": "0.9"})");
  {
    auto r = f.reader();
    CHECK(r.number("a", Range::left_open(0, 1)) == 0.9);
    CHECK(r.number("b", Range::left_open(0, 1)) == 1.0);
    CHECK(r.number("c", Range::left_open(0, 1)) == 0.125);
    CHECK(r.number("d", Range::left_open(0, 1)) == 0.25);
    CHECK_THROWS_MATCHES(r.number("e", Range::left_open(0, 1)), ConfigError,
                         config_error(kDoc, "/sec/e", {"must be in (0, 1]", "got 1.5"}));
  }
  {
    auto r = f.reader();
    (void)r.number("a", Range::any());
    CHECK(r.resolved()["a"]["value"] == 0.9);  // recorded as the plain number
  }
  for (const char* key : {"f", "g"}) {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.number(key, Range::any()), ConfigError,
                         config_error(kDoc, std::string("/sec/") + key, {"percentage such as \"90%\""}));
  }
  {
    auto r = f.reader();
    CHECK_THROWS_MATCHES(r.number("h", Range::any()), ConfigError,
                         config_error(kDoc, "/sec/h", {"expected a number", "the string \"0.9\""}));
  }
}

TEST_CASE("a missing required key is rejected at the pointer it should have had", "[reader]") {
  const Fixture f(R"({"present": 1, "nul": null})");
  const std::vector<std::pair<std::string, std::function<void(ObjectReader&)>>> reads = {
      {"a size", [](ObjectReader& r) { (void)r.bytes("x", Range::any()); }},
      {"a duration", [](ObjectReader& r) { (void)r.seconds("x", Range::any()); }},
      {"a bandwidth", [](ObjectReader& r) { (void)r.bandwidth("x", Range::any()); }},
      {"a compute rate", [](ObjectReader& r) { (void)r.compute_rate("x", Range::any()); }},
      {"a FLOP count", [](ObjectReader& r) { (void)r.flops("x", Range::any()); }},
      {"an integer", [](ObjectReader& r) { (void)r.integer("x", Range::any()); }},
      {"a number", [](ObjectReader& r) { (void)r.number("x", Range::any()); }},
      {"a string", [](ObjectReader& r) { (void)r.text("x"); }},
      {"one of \"a\" or \"b\"", [](ObjectReader& r) { (void)r.choice("x", {"a", "b"}); }},
      {"missing required object", [](ObjectReader& r) { (void)r.object("x"); }},
  };
  for (const auto& [expected, read] : reads) {
    auto r = f.reader();
    INFO(expected);
    CHECK_THROWS_MATCHES(read(r), ConfigError, config_error(kDoc, "/sec/x", {"missing required", "\"x\"", expected}));
  }
  // null is as good as missing for a required key.
  auto r = f.reader();
  CHECK_THROWS_MATCHES(r.integer("nul", Range::any()), ConfigError,
                       config_error(kDoc, "/sec/nul", {"missing required key \"nul\""}));
}

TEST_CASE("choice accepts only the listed strings and suggests the closest", "[reader]") {
  const Fixture f(R"({"ok": "bf16", "typo": "bf61", "case": "BF16", "far": "int4"})");
  const std::vector<std::string> dtypes = {"fp32", "bf16", "fp16", "fp8"};
  auto r = f.reader();
  CHECK(r.choice("ok", dtypes) == "bf16");
  CHECK_THROWS_MATCHES(r.choice("typo", dtypes), ConfigError,
                       config_error(kDoc, "/sec/typo", {"expected one of \"fp32\", \"bf16\", \"fp16\" or \"fp8\"",
                                                         "got \"bf61\"", "did you mean \"bf16\"?"}));
  CHECK_THROWS_MATCHES(r.choice("case", dtypes), ConfigError,
                       config_error(kDoc, "/sec/case", {"did you mean \"bf16\"?"}));
  auto r2 = f.reader();
  CHECK_THROWS_WITH(r2.choice("far", dtypes), !Catch::Contains("did you mean"));
}

TEST_CASE("fields with defaults record the default with source \"default\"", "[reader]") {
  const Fixture f(R"({"given": 3})");
  auto r = f.reader();
  CHECK(r.integer_or("given", Range::any(), 1) == 3);
  CHECK(r.integer_or("steps", Range::any(), 16) == 16);
  CHECK(r.number_or("acceptance", Range::any(), 1.0) == 1.0);
  CHECK(r.choice_or("mode", {"gpu"}, "gpu") == "gpu");
  r.finish();
  const auto& out = r.resolved();
  CHECK(out["given"] == nlohmann::ordered_json({{"value", 3}, {"source", kDoc}}));
  CHECK(out["steps"] == nlohmann::ordered_json({{"value", 16}, {"source", "default"}}));
  CHECK(out["acceptance"] == nlohmann::ordered_json({{"value", 1.0}, {"source", "default"}}));
  CHECK(out["mode"] == nlohmann::ordered_json({{"value", "gpu"}, {"source", "default"}}));
}

TEST_CASE("a default applies to null and to a wrapped null, but a present value is still checked", "[reader]") {
  const Fixture f(R"({"a": null, "b": {"value": null, "source": "check output"}, "c": 0})");
  auto r = f.reader();
  CHECK(r.integer_or("a", Range::at_least(1), 5) == 5);
  CHECK(r.integer_or("b", Range::at_least(1), 6) == 6);
  CHECK_THROWS_MATCHES(r.integer_or("c", Range::at_least(1), 7), ConfigError,
                       config_error(kDoc, "/sec/c", {"must be >= 1", "got 0"}));
}

TEST_CASE("optional fields read absent, null and wrapped null as empty and record that", "[reader]") {
  const Fixture f(R"({"fp8": null, "fp16": {"value": null, "source": "not on this GPU"}, "bf16": "989.4TFLOP/s",
                     "note": null})");
  auto r = f.reader();
  CHECK_FALSE(r.optional_compute_rate("fp8", Range::positive()).has_value());
  CHECK_FALSE(r.optional_compute_rate("fp16", Range::positive()).has_value());
  CHECK_FALSE(r.optional_compute_rate("fp32", Range::positive()).has_value());
  CHECK(r.optional_compute_rate("bf16", Range::positive())->value() == 9.894e14);
  CHECK_FALSE(r.optional_text("note").has_value());
  CHECK_FALSE(r.optional_text("missing").has_value());
  r.finish();
  const auto& out = r.resolved();
  CHECK(out["fp8"]["value"].is_null());
  CHECK(out["fp8"]["source"] == kDoc);
  CHECK(out["fp16"] == nlohmann::ordered_json({{"value", nullptr}, {"source", "not on this GPU"}}));
  CHECK(out["fp32"] == nlohmann::ordered_json({{"value", nullptr}, {"source", "absent"}}));
  CHECK(out["bf16"]["value"] == "989.4TFLOP/s");
}

TEST_CASE("an optional field that is present is still type- and range-checked", "[reader]") {
  const Fixture f(R"({"fp8": "-1TFLOP/s", "note": 5})");
  auto r = f.reader();
  CHECK_THROWS_MATCHES(r.optional_compute_rate("fp8", Range::positive()), ConfigError,
                       config_error(kDoc, "/sec/fp8", {"must be > 0"}));
  CHECK_THROWS_MATCHES(r.optional_text("note"), ConfigError,
                       config_error(kDoc, "/sec/note", {"expected a string", "the number 5"}));
}

TEST_CASE("has() is false for absent, null and wrapped-null keys only", "[reader]") {
  const Fixture f(R"({"a": 1, "b": null, "c": {"value": null}, "d": {"value": 0}, "e": {}})");
  const auto r = f.reader();
  CHECK(r.has("a"));
  CHECK_FALSE(r.has("b"));
  CHECK_FALSE(r.has("c"));
  CHECK(r.has("d"));
  CHECK(r.has("e"));
  CHECK_FALSE(r.has("z"));
  CHECK(r.has_object("e"));
  CHECK_FALSE(r.has_object("a"));
}

TEST_CASE("finish() hands a child's resolved values to its parent, in reading order", "[reader]") {
  const Fixture f(R"({"name": "n", "child": {"b": "2us", "a": 1}, "after": 2})");
  auto parent = f.reader();
  (void)parent.text("name");
  {
    auto child = parent.object("child");
    CHECK(child.pointer() == "/sec/child");
    CHECK(child.integer("a", Range::any()) == 1);
    CHECK(child.seconds("b", Range::any()).value() == 2e-6);
    // Not handed over before finish(): the parent holds an empty placeholder.
    CHECK(parent.resolved()["child"] == nlohmann::ordered_json::object());
    child.finish();
  }
  (void)parent.integer("after", Range::any());
  parent.finish();
  const auto& out = parent.resolved();
  CHECK(out["child"]["a"] == nlohmann::ordered_json({{"value", 1}, {"source", kDoc}}));
  CHECK(out["child"]["b"] == nlohmann::ordered_json({{"value", "2us"}, {"source", kDoc}}));
  // Reading order, not the document's (sorted) order: name, child (a before b), after.
  std::vector<std::string> keys;
  for (const auto& [k, v] : out.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"name", "child", "after"});
  std::vector<std::string> child_keys;
  for (const auto& [k, v] : out["child"].items()) child_keys.push_back(k);
  CHECK(child_keys == std::vector<std::string>{"a", "b"});
}

TEST_CASE("a child's unknown key is reported at the child's pointer", "[reader]") {
  const Fixture f(R"({"pcie": {"generation": 5, "genration": 4}})");
  auto parent = f.reader();
  auto child = parent.object("pcie");
  (void)child.integer("generation", Range::closed(1, 7));
  CHECK_THROWS_MATCHES(child.finish(), ConfigError,
                       config_error(kDoc, "/sec/pcie/genration", {"did you mean \"generation\"?"}));
}

TEST_CASE("object_or_empty reads an absent object as empty and its defaults still land in the parent",
          "[reader]") {
  const Fixture f(R"({})");
  auto parent = f.reader();
  {
    auto child = parent.object_or_empty("mtp");
    CHECK(child.pointer() == "/sec/mtp");
    CHECK(child.integer_or("depth", Range::closed(1, 64), 1) == 1);
    child.finish();
  }
  parent.finish();
  CHECK(parent.resolved()["mtp"]["depth"] == nlohmann::ordered_json({{"value", 1}, {"source", "default"}}));
}

TEST_CASE("errors name the origin registered for the failing pointer", "[reader]") {
  const nlohmann::json value = nlohmann::json::parse(R"({"hw": {"bw": "fast", "n": "x"}})");
  Origins origins("scenario.json");
  origins.set("/hw", "built-in preset scenarios/hardware/h200-sxm.json");
  origins.set("/hw/n", "--set hw.n=x");
  ObjectReader root(value, "", origins);
  auto hw = root.object("hw");
  CHECK_THROWS_MATCHES(hw.bandwidth("bw", Range::positive()), ConfigError,
                       config_error("built-in preset scenarios/hardware/h200-sxm.json", "/hw/bw", {"a bandwidth"}));
  CHECK_THROWS_MATCHES(hw.integer("n", Range::any()), ConfigError, config_error("--set hw.n=x", "/hw/n"));
  CHECK_THROWS_MATCHES(hw.fail("", "custom"), ConfigError,
                       config_error("built-in preset scenarios/hardware/h200-sxm.json", "/hw", {"custom"}));
}

TEST_CASE("record() and take() mark keys as consumed and keep the provenance", "[reader]") {
  const Fixture f(R"({"batch": {"value": "max", "source": "sweep"}, "derived": 1})");
  auto r = f.reader();
  std::string source;
  const nlohmann::json* batch = r.take("batch", source);
  REQUIRE(batch != nullptr);
  CHECK(*batch == "max");
  CHECK(source == "sweep");
  CHECK(r.take("absent", source) == nullptr);
  r.record("batch", "max", source);
  r.record("derived", 42, "derived: test");
  CHECK_NOTHROW(r.finish());
  CHECK(r.resolved()["derived"] == nlohmann::ordered_json({{"value", 42}, {"source", "derived: test"}}));
}
