// What a run checks before SimGrid starts (sim/engine/preflight.h): replay coverage, cost models
// that cannot price an operator, and the resource estimate with its limits.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/engine/test_scenarios.h"
#include "models/units.h"
#include "sim/config/config_error.h"
#include "sim/engine/preflight.h"
#include "sim/engine/simulation.h"
#include "sim/offload/access_trace.h"
#include "tests/scratch_dir.h"
#include "tests/engine/first_four_access.h"

namespace {

using ess::test::FirstFour;

// One MLA layer with a top-4 indexer on one overhead-only GPU, 8 cached tokens, replayed access.
nlohmann::json replay_scenario(const std::string& trace, int steps) {
  const nlohmann::json model = ess::test::one_layer_mla_model();
  return {{"model", model},
          {"hardware", ess::test::overhead_only_hardware(1)},
          {"workload", {{"batch_per_gpu", 1}, {"context_length", 8}, {"decode_steps", steps}}},
          {"cache",
           {{"mode", "offload"}, {"pool_entries", 4}, {"sampled_requests", 1}, {"warmup_windows", 0},
            {"access", {{"model", "replay"}, {"file", trace}}}}}};
}

std::string write_trace(const std::filesystem::path& dir, const std::vector<ess::TraceStep>& steps, int requests = 1) {
  const auto path = dir / "trace.bin";
  FirstFour model;
  ess::write_access_trace(path, model, 1, requests, 4, steps);
  return path.string();
}

ess::Preflight check(const nlohmann::json& doc, std::int64_t steps = 0) {
  return ess::preflight(ess::run_request(ess::test::load(doc)), steps, 1, ess::ResourceLimits{});
}

}  // namespace

TEST_CASE("a replay trace that covers the run passes, and the run replays it") {
  ess::test::ScratchDir dir("ess-preflight");
  const auto trace = write_trace(dir.path(), {{0, 8}, {1, 9}});
  CHECK(check(replay_scenario(trace, 2)).access != nullptr);
  const auto s = ess::test::load(replay_scenario(trace, 2));
  CHECK(ess::Simulation(s, {}).run().step_time.size() == 2);
}

TEST_CASE("a replay trace with fewer steps than the run is refused before simulating") {
  ess::test::ScratchDir dir("ess-preflight");
  const auto trace = write_trace(dir.path(), {{0, 8}, {1, 9}, {2, 10}, {3, 11}});
  CHECK_THROWS_MATCHES(check(replay_scenario(trace, 4), 10), ess::AccessTraceError,
                       Catch::Matchers::Predicate<ess::AccessTraceError>([](const ess::AccessTraceError& e) {
                         const std::string m = e.message();
                         return m.find("step 4 is not recorded") != std::string::npos &&
                                m.find("steps 0 to 3") != std::string::npos && m.find("steps 0 to 9") != std::string::npos;
                       }, "names the missing step, what the trace holds and what the run needs"));
  // The same through the whole run: an error, not an abort inside SimGrid.
  const auto s = ess::test::load(replay_scenario(trace, 4));
  CHECK_THROWS_AS(ess::Simulation(s, ess::SimulationOptions(10, 0)).run(), ess::AccessTraceError);
}

TEST_CASE("a replay trace recorded at another context length is refused") {
  ess::test::ScratchDir dir("ess-preflight");
  const auto trace = write_trace(dir.path(), {{0, 16}});
  CHECK_THROWS_WITH(check(replay_scenario(trace, 1)),
                    Catch::Contains("recorded at context 16") && Catch::Contains("this run has context 8") &&
                        Catch::Contains("workload.context_length"));
}

TEST_CASE("a replay trace with fewer requests than sampled, or a missing one, is refused") {
  ess::test::ScratchDir dir("ess-preflight");
  const auto trace = write_trace(dir.path(), {{0, 8}});
  auto doc = replay_scenario(trace, 1);
  doc["cache"]["sampled_requests"] = 2;
  CHECK_THROWS_WITH(check(doc), Catch::Contains("holds 1 requests") && Catch::Contains("cache.sampled_requests"));
  CHECK_THROWS_WITH(check(replay_scenario((dir.path() / "absent.bin").string(), 1)), Catch::Contains("no such file"));
  CHECK_THROWS_WITH(check(replay_scenario(dir.path().string(), 1)), Catch::Contains("is a directory"));
}

