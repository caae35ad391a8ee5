// `ess-sim launch` as a user runs it: the report on stdout, the scenario written whole for `check`
// and `run`, and a refused flag exits 2 with nothing written.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "tests/cli/cli_run.h"

using ess::test::run_cli;

namespace {

const std::string kServe = "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --trust-remote-code";
const std::string kBench = "vllm bench serve --random-input-len 1000 --random-output-len 200 --num-prompts 20 --max-concurrency 4";

std::filesystem::path fresh(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ess-sim-launch-test-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("launch writes a scenario check loads, and reports every flag", "[cli][launch]") {
  const auto out = fresh("vllm.json");
  const auto r = run_cli({"launch", "--serve", kServe, "--bench", kBench, "--hardware", "h200-sxm-measured", "-o", out.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--trust-remote-code") && Catch::Contains("ignored") &&
                        Catch::Contains("--max-concurrency 4") && Catch::Contains("serving.arrivals.concurrency"));
  REQUIRE(std::filesystem::exists(out));
  const auto c = run_cli({"check", out.string()});
  CHECK(c.code == 0);
  CHECK_THAT(c.out, Catch::Contains("\"concurrency\": {\"value\": 4"));
  std::filesystem::remove_all(out.parent_path());
}

TEST_CASE("launch refuses a flag it cannot model and writes nothing", "[cli][launch]") {
  const auto out = fresh("refused.json");
  const auto r = run_cli({"launch", "--serve", kServe + " --enable-lora", "--bench", kBench, "--hardware", "h200-sxm-measured", "-o",
                          out.string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--enable-lora"));
  CHECK(r.out.empty());
  CHECK_FALSE(std::filesystem::exists(out));
  std::filesystem::remove_all(out.parent_path());
}
