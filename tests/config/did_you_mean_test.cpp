#include "sim/config/did_you_mean.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using ess::closest_match;
using ess::did_you_mean;
using ess::edit_distance;

TEST_CASE("edit_distance counts insertions, deletions and substitutions, case-sensitively", "[did_you_mean]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);  // the textbook example: k->s, e->i, +g
  CHECK(edit_distance("flaw", "lawn") == 2);
  CHECK(edit_distance("gb/s", "GB/s") == 2);
  CHECK(edit_distance("seed", "seeed") == 1);
  CHECK(edit_distance("acceptance", "acceptence") == 1);
  CHECK(edit_distance("abc", "abc") == 0);
  CHECK(edit_distance("ab", "ba") == 2);  // no transpositions
}

TEST_CASE("close typos are suggested", "[did_you_mean]") {
  const std::vector<std::string> keys = {"batch_per_gpu", "context_length", "decode_steps", "mtp"};
  CHECK(closest_match("context_lenght", keys) == "context_length");
  CHECK(closest_match("batch_per_gp", keys) == "batch_per_gpu");
  CHECK(closest_match("decode_step", keys) == "decode_steps");
  CHECK(closest_match("mpt", keys) == "mtp");
  CHECK(did_you_mean("contex_length", keys) == " (did you mean \"context_length\"?)");
}

TEST_CASE("words far from every candidate get no suggestion", "[did_you_mean]") {
  const std::vector<std::string> keys = {"bandwidth", "latency"};
  CHECK_FALSE(closest_match("throughput", keys).has_value());
  CHECK_FALSE(closest_match("xyz", keys).has_value());
  CHECK(did_you_mean("throughput", keys).empty());
  CHECK_FALSE(closest_match("anything", {}).has_value());
}

TEST_CASE("the accepted distance grows with the word: at most max(2, length / 3)", "[did_you_mean]") {
  // 12 letters: up to 4 edits.
  const std::vector<std::string> long_word = {"abcdefghijkl"};
  CHECK(closest_match("abcdefghWXYZ", long_word) == "abcdefghijkl");      // 4 edits
  CHECK_FALSE(closest_match("abcdefgVWXYZ", long_word).has_value());      // 5 edits
  // 3 letters: up to 2 edits.
  const std::vector<std::string> short_word = {"abc"};
  CHECK(closest_match("axy", short_word) == "abc");
  CHECK_FALSE(closest_match("xyz", short_word).has_value());
}

TEST_CASE("a word equal to a candidate ignoring case is suggested whatever its distance", "[did_you_mean]") {
  const std::vector<std::string> units = {"B/s", "kB/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  CHECK(closest_match("gb/s", units) == "GB/s");
  CHECK(closest_match("TB/S", units) == "TB/s");
  const std::vector<std::string> long_key = {"switch_uplink_bandwidth"};
  CHECK(closest_match("SWITCH_UPLINK_BANDWIDTH", long_key) == "switch_uplink_bandwidth");
  // Case-insensitive equality beats a case-sensitive near miss earlier in the list.
  const std::vector<std::string> names = {"ab", "AB"};
  CHECK(closest_match("Ab", names) == "ab");
  const std::vector<std::string> names2 = {"xAb", "AB"};
  CHECK(closest_match("ab", names2) == "AB");
}

TEST_CASE("ties go to the earliest candidate, so suggestions are deterministic", "[did_you_mean]") {
  const std::vector<std::string> forward = {"cat", "cut", "cot"};
  const std::vector<std::string> backward = {"cot", "cut", "cat"};
  CHECK(closest_match("cit", forward) == "cat");
  CHECK(closest_match("cit", backward) == "cot");
  // A strictly closer candidate later in the list still wins.
  const std::vector<std::string> later = {"axxx", "abcx"};
  CHECK(closest_match("abcd", later) == "abcx");
}

TEST_CASE("quoted_list joins items with commas and a final or", "[did_you_mean]") {
  CHECK(ess::quoted_list(std::vector<std::string>{}).empty());
  CHECK(ess::quoted_list(std::vector<std::string>{"a"}) == "\"a\"");
  CHECK(ess::quoted_list(std::vector<std::string>{"a", "b"}) == "\"a\" or \"b\"");
  CHECK(ess::quoted_list(std::vector<std::string>{"a", "b", "c"}) == "\"a\", \"b\" or \"c\"");
}
