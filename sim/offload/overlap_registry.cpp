// The overlap policies: one line each. The order matters twice: auto breaks ties towards the
// earlier line, and the results list layer-steps per concrete policy in this order.
#include "sim/offload/overlap.h"

#include <array>

namespace ess {

namespace {

const auto kOverlapPolicies = std::to_array<Registered<OverlapFactory>>({
    {"serial", "no overlap: select, fetch the misses, then attend over every selected entry", &make_serial_overlap},
    {"da", "attention over the resident entries runs during the fetch (ESS's DA)", &make_da_overlap},
    {"dba", "two batch halves: half a's fetch under half b's indexer, half b's under attention (ESS's DBA)", &make_dba_overlap},
    {"auto", "per layer and step, whichever policy above the cost models estimate fastest", &make_auto_overlap},
});

}  // namespace

std::span<const Registered<OverlapFactory>> overlap_policies() { return kOverlapPolicies; }

std::size_t overlap_index(std::string_view name) {
  const auto& entry = registered(overlap_policies(), "overlap", name);
  return static_cast<std::size_t>(&entry - overlap_policies().data());
}

const std::vector<std::unique_ptr<OverlapPolicy>>& overlap_instances() {
  static const std::vector<std::unique_ptr<OverlapPolicy>> instances = [] {
    std::vector<std::unique_ptr<OverlapPolicy>> v;
    for (const auto& r : overlap_policies()) v.push_back(r.make());
    return v;
  }();
  return instances;
}

bool overlap_is_concrete(std::size_t index) { return !overlap_instances().at(index)->chooses_another(); }

}  // namespace ess
