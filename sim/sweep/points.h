// The points of a sweep: the cartesian product of its dimensions (zipped axes advance together).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/spec.h"

namespace ess {

struct SweepPoint {
  std::size_t index = 0;  // stable: the same spec always numbers its points the same way
  // Each axis's path and value, in the spec's axis order.
  std::vector<std::pair<std::string, nlohmann::json>> axes;

  // The `--set` arguments of this point, "path=<value as JSON>", in axis order.
  [[nodiscard]] std::vector<std::string> overrides() const;
  // "context_length=32768 mode=\"offload\"" for progress lines (last path component only).
  [[nodiscard]] std::string label() const;
  // {"workload.context_length": 32768, ...} in axis order.
  [[nodiscard]] nlohmann::ordered_json axes_json() const;
};

// The points in order: like nested loops over the dimensions in the order of their first axis in
// the spec, the first dimension outermost (it changes slowest), the last innermost.
[[nodiscard]] std::vector<SweepPoint> expand_points(const SweepSpec& spec);

}  // namespace ess
