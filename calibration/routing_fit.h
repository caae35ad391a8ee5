// Fits the expert-load model (sim/graph/expert_routing.h) to published load statistics: the
// log-normal skew of the experts' popularity and its pass-to-pass drift, from the imbalance per
// rank without EPLB and with it (calibration/data/public/trtllm/ep_load_imbalance.csv).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/graph/expert_routing.h"

namespace ess {

// One row of an expert-load table.
struct ExpertLoadRow {
  std::size_t line = 0;
  std::string config;
  ExpertLoadLayout layout;  // routed 256, top-8 (DeepSeek-V3/R1), the row's ranks, slots and tokens
  bool eplb = false;
  ExpertLoadStats measured;
};

// Reads `path` (columns config, ep, slots, eplb, rank_mean, rank_std, rank_imbalance, slot_mean,
// slot_std, slot_imbalance); MeasurementError on a bad cell. Needs a row without EPLB and one with.
[[nodiscard]] std::vector<ExpertLoadRow> read_expert_load_table(const std::string& path);

struct RoutingFit {
  double skew = 0;   // sigma of the long-run popularity
  double drift = 0;  // sigma of the pass-to-pass change
  std::vector<ExpertLoadStats> predicted;  // per row, with the fitted sigmas
};

struct RoutingFitOptions {
  int layers = 58;    // DeepSeek-V3/R1's MoE layers (3-60), as the table averages them
  int passes = 8;     // passes per layer per evaluation
  std::uint64_t seed = 1;
};

// Fits sqrt(skew^2 + drift^2) to the mean rank imbalance of the rows without EPLB (their loads
// follow the product of both log-normals, itself log-normal), then the drift to the mean rank
// imbalance of the rows with EPLB (a placement from the long-run popularity leaves the drift and
// the multinomial noise). The other columns are predictions, for checking. Bisection on common
// random numbers: the same seed in every evaluation.
[[nodiscard]] RoutingFit fit_routing(const std::vector<ExpertLoadRow>& rows, const RoutingFitOptions& options);

}  // namespace ess
