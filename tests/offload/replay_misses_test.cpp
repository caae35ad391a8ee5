// A recorded trace replays to exactly the misses of the generator that wrote it.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sim/offload/access_trace.h"
#include "sim/offload/cache_sim.h"
#include "sim/offload/synthetic_access.h"

TEST_CASE("replaying a recorded trace gives the same misses, hits and runs as the generator") {
  ess::SyntheticAccessParams params;
  params.layers = 4;
  params.top_k = 256;
  params.seed = 7;
  ess::CacheSimConfig config;
  config.layers = 4;
  config.top_k = 256;
  config.sampled_requests = 3;
  config.warmup_windows = 4;
  config.capacity_ratio = 0.2;

  // Warm-up pseudo-steps -4..-1 at contexts 4092..4095, then decode steps 0..5 at 4096 + step.
  std::vector<ess::TraceStep> steps;
  for (int w = -4; w < 0; ++w) steps.push_back({w, 4096 + w});
  for (int s = 0; s < 6; ++s) steps.push_back({s, 4096 + s});
  const auto path = std::filesystem::temp_directory_path() / "ess-sim-replay-misses.trace";
  {
    ess::SyntheticAccess recorder(params);
    ess::write_access_trace(path, recorder, 4, 3, 256, steps);
  }

  ess::SyntheticAccess generator(params);
  ess::ReplayAccess replay(path);
  ess::CacheSimulator live(config, generator);
  ess::CacheSimulator replayed(config, replay);
  live.warm_up(4096);
  replayed.warm_up(4096);
  double total_misses = 0.0;
  for (int s = 0; s < 6; ++s) {
    const auto a = live.step(s, 4096 + s);
    const auto b = replayed.step(s, 4096 + s);
    REQUIRE(a.layers.size() == b.layers.size());
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
      CHECK(a.layers[l].misses_mean == b.layers[l].misses_mean);
      CHECK(a.layers[l].hits_mean == b.layers[l].hits_mean);
      CHECK(a.layers[l].runs_mean == b.layers[l].runs_mean);
      CHECK(a.layers[l].evictions_mean == b.layers[l].evictions_mean);
      total_misses += a.layers[l].misses_mean;
    }
  }
  CHECK(total_misses > 0.0);  // the comparison is not between two empty runs
  std::filesystem::remove(path);
}
