// results.json and trace.json of a real scenario: identities that must hold whatever the costs.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "sim/metrics/results.h"

namespace {

struct Run {
  ess::Scenario scenario;
  ess::RunResult result;
  nlohmann::ordered_json json;
};

// The bundled 32K scenario, 3 steps, traced for 2 (one simulation per process would be ideal;
// SimGrid's clock is not reset between engines, so only relative times are compared).
const Run& dsv32_run() {
  static const Run run = [] {
    Run r{ess::load_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/dsv32-baseline-32k.json"), {}, {}};
    r.result = ess::Simulation(r.scenario, {3, 2}).run();
    r.json = ess::results_json(r.scenario, r.result, "test", "0000");
    return r;
  }();
  return run;
}

}  // namespace

TEST_CASE("throughput equals GPUs x batch x accepted tokens per step / mean step time") {
  const auto& r = dsv32_run();
  const auto& sum = r.json["summary"];
  const double mean = sum["step_time_s"]["mean"].get<double>();
  const double expected = 8.0 * 18 * 1.7 / mean;
  CHECK(sum["tokens_per_s_total"].get<double>() == Approx(expected).epsilon(1e-12));
  CHECK(sum["tokens_per_s_node"].get<double>() == Approx(expected).epsilon(1e-12));
  CHECK(sum["tokens_per_s_per_gpu"].get<double>() == Approx(expected / 8).epsilon(1e-12));
  CHECK(sum["otps_per_request"].get<double>() == Approx(1.7 / mean).epsilon(1e-12));
}

TEST_CASE("time by category adds up to the step time, per step and on average") {
  const auto& r = dsv32_run();
  const auto sum_of = [](const nlohmann::ordered_json& cats) {
    double s = 0.0;
    for (const auto& [k, v] : cats.items()) s += v.get<double>();
    return s;
  };
  CHECK(sum_of(r.json["summary"]["time_by_category_s"]) ==
        Approx(r.json["summary"]["step_time_s"]["mean"].get<double>()).epsilon(1e-9));
  for (const auto& step : r.json["steps"]) {
    CHECK(sum_of(step["by_category_s"]) == Approx(step["time_s"].get<double>()).epsilon(1e-9));
  }
  // Layers (plus the head) account for the whole step as well, up to how much earlier than the
  // slowest GPU the others finish the last step (GPUs leave an all-to-all when their own flows are
  // done, and only the next collective brings them together again).
  double layers = 0.0;
  for (const auto& l : r.json["layers"]) layers += l["time_s"].get<double>();
  CHECK(layers == Approx(r.json["summary"]["step_time_s"]["mean"].get<double>()).epsilon(1e-4));
  CHECK(layers <= r.json["summary"]["step_time_s"]["mean"].get<double>());
}

TEST_CASE("results.json has the documented fields") {
  const auto& j = dsv32_run().json;
  CHECK(j["schema"] == "ess-sim/results/v1");
  for (const char* k : {"ess_sim_version", "scenario_sha256", "seed", "summary", "steps", "layers"}) CHECK(j.contains(k));
  const auto& s = j["summary"];
  for (const char* k : {"gpus", "batch_per_gpu", "step_time_s", "tokens_per_s_per_gpu", "tokens_per_s_node",
                        "otps_per_request", "memory_gpu_bytes", "time_by_category_s"}) {
    CHECK(s.contains(k));
  }
  for (const char* k : {"mean", "p50", "p99"}) CHECK(s["step_time_s"].contains(k));
  for (const char* k : {"hbm_capacity", "weights", "latent_cache", "indexer_cache", "activations", "reserve", "free"}) {
    CHECK(s["memory_gpu_bytes"].contains(k));
  }
  for (const char* k : {"gemm", "attention", "indexer", "norm", "collectives", "transfers", "idle"}) {
    CHECK(s["time_by_category_s"].contains(k));
  }
  CHECK(j["steps"].size() == 3);
  CHECK(j["layers"].size() == 63);  // 61 layers, the MTP module, the head
  CHECK(j["layers"][61]["kind"] == "mtp");
  CHECK(j["layers"][62]["kind"] == "head");
}

TEST_CASE("the Chrome trace parses, every slice is on a named track and tracks move forward") {
  const auto& r = dsv32_run();
  const auto trace = nlohmann::json::parse(r.result.trace.to_json());
  std::set<std::pair<int, int>> named;
  std::set<int> processes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<int>());
  }
  std::map<std::pair<int, int>, double> last_segment_end;
  std::size_t slices = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++slices;
    const std::pair<int, int> track{e["pid"].get<int>(), e["tid"].get<int>()};
    REQUIRE(named.contains(track));
    REQUIRE(processes.contains(track.first));
    CHECK(e["dur"].get<double>() >= 0.0);
    // Segments (and collectives) on a track never overlap: each starts at or after the last end.
    if (e["cat"] == "segment" || e["cat"] == "collectives" || e["cat"] == "idle") {
      const double ts = e["ts"].get<double>();
      CHECK(ts >= last_segment_end[track] - 1e-6);
      last_segment_end[track] = ts + e["dur"].get<double>();
    }
  }
  CHECK(slices == r.result.trace.slice_count());
  // Two traced steps of 8 GPUs: the compute stream of GPU 0 ends near 2 step times.
  CHECK(slices > 1000);
}

TEST_CASE("steps after --trace-steps are simulated but not traced") {
  const auto s = ess::load_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/llama2-7b-a100-decode.json");
  const auto none = ess::Simulation(s, {2, 0}).run();
  const auto one = ess::Simulation(s, {2, 1}).run();
  const auto two = ess::Simulation(s, {2, 2}).run();
  CHECK(none.trace.slice_count() == 0);
  CHECK(one.trace.slice_count() > 0);
  CHECK(two.trace.slice_count() == 2 * one.trace.slice_count());
}
