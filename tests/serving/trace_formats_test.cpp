// Request traces in Mooncake's and Azure's formats (sim/serving/trace_formats.h): the rows, and the
// precise error of each bad row.
#include <catch2/catch.hpp>

#include "sim/config/config_error.h"
#include "sim/config/serving_config.h"
#include "sim/serving/arrivals.h"
#include "sim/serving/trace_formats.h"
#include "sim/base/error.h"

using ess::ConfigError;
using ess::parse_trace;

namespace {

void fails(const char* format, const std::string& text, const std::string& needle) {
  try {
    (void)parse_trace(format, text, "t", 1e9);
  } catch (const ConfigError& e) {
    INFO(e.what());
    CHECK(e.origin() == "t");
    CHECK_THAT(e.message(), Catch::Contains(needle));
    return;
  }
  FAIL("no error for " << text);
}

}  // namespace

TEST_CASE("trace formats: one parser per name the loader accepts", "[serving][trace]") {
  REQUIRE(ess::trace_formats().size() == std::size(ess::kTraceFormats));
  for (std::size_t i = 0; i < std::size(ess::kTraceFormats); ++i) CHECK(ess::trace_formats()[i].name == ess::kTraceFormats[i].name);
  CHECK_THROWS_AS(parse_trace("sharegpt", "", "t", 1), ess::InternalError);
}

TEST_CASE("trace formats: Mooncake's JSON lines, milliseconds since the first request", "[serving][trace]") {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 6755, \"output_length\": 500, \"hash_ids\": [0, 1, 2]}\n"
      "{\"timestamp\": 0, \"input_length\": 7319, \"output_length\": 490, \"hash_ids\": [0, 14]}\n"
      "\n"
      "{\"timestamp\": 3052, \"input_length\": 2287, \"output_length\": 316}\n"
      "{\"timestamp\": 9000, \"input_length\": 10, \"output_length\": 1}\n";
  const auto r = parse_trace("mooncake-jsonl", text, "t", 5.0);
  REQUIRE(r.size() == 3);  // the last arrives at 9 s, after the 5 s period
  CHECK(r[2].arrival == Approx(3.052));
  CHECK(r[2].prompt_tokens == 2287);
  CHECK(r[2].output_tokens == 316);
  CHECK(r[1].id == 1);
  fails("mooncake-jsonl", "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1}\n",
        "line 2: arrival times must not decrease: 4 ms comes after 5 ms");
  fails("mooncake-jsonl", "{\"timestamp\": -5, \"input_length\": 1, \"output_length\": 1}\n", "line 1: the arrival time must be >= 0");
  fails("mooncake-jsonl", "{\"timestamp\": 0, \"input_lenght\": 1, \"output_length\": 1}\n", "did you mean \"input_length\"");
  fails("mooncake-jsonl", "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}\n", "input_length must be an integer in [1");
  fails("mooncake-jsonl", "{\"timestamp\": 0, \"output_length\": 1}\n", "missing \"input_length\"");
  fails("mooncake-jsonl", "{\"timestamp\": \"now\", \"input_length\": 1, \"output_length\": 1}\n", "timestamp must be a number");
  fails("mooncake-jsonl", "{\"timestamp\": 0, \n", "line 1: not a JSON object");
  fails("mooncake-jsonl", "[1, 2]\n", "expected a JSON object");
  fails("mooncake-jsonl", "\n# only a comment\n", "empty trace");
}

TEST_CASE("trace formats: Azure's CSV, times relative to the first request", "[serving][trace]") {
  const std::string text =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,374,44\n"
      "2023-11-16 18:15:50.9951690,396,109\n"
      "2023-11-16 23:59:59.5000000,10,1\n"
      "2023-11-17 00:00:00.2500000,20,2\n";
  const auto r = parse_trace("azure-csv", text, "t", 1e9);
  REQUIRE(r.size() == 4);
  CHECK(r[0].arrival == 0.0);
  CHECK(r[1].arrival == Approx(4.314579).margin(1e-6));  // epoch seconds keep ~0.2 us
  CHECK(r[3].arrival - r[2].arrival == Approx(0.75).margin(1e-6));  // across midnight
  CHECK(r[1].prompt_tokens == 396);
  CHECK(r[1].output_tokens == 109);
  fails("azure-csv", "TIMESTAMP,ContextTokens\n", "expected the header \"TIMESTAMP,ContextTokens,GeneratedTokens\"");
  fails("azure-csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n2023-11-16 18:15:45,1,1\n",
        "line 3: arrival times must not decrease");
  fails("azure-csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n16/11/2023 18:15,1,1\n", "TIMESTAMP must be a date and time");
  fails("azure-csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46,1,1\n", "TIMESTAMP must be a date and time");
  fails("azure-csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,x\n", "line 2: GeneratedTokens must be an integer");
}

TEST_CASE("trace formats: the bundled Mooncake minute parses whole", "[serving][trace]") {
  const auto r = ess::read_arrival_trace(std::string(ESS_SOURCE_DIR) + "/scenarios/traces/mooncake-conversation-first-minute.jsonl",
                                         60.0, "mooncake-jsonl");
  REQUIRE(r.size() == 162);
  CHECK(r.front().arrival == 0.0);
  CHECK(r.back().arrival < 60.0);
  std::int64_t longest = 0;
  for (const auto& q : r) longest = std::max(longest, q.prompt_tokens);
  CHECK(longest == 120633);
}
