#include "models/cost.h"

#include <array>
#include <string>
#include <utility>

namespace ess {

namespace {

constexpr std::array<std::pair<ParamSet, std::string_view>, kParamSetCount> kNames = {{
    {ParamSet::none, "none"},
    {ParamSet::gemm, "kernels.gemm"},
    {ParamSet::gemm_measured, "kernels.gemm_measured"},
    {ParamSet::grouped_gemm, "kernels.grouped_gemm"},
    {ParamSet::attention, "kernels.attention"},
    {ParamSet::sparse_attention, "kernels.sparse_attention"},
    {ParamSet::prefill_attention, "kernels.prefill_attention"},
    {ParamSet::indexer, "kernels.indexer"},
    {ParamSet::memory_bound, "kernels.memory_bound"},
    {ParamSet::alltoall, "collectives.alltoall"},
    {ParamSet::allreduce, "collectives.allreduce"},
    {ParamSet::pcie_copy, "pcie.copy"},
    {ParamSet::pcie_gather, "pcie.gather"},
    {ParamSet::nvlink, "nvlink"},
}};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string_view to_string(ParamSet p) { return kNames[static_cast<std::size_t>(p)].second; }

ParamSet param_set_of_field(std::string_view f) {
  if (starts_with(f, "hardware.")) f.remove_prefix(9);
  if (starts_with(f, "collectives.alltoall")) return ParamSet::alltoall;
  if (starts_with(f, "collectives.allreduce")) return ParamSet::allreduce;
  if (starts_with(f, "pcie.gather_")) return ParamSet::pcie_gather;
  if (starts_with(f, "pcie.h2d_") || starts_with(f, "pcie.d2h_")) return ParamSet::pcie_copy;
  if (starts_with(f, "nvlink.")) return ParamSet::nvlink;
  // kernels.<set>.<field>, or kernels.gemm_measured itself
  for (const auto& [set, name] : kNames) {
    if (set == ParamSet::none || !starts_with(name, "kernels.")) continue;
    if (f == name || starts_with(f, std::string(name) + ".")) return set;
  }
  return ParamSet::none;
}

}  // namespace ess
