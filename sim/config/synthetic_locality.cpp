#include "sim/config/synthetic_locality.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/json_text.h"

namespace ess {

SyntheticAccessParams read_synthetic_locality(ObjectReader& a, int layers) {
  const SyntheticAccessParams defaults;
  SyntheticAccessParams p;
  p.layers = layers;
  p.recent_window = a.integer_or("recent_window", Range::closed(0, 1 << 20), defaults.recent_window);
  p.distance_exponent = a.number_or("distance_exponent", Range::closed(0.0, 16.0), defaults.distance_exponent);
  p.prefill_retention = a.number_or("prefill_retention", Range::closed(0.0, 1.0), defaults.prefill_retention);
  std::string source;
  const nlohmann::json* list = a.take("retention", source);
  if (list != nullptr && !list->is_null()) {
    // A measured or assumed retention per layer replaces the default profile and its fields.
    for (const char* key : {"best_retention", "best_depth", "edge_retention"}) {
      if (a.has(key)) a.fail(key, "has no effect with a per-layer \"retention\" list (it replaces the default profile)");
    }
    if (!list->is_array() || list->size() != static_cast<std::size_t>(layers)) {
      a.fail("retention", "expected an array of " + std::to_string(layers) +
                              " numbers in [0, 1], one per layer with an indexer (main layers and MTP modules in use), got " +
                              describe_json(*list));
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto& v = (*list)[i];
      if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0)) {
        a.fail("retention", "element " + std::to_string(i) + " must be a number in [0, 1], got " + describe_json(v));
      }
      p.retention.push_back(v.get<double>());
    }
    a.record("retention", *list, source);
    return p;
  }
  p.best_retention = a.number_or("best_retention", Range::closed(0.0, 1.0), defaults.best_retention);
  p.best_depth = a.number_or("best_depth", Range::closed(0.0, 1.0), defaults.best_depth);
  p.edge_retention = a.number_or("edge_retention", Range::closed(0.0, 1.0), defaults.edge_retention);
  return p;
}

}  // namespace ess
