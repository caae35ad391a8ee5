// The version ess-bench writes into environment.tool ("ess-bench <version>"). Bump it whenever a
// measurement's method changes, so that a fitter can tell measurements taken differently apart.
#pragma once

#include <string_view>

namespace ess::bench {

inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace ess::bench
