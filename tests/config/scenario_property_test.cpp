// Property: whatever a user writes, the scenario loader either succeeds or throws ess::ConfigError;
// never another exception (nlohmann type errors, std::out_of_range, ...), never a crash. Mutates the
// bundled scenario and its fully resolved (inline) form with a fixed seed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/config/scenario.h"
#include "tests/config/config_test_support.h"

using nlohmann::json;

namespace {

// Our own draws from the generator (std::*_distribution is not portable).
std::size_t pick(std::mt19937_64& rng, std::size_t n) { return static_cast<std::size_t>(rng() % n); }

// Pointers of every value in the document (objects included, the root excluded).
void collect(const json& v, const std::string& pointer, std::vector<std::string>& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) {
      const std::string p = ess::pointer_append(pointer, k);
      out.push_back(p);
      collect(x, p, out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string p = pointer + "/" + std::to_string(i);
      out.push_back(p);
      collect(v[i], p, out);
    }
  }
}

// Pointers of every object in the document, the root included.
void collect_objects(const json& v, const std::string& pointer, std::vector<std::string>& out) {
  if (!v.is_object()) return;
  out.push_back(pointer);
  for (const auto& [k, x] : v.items()) collect_objects(x, ess::pointer_append(pointer, k), out);
}

// Replacement values of other types and edge values, including integers that would overflow
// int or int64 arithmetic if a range check were missing.
json random_value(std::mt19937_64& rng) {
  static const std::vector<json> values = {
      nullptr, true, false, 0, 1, -1, 2, 3, 7, 64, 1000, 65536, 1.5, -0.5, 1e300, 1073741824, 2147483649,
      4294967296, 9223372036854775807,
      json::parse("18446744073709551615"), json::parse("9223372036854775808"), "", "x", "max", "gpu", "offload",
      "55GB", "55GB/s", "-1GB/s", "0GB/s", "1.5us", "989TFLOP/s", "90%", "1e999GB", "nanGB/s", "h200-sxm",
      "deepseek-v3", "llama-2-7b", json::array(), json::array({1, 2}), json::object(),
      json({{"value", 1}}), json({{"value", nullptr}, {"source", "s"}}), json({{"value", "2us"}, {"source", 3}}),
      json({{"preset", "h20"}}), json({{"preset", 5}}),
  };
  return values[pick(rng, values.size())];
}

std::string random_key(std::mt19937_64& rng) {
  static const std::vector<std::string> keys = {"zz", "value", "source", "preset", "seed", "a/b", "~", "",
                                                "batch_per_gpu", "h2d_bandwith", "mtp", "gpu", "nodes"};
  return keys[pick(rng, keys.size())];
}

void mutate(json& doc, std::mt19937_64& rng) {
  std::vector<std::string> pointers;
  collect(doc, "", pointers);
  switch (pick(rng, 3)) {
    case 0: {  // delete a key or element
      if (pointers.empty()) return;
      const json::json_pointer p(pointers[pick(rng, pointers.size())]);
      json& parent = doc.at(p.parent_pointer());
      if (parent.is_object()) {
        parent.erase(p.back());
      } else if (parent.is_array()) {
        parent.erase(std::stoul(p.back()));
      }
      return;
    }
    case 1: {  // change a value (usually its type)
      if (pointers.empty()) return;
      doc.at(json::json_pointer(pointers[pick(rng, pointers.size())])) = random_value(rng);
      return;
    }
    default: {  // insert a key, usually unknown
      std::vector<std::string> objects;
      collect_objects(doc, "", objects);
      doc.at(json::json_pointer(objects[pick(rng, objects.size())]))[random_key(rng)] = random_value(rng);
      return;
    }
  }
}

struct Outcome {
  int loaded = 0;
  int rejected = 0;
};

void check_only_config_errors(const json& base, const std::string& label, std::uint64_t seed, int runs, Outcome& out) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < runs; ++i) {
    json doc = base;
    const std::size_t mutations = 1 + pick(rng, 3);
    for (std::size_t m = 0; m < mutations; ++m) mutate(doc, rng);
    const std::string text = doc.dump();
    try {
      (void)ess::load_scenario_text(text, "mutant.json");
      ++out.loaded;
    } catch (const ess::ConfigError& e) {
      ++out.rejected;
      // Every error says where: a non-empty origin, and a pointer that is empty or starts with '/'.
      INFO(label << " mutant " << i << ": " << text);
      CHECK_FALSE(e.origin().empty());
      CHECK((e.pointer().empty() || e.pointer().front() == '/'));
      CHECK_FALSE(e.message().empty());
    } catch (const std::exception& e) {
      FAIL(label << " mutant " << i << " threw a non-ConfigError: " << e.what() << "\n" << text);
    }
  }
}

}  // namespace

TEST_CASE("mutated scenarios either load or throw ConfigError, nothing else", "[scenario][property]") {
  const json bundled = ess::read_json_file(ess::test::bundled_scenario_path());
  const json inline_form = json::parse(ess::load_scenario(ess::test::bundled_scenario_path()).resolved.dump());
  const json llama_inline = json::parse(
      ess::test::load(json::parse(R"({"model": "llama-3.1-70b", "hardware": "a100-80gb-sxm",
                                      "workload": {"batch_per_gpu": 8, "context_length": 4096}})"))
          .resolved.dump());
  Outcome out;
  check_only_config_errors(bundled, "bundled", 1, 200, out);
  check_only_config_errors(inline_form, "inline", 2, 200, out);
  check_only_config_errors(llama_inline, "llama inline", 3, 100, out);
  // The mutations must exercise both outcomes, or the property says little.
  CHECK(out.rejected > 100);
  CHECK(out.loaded > 10);
}

TEST_CASE("truncated and corrupted scenario texts are rejected with ConfigError", "[scenario][property]") {
  const std::string text = ess::read_json_file(ess::test::bundled_scenario_path()).dump(2);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 200; ++i) {
    std::string t = text;
    if (i % 2 == 0) {
      t.resize(pick(rng, t.size()));  // truncated: never a complete document
    } else {
      t[pick(rng, t.size())] = "{}[]\":,x0 \\"[pick(rng, 12)];
    }
    try {
      (void)ess::load_scenario_text(t, "corrupt.json");
    } catch (const ess::ConfigError&) {
      continue;
    } catch (const std::exception& e) {
      FAIL("non-ConfigError " << e.what() << " for:\n" << t);
    }
  }
  SUCCEED();
}
