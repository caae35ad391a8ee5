// The access store: a run fed the stored cache-simulation results gives the results of one that
// computed them, bit for bit; a damaged or foreign entry is ignored and recomputed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/engine/access_store.h"
#include "sim/engine/simulation.h"
#include "tests/engine/test_scenarios.h"
#include "tests/scratch_dir.h"

namespace {

nlohmann::json synthetic_offload_scenario() {
  return {{"model", ess::test::one_layer_mla_model()},
          {"hardware", ess::test::overhead_only_hardware(1)},
          {"workload", {{"batch_per_gpu", 2}, {"context_length", 600}, {"decode_steps", 4}}},
          {"cache", {{"mode", "offload"}, {"pool_ratio", 0.5}, {"sampled_requests", 2}, {"warmup_windows", 3}}}};
}

ess::RunResult run(const ess::Scenario& s, const std::filesystem::path& store) {
  ess::SimulationOptions options;
  options.access_store = store;
  return ess::Simulation(s, options).run();
}

}  // namespace

TEST_CASE("a run fed from the access store equals one that computed the cache simulation", "[access_store]") {
  ess::test::ScratchDir dir("ess-access-store");
  const auto s = ess::test::load(synthetic_offload_scenario());
  const ess::RunResult plain = run(s, {});
  CHECK(plain.access_store.empty());
  const ess::RunResult written = run(s, dir.path());
  CHECK(written.access_store == "written");
  const ess::RunResult read = run(s, dir.path());
  CHECK(read.access_store == "read");
  // The cache simulation's numbers are equal bit for bit; the step times to within rounding, since
  // runs in one process see SimGrid's clock continue from the previous run (separate processes,
  // as sweep points are, give byte-identical results.json: checked by the sweep tests).
  const auto same = [&](const ess::RunResult& a, const ess::RunResult& b) {
    REQUIRE(a.layers.size() == b.layers.size());
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
      CHECK(a.layers[l].misses == b.layers[l].misses);
      CHECK(a.layers[l].misses_var == b.layers[l].misses_var);
      CHECK(a.layers[l].hits == b.layers[l].hits);
      CHECK(a.layers[l].h2d_bytes == b.layers[l].h2d_bytes);
    }
    REQUIRE(a.step_time.size() == b.step_time.size());
    for (std::size_t i = 0; i < a.step_time.size(); ++i) CHECK(a.step_time[i] == Approx(b.step_time[i]).epsilon(1e-12));
  };
  same(written, plain);
  same(read, plain);
  REQUIRE(plain.layers.front().misses > 0.0);  // there were misses to store

  // A truncated entry is ignored (recomputed and rewritten), never half-read.
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) - 3);
  }
  CHECK(entries == 1);
  const ess::RunResult again = run(s, dir.path());
  CHECK(again.access_store == "written");
  same(again, plain);
  // Another context is another entry.
  auto doc = synthetic_offload_scenario();
  doc["workload"]["context_length"] = 700;
  CHECK(run(ess::test::load(doc), dir.path()).access_store == "written");
}
