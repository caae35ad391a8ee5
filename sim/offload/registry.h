// The registry of one kind of pluggable policy: a table with one line per implementation, in an
// explicit registry file beside the implementations (Ramulator 2's pattern, without static
// self-registration, so the order is the file's and nothing depends on link order).
//
// Each line names the policy once; that name is what scenario files say, what the scenario loader
// accepts (with "did you mean"), what `ess-sim policies` and the docs list, and what ess-runner and
// calibration take. Adding a policy: one .cpp with the implementation, one line in the kind's
// registry, one example scenario.
//
// Kinds and their registries:
//   eviction   sim/offload/eviction.h      eviction_policies()
//   prefetch   sim/offload/prefetch.h      prefetch_policies()
//   overlap    sim/offload/overlap.h       overlap_policies()
//   access     sim/offload/access_model.h  access_models()
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/error.h"
#include "sim/offload/policy_params.h"

namespace ess {

// One line of a registry: the policy's name, a one-line summary for the docs and `ess-sim
// policies`, `make`, the kind's factory (a function pointer whose signature the kind defines), and
// the numeric parameters the policy declares (policy_params.h; most declare none).
template <typename Factory>
struct Registered {
  std::string_view name;
  std::string_view summary;
  Factory make;
  std::span<const PolicyParam> params{};
};

// The names, in registry order (for a configuration reader's choice()).
template <typename Factory>
[[nodiscard]] std::vector<std::string> registered_names(std::span<const Registered<Factory>> registry) {
  std::vector<std::string> names;
  names.reserve(registry.size());
  for (const auto& r : registry) names.emplace_back(r.name);
  return names;
}

// The line called `name`, or nullptr.
template <typename Factory>
[[nodiscard]] const Registered<Factory>* find_registered(std::span<const Registered<Factory>> registry,
                                                         std::string_view name) {
  for (const auto& r : registry) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// The line called `name`; InternalError naming the kind and listing the choices otherwise (the
// scenario loader checks names first, with "did you mean", so an unknown name here is a bug).
template <typename Factory>
[[nodiscard]] const Registered<Factory>& registered(std::span<const Registered<Factory>> registry,
                                                    std::string_view kind, std::string_view name) {
  if (const auto* r = find_registered(registry, name)) return *r;
  std::string choices;
  for (const auto& r : registry) choices += (choices.empty() ? "" : ", ") + std::string(r.name);
  throw InternalError("unknown " + std::string(kind) + " policy \"" + std::string(name) +
                      "\"; expected one of " + choices);
}

}  // namespace ess
