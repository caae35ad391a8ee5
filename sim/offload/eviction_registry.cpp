// The eviction policies: one line each (PoolConfig's and the scenarios' default is lru).
#include <array>

#include "sim/offload/eviction.h"

namespace ess {

namespace {

const auto kEvictionPolicies = std::to_array<Registered<EvictionFactory>>({
    {"lru", "the least recently selected entry leaves (the ESS paper's policy)", &make_lru_eviction},
    {"fifo", "the earliest fetched entry leaves, whatever was selected since", &make_fifo_eviction},
    {"heat", "the entry with the lowest heat leaves: +1 per selection, x cache.heat_decay per step; ties by lru",
     &make_heat_eviction, heat_eviction_params()},
});

}  // namespace

std::span<const Registered<EvictionFactory>> eviction_policies() { return kEvictionPolicies; }

}  // namespace ess
