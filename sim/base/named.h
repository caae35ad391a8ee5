// A named choice with its one-line summary: the lines of the small registries that have no factory
// of their own (arrival processes, trace formats, prefill modes), read by the scenario loader as
// choices (with "did you mean") and listed by `ess-sim policies` beside the policy registries.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ess {

struct Named {
  std::string_view name;
  std::string_view summary;
};

// The names, in order (a configuration reader's choice()).
[[nodiscard]] inline std::vector<std::string> names_of(std::span<const Named> lines) {
  std::vector<std::string> out;
  out.reserve(lines.size());
  for (const Named& l : lines) out.emplace_back(l.name);
  return out;
}

}  // namespace ess
