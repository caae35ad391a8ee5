// Simulated against measured: the public DeepSeek-V3 decode and prefill deployments of scenarios/measured/.
// Each case runs its bundled scenario, prints simulated and measured step time with the error,
// and fails when |error| rises above the ceiling stated in scenarios/measured/measured.csv.
// The measured values are arithmetic on published throughputs (the CSV says how); the model is
// never fitted to them (calibration comes from kernel data only, calibration/README.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"

namespace {

const std::string kFolder = std::string(ESS_SOURCE_DIR) + "/scenarios/measured/";

struct MeasuredDeployment {
  double step_ms = 0.0;
  double ceiling_pct = 0.0;
  std::string source_row;
};

std::map<std::string, MeasuredDeployment> read_measured() {
  std::ifstream in(kFolder + "measured.csv");
  REQUIRE(in.good());
  std::map<std::string, MeasuredDeployment> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      REQUIRE(line == "scenario,source_row,measured_ms,derivation,tag,ceiling_pct");
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    REQUIRE(cells.size() == 6);
    rows[cells[0]] = MeasuredDeployment{std::stod(cells[2]), std::stod(cells[5]), cells[1]};
  }
  return rows;
}

void check_deployment(const std::string& name) {
  const auto rows = read_measured();
  REQUIRE(rows.count(name) == 1);
  const MeasuredDeployment& m = rows.at(name);
  const ess::Scenario s = ess::load_scenario(kFolder + name + ".json");
  ess::Simulation sim(s, ess::SimulationOptions(2, 0));
  const ess::RunResult r = sim.run();
  double mean = 0.0;
  for (double t : r.step_time) mean += t / static_cast<double>(r.step_time.size());
  const double simulated_ms = mean * 1e3;
  const double error_pct = (simulated_ms - m.step_ms) / m.step_ms * 100.0;
  std::printf("%-28s measured %8.2f ms  simulated %8.2f ms  error %+6.1f%%  (ceiling %.0f%%, row %s)\n", name.c_str(),
              m.step_ms, simulated_ms, error_pct, m.ceiling_pct, m.source_row.c_str());
  INFO(name << ": simulated " << simulated_ms << " ms, measured " << m.step_ms << " ms, error " << error_pct << "%");
  CHECK(std::abs(error_pct) <= m.ceiling_pct);
}

}  // namespace

TEST_CASE("measured deployments: every row of measured.csv has its scenario and a test case") {
  const auto rows = read_measured();
  const std::vector<std::string> tested = {"ds-profile-h800-ep128", "sglang-h100-ep72-tbo", "sglang-h100-ep72-no-tbo",
                                           "ds-online-h800-ep144", "ds-profile-h800-ep32-prefill",
                                           "sglang-h100-ep32-prefill-1k", "sglang-h100-ep32-prefill-2k",
                                           "sglang-h100-ep32-prefill-4k", "sglang-h100-ep32-prefill-4k-balanced"};
  CHECK(rows.size() == tested.size());
  for (const auto& name : tested) {
    CHECK(rows.count(name) == 1);
    CHECK(std::ifstream(kFolder + name + ".json").good());
  }
}

TEST_CASE("measured deployments: ds-profile-h800-ep128") { check_deployment("ds-profile-h800-ep128"); }
TEST_CASE("measured deployments: sglang-h100-ep72-tbo") { check_deployment("sglang-h100-ep72-tbo"); }
TEST_CASE("measured deployments: sglang-h100-ep72-no-tbo") { check_deployment("sglang-h100-ep72-no-tbo"); }
TEST_CASE("measured deployments: ds-online-h800-ep144") { check_deployment("ds-online-h800-ep144"); }
TEST_CASE("measured prefill: ds-profile-h800-ep32-prefill") { check_deployment("ds-profile-h800-ep32-prefill"); }
TEST_CASE("measured prefill: sglang-h100-ep32-prefill-1k") { check_deployment("sglang-h100-ep32-prefill-1k"); }
TEST_CASE("measured prefill: sglang-h100-ep32-prefill-2k") { check_deployment("sglang-h100-ep32-prefill-2k"); }
TEST_CASE("measured prefill: sglang-h100-ep32-prefill-4k") { check_deployment("sglang-h100-ep32-prefill-4k"); }
TEST_CASE("measured prefill: sglang-h100-ep32-prefill-4k-balanced") { check_deployment("sglang-h100-ep32-prefill-4k-balanced"); }
