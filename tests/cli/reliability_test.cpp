// The command line on inputs that used to crash, abort or exit 0 with garbage: each is exit 2 with
// a message naming what to fix, and nothing on stdout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/scratch_dir.h"
#include "tests/cli/cli_run.h"

namespace {

using ess::test::Run;
using ess::test::run;
using ess::test::kScenario;

}  // namespace

TEST_CASE("an unknown subcommand is named with a did-you-mean, even with --help") {
  for (const auto& args : {std::vector<std::string>{"swep", "--help"}, std::vector<std::string>{"rnu", kScenario}}) {
    const auto r = run(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("unknown subcommand \"" + args[0] + "\""));
  }
  CHECK_THAT(run({"rnu", kScenario}).err, Catch::Contains("did you mean \"run\""));
  CHECK(run({"run", "--help"}).code == 0);  // a known one still has its help
}

TEST_CASE("DeepSeek on an A100 (no fp8 peak) is exit 2 from check and run, not an abort") {
  const std::vector<std::string> sets = {"--set", "hardware=a100-80gb-sxm", "--set", "hardware.nodes=4",
                                         "--set", "parallelism.attention_dp=32", "--set", "parallelism.expert_parallel=32"};
  for (const char* cmd : {"check", "run"}) {
    std::vector<std::string> args = {cmd, kScenario, "--steps", "1"};
    if (std::string(cmd) == "check") args = {cmd, kScenario};
    args.insert(args.end(), sets.begin(), sets.end());
    const auto r = run(args);
    INFO(cmd);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("no fp8 peak") && Catch::Contains("/hardware"));
  }
}

TEST_CASE("values that used to overflow the simulated clock are refused at their pointer") {
  for (const char* set : {"hardware.kernels.gemm.compute_efficiency=1e-308", "hardware.kernels.gemm.kernel_overhead=1e300s",
                          "hardware.gpu.hbm_bandwidth=1e-300B/s", "hardware.nvlink.bandwidth=1e-300B/s"}) {
    const auto r = run({"run", kScenario, "--steps", "1", "--set", set});
    INFO(set);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("must be in"));
  }
}

TEST_CASE("a run too large for memory is refused with the estimate, and check refuses it too") {
  const std::vector<std::string> sets = {"--set", "hardware.nodes=4096", "--set", "parallelism.attention_dp=32768",
                                         "--set", "parallelism.expert_parallel=256", "--set", "workload.batch_per_gpu=1"};
  for (const char* cmd : {"check", "run"}) {
    std::vector<std::string> args = {cmd, kScenario};
    args.insert(args.end(), sets.begin(), sets.end());
    const auto r = run(args);
    INFO(cmd);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("GB of memory") && Catch::Contains("32768 GPUs") && Catch::Contains("--allow-large"));
  }
}

TEST_CASE("a run too long for the wall-time limit is refused and --allow-large lifts the limit") {
  // 20,000 steps of the bundled scenario (the context grows to 67K, which still fits): ~5 minutes.
  std::vector<std::string> args = {"check", kScenario, "--set", "workload.decode_steps=20000"};
  const auto refused = run(args);
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::Contains("of wall time") && Catch::Contains("event simulation") &&
                              Catch::Contains("--allow-large"));
  args.push_back("--allow-large");
  CHECK(run(args).code == 0);  // check does not simulate: it only prices the first and last step
}

TEST_CASE("a replay trace that is a directory, or missing, is exit 2 from check") {
  ess::test::ScratchDir dir("ess-cli-reliability");
  const std::string scenario = std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-ess-32k.json";
  for (const auto& file : {dir.path().string(), (dir.path() / "absent.bin").string()}) {
    const auto r = run({"check", scenario, "--set", "cache.access.model=replay", "--set", "cache.access.file=" + file});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(file));
  }
}

TEST_CASE("run -o writes results, trace and a manifest listing both") {
  ess::test::ScratchDir dir("ess-cli-reliability");
  const auto r = run({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json", "--steps", "1", "-o",
                      dir.path().string()});
  REQUIRE(r.code == 0);
  const auto manifest = nlohmann::json::parse(ess::test::read_file(dir.path() / "manifest.json"));
  REQUIRE(manifest["files"].size() == 2);
  CHECK(manifest["files"][0]["name"] == "trace.json");
  CHECK(manifest["files"][1]["name"] == "results.json");
  CHECK(manifest["files"][1]["bytes"] == std::filesystem::file_size(dir.path() / "results.json"));
}
