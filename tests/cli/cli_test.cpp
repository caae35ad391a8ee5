// The ess-sim command line, run in-process: exit codes, outputs and error messages.
#include <catch2/catch.hpp>

#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/error.h"
#include "sim/config/config_error.h"
#include "tests/cli/cli_run.h"

namespace {

using ess::test::Run;
using ess::test::run;
using ess::test::kScenario;

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "ess-sim-cli-test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

double seconds_of(const Run& r) {
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_object());
  REQUIRE(j.size() == 1);
  return j.at("seconds").get<double>();
}

}  // namespace

TEST_CASE("the --version flag prints the version and SimGrid's and exits 0") {
  const auto r = run({"--version"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("ess-sim ") && Catch::Contains("SimGrid 3."));
}

TEST_CASE("the --help flag lists every command and exits 0") {
  const auto r = run({"--help"});
  CHECK(r.code == 0);
  for (const char* cmd : {"check", "presets", "cost"}) CHECK_THAT(r.out, Catch::Contains(cmd));
}

TEST_CASE("no command, an unknown command or an unknown flag exits 2") {
  CHECK(run({}).code == 2);
  const auto unknown = run({"chek", "x.json"});
  CHECK(unknown.code == 2);
  CHECK_FALSE(unknown.err.empty());
  CHECK(run({"check", kScenario, "--frobnicate"}).code == 2);
}

TEST_CASE("check prints the resolved scenario as JSON that loads back to the same values") {
  const auto r = run({"check", kScenario});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("model").at("layers").at("value") == 61);
  CHECK(j.at("hardware").at("gpu").at("hbm_bandwidth").at("value") == "4.8TB/s");
  CHECK(j.at("workload").at("batch_per_gpu").at("value") == "max");
  // The printed document is itself a scenario: checking it again prints the same values.
  const auto again = run({"check", temp_file("resolved.json", r.out).string()});
  REQUIRE(again.code == 0);
  const auto k = nlohmann::json::parse(again.out);
  CHECK(k.at("hardware") == j.at("hardware"));
  CHECK(k.at("model") == j.at("model"));
  CHECK(k.at("workload").at("mtp").at("acceptance").at("value") == 1.7);
}

TEST_CASE("check --set overrides a preset field and names the override as the source") {
  const auto r = run({"check", kScenario, "--set", "hardware.pcie.h2d_bandwidth=50GB/s", "--set",
                      "workload.context_length=131072"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("hardware").at("pcie").at("h2d_bandwidth").at("value") == "50GB/s");
  CHECK(j.at("hardware").at("pcie").at("h2d_bandwidth").at("source") == "--set hardware.pcie.h2d_bandwidth=50GB/s");
  CHECK(j.at("workload").at("context_length").at("value") == 131072);
}

TEST_CASE("check reports bad input with exit code 2 and prints nothing on stdout") {
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"syntax.json", "{\n  \"model\": \"deepseek-v3.2-exp\",\n  \"hardware\" \"h200-sxm\"\n}\n",
       // The column is where the parser stopped: the end of the unexpected "h200-sxm" (columns 14-23).
       {"invalid JSON at line 3, column 23", "expected ':'"}},
      {"unknown-key.json", R"({"model": "llama-2-7b", "hardware": "a100-80gb-sxm", "workload": {"batch_per_gpu": 1, "context_length": 512, "decode_step": 4}})",
       {"/workload/decode_step", "unknown key \"decode_step\"", "did you mean \"decode_steps\""}},
      {"wrong-unit.json", R"({"model": "llama-2-7b", "hardware": {"preset": "a100-80gb-sxm", "pcie": {"h2d_bandwidth": "25GB"}}, "workload": {"batch_per_gpu": 1, "context_length": 512}})",
       {"/hardware/pcie/h2d_bandwidth", "expected a bandwidth", "which is a size"}},
      {"negative.json", R"({"model": "llama-2-7b", "hardware": {"preset": "a100-80gb-sxm", "nvlink": {"bandwidth": "-300GB/s"}}, "workload": {"batch_per_gpu": 1, "context_length": 512}})",
       {"/hardware/nvlink/bandwidth", "must be in [1MB/s, 1000000TB/s]"}},
      {"preset.json", R"({"model": "llama-2-7b", "hardware": "h300-sxm", "workload": {"batch_per_gpu": 1, "context_length": 512}})",
       {"/hardware", "unknown hardware preset \"h300-sxm\"", "did you mean"}},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const auto path = temp_file(c.name, c.text);
      const auto r = run({"check", path.string()});
      CHECK(r.code == 2);
      CHECK(r.out.empty());
      CHECK_THAT(r.err, Catch::StartsWith("error: " + path.string()));
      for (const auto& e : c.expected) CHECK_THAT(r.err, Catch::Contains(e));
    }
  }
}

