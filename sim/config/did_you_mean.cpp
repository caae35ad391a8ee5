#include "sim/config/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ess {

namespace {
bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

std::optional<std::string> closest_match(std::string_view word, std::span<const std::string> candidates) {
  // A word that starts a candidate names it ("h200" -> "h200-sxm", not "h20"); the shortest wins.
  std::optional<std::string> prefixed;
  for (const auto& c : candidates) {
    if (word.size() >= 2 && c.size() > word.size() && iequal(word, std::string_view(c).substr(0, word.size())) &&
        (!prefixed || c.size() < prefixed->size())) {
      prefixed = c;
    }
  }
  for (const auto& c : candidates) {
    if (iequal(word, c)) return c;
  }
  if (prefixed) return prefixed;
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string> candidates) {
  const auto m = closest_match(word, candidates);
  return m ? " (did you mean \"" + *m + "\"?)" : std::string();
}

std::string quoted_list(std::span<const std::string> items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
    out += "\"" + items[i] + "\"";
  }
  return out;
}

}  // namespace ess
