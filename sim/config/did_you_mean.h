// "Did you mean" suggestions for misspelt keys, units and names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sim/base/text.h"  // edit_distance

namespace ess {

// The candidate `word` most plausibly meant: one equal ignoring case; else the shortest candidate
// that `word` (2+ characters) starts, ignoring case ("h200" -> "h200-sxm"); else the closest by edit
// distance if at most max(2, |word| / 3). Ties go to the earliest candidate (deterministic).
[[nodiscard]] std::optional<std::string> closest_match(std::string_view word,
                                                       std::span<const std::string> candidates);

// " (did you mean \"x\"?)" or "" when nothing is close.
[[nodiscard]] std::string did_you_mean(std::string_view word, std::span<const std::string> candidates);

// "a", "b", "c" joined for messages: "\"a\", \"b\" or \"c\"".
[[nodiscard]] std::string quoted_list(std::span<const std::string> items);

}  // namespace ess
