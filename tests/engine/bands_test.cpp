// The calibration band of a run (sim/metrics/bands.h): per-set times from the engine, sigmas from
// the profile, added in quadrature.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/config/scenario.h"
#include "sim/engine/simulation.h"
#include "sim/metrics/bands.h"
#include "sim/metrics/results.h"

namespace {

std::size_t at(ess::ParamSet p) { return static_cast<std::size_t>(p); }

}  // namespace

TEST_CASE("bands: a step's sigma adds each set's sigma x time in quadrature", "[bands]") {
  ess::RunResult r;
  r.step_time = {0.010, 0.010};
  r.gpu_steps.assign(2, std::vector<ess::GpuStepTimes>(2));
  for (auto& step : r.gpu_steps) {
    for (auto& g : step) {
      g.by_params[at(ess::ParamSet::gemm)] = 0.004;
      g.by_params[at(ess::ParamSet::alltoall)] = 0.003;
      g.by_params[at(ess::ParamSet::memory_bound)] = 0.002;  // no band
      g.by_params[at(ess::ParamSet::none)] = 0.001;          // priced by no model
    }
  }
  ess::CalibrationBands bands{};
  bands[at(ess::ParamSet::gemm)] = ess::ParamBand{0.10, "g"};
  bands[at(ess::ParamSet::alltoall)] = ess::ParamBand{0.20, "a"};
  const auto b = ess::step_band(r, bands);
  CHECK(b.calibrated);
  CHECK(b.sigma == Approx(std::sqrt(std::pow(0.1 * 0.004, 2) + std::pow(0.2 * 0.003, 2))));
  CHECK(b.relative() == Approx(b.sigma / 0.010));
  CHECK(b.unbanded_fraction == Approx(0.2));
  const auto j = ess::band_json(b, 1000.0);
  CHECK(j["tokens_per_s_per_gpu_low"].get<double>() == Approx(1000.0 / (1.0 + b.relative())));
  CHECK(j["step_time_high_s"].get<double>() == Approx(0.010 + b.sigma));
  CHECK(ess::band_json(ess::step_band(r, ess::CalibrationBands{}), 1000.0).is_null());
}

TEST_CASE("bands: a run on a profile attributes its step to the sets that priced it", "[bands]") {
  const auto s = ess::load_scenario(std::string(ESS_SOURCE_DIR) + "/scenarios/measured/ds-online-h800-ep144.json", {});
  ess::SimulationOptions o;
  o.steps = 2;
  const auto r = ess::Simulation(s, o).run();
  const auto b = ess::step_band(r, s.hardware_bands);
  REQUIRE(b.calibrated);
  // Every kernel, exposed collective and transfer of the step is in some set, so the sets add up
  // to the busy time (the rest is waiting for other GPUs).
  double sets = 0.0;
  for (const double t : b.time) sets += t;
  double busy = 0.0;
  for (const auto& step : r.gpu_steps) {
    for (const auto& g : step) {
      for (const double c : g.busy) busy += c;
    }
  }
  busy /= static_cast<double>(r.gpu_steps.size() * r.gpu_steps[0].size());
  CHECK(sets == Approx(busy).epsilon(1e-9));
  CHECK(b.time[at(ess::ParamSet::grouped_gemm)] > 0);
  CHECK(b.time[at(ess::ParamSet::alltoall)] > 0);
  CHECK(b.relative() > 0.005);
  CHECK(b.relative() < 0.2);
  const auto j = nlohmann::json::parse(ess::results_json(s, r, "test", "0").dump());
  CHECK(j["summary"]["band"]["sigma_s"].get<double>() == Approx(b.sigma));
  CHECK(j["band_by_params"].size() >= 4);
}