TEST_CASE("check of a missing file says so and exits 2") {
  const auto r = run({"check", "/nonexistent/scenario.json"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/scenario.json") && Catch::Contains("no such file"));
}

TEST_CASE("presets lists every bundled model and hardware preset") {
  const auto r = run({"presets"});
  REQUIRE(r.code == 0);
  for (const char* name : {"deepseek-v3.2-exp", "deepseek-v3", "llama-2-7b", "llama-3.1-70b", "a100-80gb-sxm",
                           "h100-sxm", "h200-sxm", "h800-sxm"}) {
    CHECK_THAT(r.out, Catch::Contains(std::string("  ") + name + " "));
  }
  const auto j = run({"presets", "--json"});
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc.at("model").size() == 4);
  CHECK(doc.at("hardware").size() >= 4);
}

TEST_CASE("cost gemm --json prints only the seconds, worked out by hand from the h100-sxm preset") {
  // m=1, n=k=4096, bf16 on h100-sxm: bytes = (1*4096 + 4096*4096)*2 + 1*4096*2 = 33,570,816 B.
  // Memory roof: 33,570,816 / (3.35e12 B/s * 0.9) = 11.13460 us. Compute roof:
  // 2*4096*4096 = 33,554,432 FLOP / (989.4e12 * 0.8) = 0.04239 us. Plus 2 us kernel overhead.
  const auto r = run({"cost", "gemm", "--hardware", "h100-sxm", "--m", "1", "--n", "4096", "--k", "4096",
                      "--dtype", "bf16", "--json"});
  REQUIRE(r.code == 0);
  CHECK(seconds_of(r) == Approx(13.13460e-6).epsilon(1e-6));
}

TEST_CASE("cost gemm without --json explains the bound") {
  const auto r = run({"cost", "gemm", "--hardware", "h100-sxm", "--m", "1", "--n", "4096", "--k", "4096"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("memory-bound") && Catch::Contains("13.13 us"));
}

TEST_CASE("cost norm, copy, allreduce and alltoall price their operation") {
  // RMSNorm 1 x 4096 fp16 on a100: bytes = 2*4096*2 + 4096*2 = 24,576 B;
  // 24,576 / (2039e9 * 0.9) = 0.013392 us, + 2 us overhead.
  const auto norm = run({"cost", "norm", "--hardware", "a100-80gb-sxm", "--kind", "rms", "--tokens", "1", "--hidden",
                         "4096", "--dtype", "fp16", "--json"});
  REQUIRE(norm.code == 0);
  CHECK(seconds_of(norm) == Approx(2.013392e-6).epsilon(1e-5));

  // 1 MiB h2d in 4 chunks on h200: 4*0.82 us + 1.5 us + 1,048,576 / 55.43e9 (18.9171 us) = 23.6971 us.
  const auto copy = run({"cost", "copy", "--hardware", "h200-sxm", "--direction", "h2d", "--bytes", "1MiB",
                         "--chunks", "4", "--json"});
  REQUIRE(copy.code == 0);
  CHECK(seconds_of(copy) == Approx(23.6971e-6).epsilon(1e-5));

  // All-reduce of 64 MiB over 8 H100s: 37 us + 2*7/8 * 67,108,864 / 480e9 (244.6677 us) = 281.6677 us.
  const auto ar = run({"cost", "allreduce", "--hardware", "h100-sxm", "--gpus", "8", "--bytes", "67108864", "--json"});
  REQUIRE(ar.code == 0);
  CHECK(seconds_of(ar) == Approx(281.6677e-6).epsilon(1e-5));

  // All-to-all of 8 MB over 8 H800s: 20 us + 7/8 * 8e6 / 153e9 (45.7516 us) = 65.7516 us.
  const auto a2a = run({"cost", "alltoall", "--hardware", "h800-sxm", "--gpus", "8", "--bytes", "8MB", "--json"});
  REQUIRE(a2a.code == 0);
  CHECK(seconds_of(a2a) == Approx(65.7516e-6).epsilon(1e-5));
}

TEST_CASE("cost rejects bad input with exit code 2 and a precise message") {
  const auto unknown = run({"cost", "gemm", "--hardware", "h200", "--m", "1", "--n", "1", "--k", "1"});
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown hardware preset \"h200\"") && Catch::Contains("did you mean"));

  const auto fp8 = run({"cost", "gemm", "--hardware", "a100-80gb-sxm", "--m", "1", "--n", "1", "--k", "1", "--dtype", "fp8"});
  CHECK(fp8.code == 2);
  CHECK_THAT(fp8.err, Catch::Contains("fp8"));

  CHECK(run({"cost", "gemm", "--hardware", "h100-sxm", "--m", "0", "--n", "1", "--k", "1"}).code == 2);
  CHECK(run({"cost", "gemm", "--hardware", "h100-sxm", "--n", "1", "--k", "1"}).code == 2);
  CHECK(run({"cost", "gemm", "--hardware", "h100-sxm", "--m", "1", "--n", "1", "--k", "1", "--dtype", "int4"}).code == 2);
  CHECK(run({"cost", "norm", "--hardware", "h100-sxm", "--kind", "group", "--tokens", "1", "--hidden", "1"}).code == 2);

  const auto bytes = run({"cost", "copy", "--hardware", "h100-sxm", "--direction", "h2d", "--bytes", "12XB"});
  CHECK(bytes.code == 2);
  CHECK_THAT(bytes.err, Catch::Contains("unknown unit \"XB\""));

  const auto gpus = run({"cost", "allreduce", "--hardware", "h100-sxm", "--gpus", "16", "--bytes", "1MB"});
  CHECK(gpus.code == 2);
  CHECK_THAT(gpus.err, Catch::Contains("16"));

  CHECK(run({"cost"}).code == 2);
}

