// Every serving deployment of scenarios/deployments/ (one per layout the engines launch) serves end
// to end: a short run of its own load completes every request with sane latencies.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/serving/serving_run.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace fs = std::filesystem;

TEST_CASE("every serving deployment serves its requests end to end", "[serving][deployments]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(ESS_SOURCE_DIR) / "scenarios/deployments")) {
    if (e.path().filename().string().find("-serving.json") != std::string::npos) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);
  for (const fs::path& f : files) {
    INFO(f.filename().string());
    const Scenario probe = test::serving_scenario(f.string(), {});
    // A shorter run of the same load: 24 requests of a closed loop, or 20 s of arrivals.
    const std::vector<std::string> sets =
        probe.serving->arrivals.closed_loop()
            ? std::vector<std::string>{"serving.arrivals.requests=24", "serving.arrivals.concurrency=8"}
            : std::vector<std::string>{"serving.duration=20s"};
    const Scenario s = test::serving_scenario(f.string(), sets);
    const Prepared p = prepare(s, ResourceLimits{});
    const ServingRun run = serve(s, p, build_tables(s, p), s.serving->prefill.disaggregated() ? s.serving->prefill.instances : 0);
    REQUIRE_FALSE(run.requests.empty());
    for (const auto& r : run.requests) {
      CHECK(r.completed());
      CHECK(r.first_token > r.request.arrival);
      CHECK(r.generated == r.request.output_tokens);
    }
    double tpot = 0.0;
    for (const auto& r : run.requests) {
      tpot += (r.finish - r.first_token) / static_cast<double>(std::max<std::int64_t>(1, r.generated - 1));
    }
    tpot /= static_cast<double>(run.requests.size());
    // A decode step of a 671B model on 8-32 H200s: between 5 and 200 ms per token.
    CHECK(tpot > 0.005);
    CHECK(tpot < 0.2);
  }
}
