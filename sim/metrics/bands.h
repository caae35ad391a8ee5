// How a run's calibration band (sim/engine/step_band.h) is written into results.json.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/config/profile.h"
#include "sim/engine/step_band.h"

namespace ess {

// results.json's summary.band (null when the hardware is uncalibrated).
[[nodiscard]] nlohmann::ordered_json band_json(const StepBand& b, double tokens_per_s_per_gpu);
// results.json's band_by_params: per parameter set that priced part of the step, its time, sigma,
// contribution and source (sigma null: no band).
[[nodiscard]] nlohmann::ordered_json band_breakdown_json(const StepBand& b, const CalibrationBands& bands);

}  // namespace ess