TEST_CASE("run prints the summary table and writes results.json and trace.json with -o") {
  const auto dir = std::filesystem::temp_directory_path() / "ess-sim-cli-test" / "run-out";
  std::filesystem::remove_all(dir);
  const auto r = run({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json", "-o", dir.string(),
                      "--steps", "3"});
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("step time") && Catch::Contains("tokens/s") && Catch::Contains("kv_cache"));
  const auto results = nlohmann::json::parse(std::ifstream(dir / "results.json"));
  CHECK(results.at("schema") == "ess-sim/results/v1");
  CHECK(results.at("summary").at("steps") == 3);
  CHECK(results.at("summary").at("batch_per_gpu") == 1);
  const auto trace = nlohmann::json::parse(std::ifstream(dir / "trace.json"));
  CHECK(trace.at("traceEvents").size() > 10);
}

TEST_CASE("run --json prints results.json and nothing else") {
  const auto r = run({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json", "--json", "--steps",
                      "2", "--set", "workload.context_length=1024"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("steps").at(0).at("context") == 1024);
}

TEST_CASE("run reports a batch that does not fit with its memory budget and exits 2") {
  const auto r = run({"run", kScenario, "--set", "workload.batch_per_gpu=40", "--steps", "1"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("batch_per_gpu 40 does not fit") && Catch::Contains("weights") &&
                        Catch::Contains("latent_cache") && Catch::Contains("HBM capacity"));
}

TEST_CASE("run refuses an output path that is a file, and writes nothing") {
  const auto file = temp_file("not-a-dir", "x");
  const auto r = run({"run", std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json", "-o", file.string(),
                      "--steps", "1"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains(file.string()));
  CHECK(r.out.empty());
}

TEST_CASE("run rejects bad arguments with exit code 2") {
  CHECK(run({"run"}).code == 2);
  CHECK(run({"run", kScenario, "--steps", "0"}).code == 2);
  CHECK(run({"run", kScenario, "--trace-steps", "-1"}).code == 2);
  CHECK(run({"run", "/nonexistent.json"}).code == 2);
}

TEST_CASE("an error leaving a command exits with its kind's code: input 2, a bug 3 with \"please report\"") {
  // run_cli hands every exception that escapes a command to report_error.
  const auto report = [](const std::exception& e) {
    std::ostringstream err;
    const int code = ess::report_error(e, err);
    return std::make_pair(code, err.str());
  };
  CHECK(report(ess::InputError("bad value")) == std::make_pair(ess::kExitBadInput, std::string("error: bad value\n")));
  CHECK(report(ess::ConfigError("x.json", "/a/b", "expected a number")) ==
        std::make_pair(ess::kExitBadInput, std::string("error: x.json: at /a/b: expected a number\n")));
  CHECK(report(ess::InternalError("pool over capacity")) ==
        std::make_pair(ess::kExitInternal, std::string("internal error (please report): pool over capacity\n")));
  // A broken invariant checked with check_invariant is an InternalError.
  try {
    ess::check_invariant(false, "time went backwards");
    FAIL("check_invariant(false, ...) did not throw");
  } catch (const ess::Error& e) {
    CHECK(report(e) == std::make_pair(ess::kExitInternal, std::string("internal error (please report): time went backwards\n")));
  }
  // Anything that is not an ess::Error is a bug too: a standard library exception never means bad input.
  CHECK(report(std::invalid_argument("stoi")) ==
        std::make_pair(ess::kExitInternal, std::string("internal error (please report): stoi\n")));
  CHECK(report(std::bad_alloc()).first == ess::kExitInternal);
}

TEST_CASE("bad input that a cost model or a command refuses still exits 2 with its message") {
  const auto groups = run({"cost", "grouped-gemm", "--hardware", "h100-sxm", "--groups", "4", "--m", "3", "--n", "1", "--k", "1"});
  CHECK(groups.code == 2);
  CHECK_THAT(groups.err, Catch::StartsWith("error: grouped_gemm: m_total (3) must be >= groups (4)"));
  const auto op = run({"cost", "gemmm", "--hardware", "h100-sxm"});
  CHECK(op.code == 2);
  CHECK_THAT(op.err, Catch::StartsWith("error: unknown cost operation \"gemmm\""));
  const auto nodes = run({"cost", "dispatch", "--hardware", "h100-sxm", "--expert-parallel", "12", "--tokens", "128",
                          "--experts-per-token", "8", "--hidden", "7168"});
  CHECK(nodes.code == 2);
  CHECK_THAT(nodes.err, Catch::StartsWith("error: ") && Catch::Contains("covers partial nodes"));
}
