// Which hardware a run used and how it was calibrated: a shipped or file profile carries the
// summary of its cross-validated fit; a datasheet preset carries none (uncalibrated).
#include <catch2/catch.hpp>

#include "sim/config/profile.h"
#include "sim/config/scenario.h"

namespace {

std::string scenario_on(const std::string& hardware) {
  return R"({"model": "llama-2-7b", "hardware": )" + hardware +
         R"(, "parallelism": {"tensor_parallel": 8}, "workload": {"batch_per_gpu": 1, "context_length": 512}})";
}

}  // namespace

TEST_CASE("a shipped profile names its base and each model's cross-validated error, and a preset none") {
  const auto profiled = ess::load_scenario_text(scenario_on(R"("h100-sxm-measured")"), "t.json");
  CHECK_THAT(profiled.hardware_calibration, Catch::StartsWith("calibrated (base h100-sxm): k-fold CV median |error| "));
  CHECK_THAT(profiled.hardware_calibration, Catch::Contains("gemm-measured "));
  const auto preset = ess::load_scenario_text(scenario_on(R"("h100-sxm")"), "t.json");
  CHECK(preset.hardware_calibration.empty());
  // Overriding fields of a profile keeps it calibrated.
  const auto overridden = ess::load_scenario_text(scenario_on(R"({"profile": ")" + std::string(ESS_SOURCE_DIR) +
                                                              R"(/calibration/profiles/h100-sxm-measured.json", "nodes": 2})"),
                                                  "t.json");
  CHECK(overridden.hardware_calibration == profiled.hardware_calibration);
}

TEST_CASE("calibration_summary reads calibration.models and tolerates what it does not know") {
  const nlohmann::json doc = {
      {"calibration",
       {{"base", "x"},
        {"models",
         {{{"model", "gemm"}, {"cross_validated", {{"median_abs", 0.063}}}},
          {{"model", "no-cv"}},
          {{"model", "norm"}, {"cross_validated", {{"median_abs", 0.1}}}}}}}}};
  CHECK(ess::calibration_summary(doc) == "calibrated (base x): k-fold CV median |error| gemm 6.3%, norm 10.0%");
  CHECK(ess::calibration_summary(nlohmann::json::object()) == "calibrated");
  const nlohmann::json transferred = {
      {"calibration", {{"base", "h20"}, {"transferred", {{{"name", "h800-sxm-measured"}, {"fields", {"a", "b"}}}}}}}};
  CHECK(ess::calibration_summary(transferred) ==
        "calibrated (base h20); transferred from h800-sxm-measured (2 fields), fitted on that GPU");
}
