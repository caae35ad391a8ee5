// The fitted-model registry (calibration/fitted_model.h): names are unique, and a model is made only
// from measurements that hold its points (the contract that lets calibrate offer every registered
// model to every input and report the rest as not fitted).
#include "calibration/fitted_model.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "calibration/measurements.h"

TEST_CASE("fitted models: registry names are unique and none is made from no measurements") {
  const ess::MeasurementSet none;
  const ess::Hardware base{};
  std::set<std::string> names;
  for (const auto& model : ess::calibration::fitted_models()) {
    CAPTURE(model.name);
    CHECK(names.insert(model.name).second);
    CHECK_FALSE(model.make(none, base).has_value());
  }
  CHECK(names.size() == ess::calibration::fitted_models().size());
  CHECK(ess::calibration::model_specs(none, base).empty());
}

TEST_CASE("fitted models: a made model carries its registry name and its points") {
  ess::MeasurementSet m;
  m.p2p.push_back({2, 1e6, 2e-5});
  m.p2p.push_back({2, 1e8, 4e-4});
  const auto specs = ess::calibration::model_specs(m, ess::Hardware{});
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].name == "nvlink-p2p");
  CHECK(specs[0].measured == std::vector<double>{2e-5, 4e-4});
  CHECK(specs[0].fields.size() == 2);
}
