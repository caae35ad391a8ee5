// A serving run's band (sim/serving/serving_band.h): the step tables carry each point's calibration
// sigma, the run sums its steps' sigmas over their time, and the engine's own error is added in
// quadrature; worked out by hand on constructed runs.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/config/config_error.h"
#include "sim/serving/serving_band.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

TEST_CASE("step tables interpolate the calibration sigma as they interpolate the time", "[serving][band]") {
  const StepTable t({1, 3}, {1, 2}, {{1.0, 0.5, 0.1}, {1.0, 0.5, 0.1}, {3.0, 0.5, 0.3}, {3.0, 0.5, 0.3}});
  CHECK(t.at(2, 1.5).sigma == Approx(0.2));
  StepModel m;
  m.gpu = t;
  m.offload = StepTable({1, 3}, {1, 2}, {{2.0, 0.5, 0.4}, {2.0, 0.5, 0.4}, {2.0, 0.5, 0.4}, {2.0, 0.5, 0.4}});
  CHECK(m.at(1, 1, 0.25).sigma == Approx(0.1 + 0.25 * (0.4 - 0.1)));
}

TEST_CASE("a serving band: the steps' sigma over their time, the prefill's for TTFT, the engine's error in quadrature",
          "[serving][band]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"engine.serving_error_ttft=0.5", "engine.serving_error_tpot=20%",
                                                                     "engine.serving_error_throughput=0.1"});
  ServingRun run;
  ServingStep a;
  a.time = 0.1;
  a.sigma = 0.002;
  ServingStep b;
  b.time = 0.3;
  b.sigma = 0.010;
  run.steps = {a, b};
  ServingBand band = serving_band(s, run);
  CHECK(band.calibrated);  // h200-sxm-measured has a calibration profile
  CHECK(band.tpot.calibration == Approx(0.012 / 0.4));
  CHECK(band.throughput.calibration == Approx(0.03));
  CHECK(band.ttft.calibration == Approx(0.03));  // no prefill pool: TTFT moves with the same steps
  CHECK(band.tpot.sigma() == Approx(std::hypot(0.03, 0.2)));
  CHECK(band.ttft.sigma() == Approx(std::hypot(0.03, 0.5)));

  run.prefill = PrefillPoolRun{};
  run.prefill->busy_s = 2.0;
  run.prefill->sigma_s = 0.1;
  band = serving_band(s, run);
  CHECK(band.ttft.calibration == Approx(0.05));
  CHECK(band.tpot.calibration == Approx(0.03));

  const auto j = serving_band_json(band, 2.0, 0.05, 1000.0);
  const double sigma = std::hypot(0.03, 0.1);
  CHECK(j["output_throughput"]["sigma"].get<double>() == Approx(sigma));
  CHECK(j["output_throughput"]["low_tokens_per_s"].get<double>() == Approx(1000.0 * std::exp(-sigma)));
  CHECK(j["tpot"]["mean_high_s"].get<double>() == Approx(0.05 * std::exp(std::hypot(0.03, 0.2))));
  // sigma hypot(0.03, 0.2) = 0.2022: e^-0.2022 = 0.817, e^0.2022 = 1.224.
  CHECK_THAT(serving_band_text(j), Catch::Contains("TPOT -18%/+22%"));
  CHECK_THAT(serving_band_text(j), Catch::Contains("engine model 0.500 / 0.200 / 0.100"));
}

TEST_CASE("a serving band without the engine's error says the band is too narrow", "[serving][band]") {
  const Scenario s = test::serving_scenario(test::kServingBaseline, {"engine.serving_error_ttft=null", "engine.serving_error_tpot=null",
                                                                     "engine.serving_error_throughput=null"});
  CHECK_FALSE(s.engine.serving_error.tpot.has_value());
  ServingRun run;
  ServingStep a;
  a.time = 0.2;
  a.sigma = 0.01;
  run.steps = {a};
  const ServingBand band = serving_band(s, run);
  CHECK(band.tpot.sigma() == Approx(0.05));
  const auto j = serving_band_json(band, 1.0, 0.2, 100.0);
  CHECK(j["tpot"]["engine"].is_null());
  CHECK_THAT(serving_band_text(j), Catch::Contains("the band is too narrow"));
}

TEST_CASE("engine.serving_error_*: a sigma of ln(simulated / measured) in [0, 3], or null", "[serving][band][errors]") {
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaseline, {"engine.serving_error_tpot=-0.1"}),
                    Catch::Contains("/engine/serving_error_tpot") && Catch::Contains("[0, 3]"));
  CHECK_THROWS_WITH(test::serving_scenario(test::kServingBaseline, {"engine.serving_error_ttft=\"wide\""}),
                    Catch::Contains("/engine/serving_error_ttft") && Catch::Contains("expected a number"));
}
