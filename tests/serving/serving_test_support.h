// Scenarios and step models for the serving tests: the bundled serving scenarios with
// overrides, and synthetic step-time tables (no SimGrid).
#pragma once

#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/serving/step_table.h"

namespace ess::test {

inline const std::string kServingBaseline = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-baseline-32k.json";
inline const std::string kServingEss = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-ess-32k.json";
inline const std::string kServingBaselineColocated = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-baseline-32k-colocated.json";
inline const std::string kServingBaselineConcurrency = std::string(ESS_SOURCE_DIR) + "/scenarios/serving-baseline-32k-concurrency.json";

inline Scenario serving_scenario(const std::string& file, const std::vector<std::string>& sets) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return load_scenario(file, overrides);
}

// Step time a + c x batch (seconds), independent of the context, at utilisation u.
inline StepTable linear_table(double a, double c, std::int64_t max_batch, double u = 0.5) {
  const double top = static_cast<double>(max_batch);
  return StepTable({1, max_batch}, {1, 1 << 30}, {{a + c, u}, {a + c, u}, {a + c * top, u}, {a + c * top, u}});
}

}  // namespace ess::test