TEST_CASE("hardware without the peak a model's dtype needs is a ConfigError naming the hardware") {
  // The one-layer model runs in bf16; drop bf16 (and fp16, fp32 stay): the GEMMs cannot be priced.
  auto doc = replay_scenario("unused", 1);
  doc["cache"] = {{"mode", "gpu"}};
  doc["hardware"]["gpu"]["peak_compute"].erase("bf16");
  CHECK_THROWS_MATCHES(check(doc), ess::ConfigError,
                       Catch::Matchers::Predicate<ess::ConfigError>([](const ess::ConfigError& e) {
                         return std::string(e.what()).find("bf16") != std::string::npos && e.pointer() == "/hardware";
                       }, "names the dtype and the hardware section"));
}

TEST_CASE("the resource estimate grows with the GPUs, steps and trace, and a limit refuses with the knob") {
  const auto doc = nlohmann::json{{"model", "deepseek-v3.2-exp"},
                                  {"hardware", "h200-sxm"},
                                  {"parallelism", {{"attention_dp", 8}, {"expert_parallel", 8}}},
                                  {"workload", {{"batch_per_gpu", 8}, {"context_length", 32768}}}};
  const auto scenario = ess::test::load(doc);
  const auto s = ess::decode_run(scenario);
  const auto base = ess::estimate_resources(s, 8, 16, 1, 0);
  CHECK(base.memory_bytes() < 1e9);  // the bundled scale needs well under 1 GB
  CHECK(base.wall_seconds() < 60.0);
  CHECK(ess::estimate_resources(s, 8, 16, 100, 0).memory_bytes() > base.memory_bytes() * 10);
  CHECK(ess::estimate_resources(s, 8, 100000, 1, 0).wall_seconds() > base.wall_seconds() * 1000);

  // 4096 nodes x 8 GPUs (the loader's limits): refused, naming the GPUs as the knob to turn.
  auto big = doc;
  big["hardware"] = {{"preset", "h200-sxm"}, {"nodes", 4096}};
  big["parallelism"] = {{"attention_dp", 32768}, {"expert_parallel", 256}};
  const auto large = ess::test::load(big);
  CHECK_THROWS_MATCHES(ess::preflight(ess::decode_run(large), 2, 0, ess::ResourceLimits{}), ess::ResourceError,
                       Catch::Matchers::Predicate<ess::ResourceError>([](const ess::ResourceError& e) {
                         const std::string m = e.what();
                         return m.find("32768 GPUs") != std::string::npos && m.find("--allow-large") != std::string::npos;
                       }, "says what to turn and how to override"));
  // A limit set just below the estimate refuses; one just above passes.
  ess::ResourceLimits tight;
  tight.memory_bytes = base.memory_bytes() * 0.99;
  CHECK_THROWS_AS(ess::preflight(s, 16, 1, tight), ess::ResourceError);
  tight.memory_bytes = base.memory_bytes() * 1.01;
  tight.wall_seconds = base.wall_seconds() * 0.99;
  CHECK_THROWS_WITH(ess::preflight(s, 16, 1, tight), Catch::Contains("of wall time"));
  tight.enforce = false;
  CHECK_NOTHROW(ess::preflight(s, 16, 1, tight));
}

TEST_CASE("offload estimates count the sampled requests and the warm-up windows") {
  const auto doc = nlohmann::json{{"model", "deepseek-v3.2-exp"},
                                  {"hardware", "h200-sxm"},
                                  {"parallelism", {{"attention_dp", 8}, {"expert_parallel", 8}}},
                                  {"workload", {{"batch_per_gpu", 8}, {"context_length", 131072}}},
                                  {"cache", {{"mode", "offload"}, {"pool_ratio", 0.1}}}};
  auto many = doc;
  many["cache"]["sampled_requests"] = 4096;
  many["cache"]["warmup_windows"] = 4096;
  const auto few = ess::estimate_resources(ess::decode_run(ess::test::load(doc)), 8, 16, 0, 0);
  const auto lots = ess::estimate_resources(ess::decode_run(ess::test::load(many)), 8, 16, 0, 0);
  CHECK(lots.memory_bytes() > few.memory_bytes() * 100);
  CHECK(lots.wall_seconds() > few.wall_seconds() * 1000);
  CHECK(lots.memory_bytes() > ess::ResourceLimits{}.memory_bytes);  // refused by default
}
