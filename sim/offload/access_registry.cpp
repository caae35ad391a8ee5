// The access models: one line each (the scenarios' default is synthetic).
#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "sim/base/error.h"
#include "sim/offload/access_model.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/synthetic_access.h"

namespace ess {

namespace {

std::unique_ptr<AccessModel> make_synthetic(const AccessModelInputs& in) {
  SyntheticAccessParams params = in.locality != nullptr ? *in.locality : SyntheticAccessParams{};
  params.layers = in.layers;
  params.top_k = in.top_k;
  params.seed = in.seed;
  return std::make_unique<SyntheticAccess>(params);
}

double no_memory(const AccessModelInputs& /*in*/) { return 0.0; }

// Checked against the run by preflight (AccessModel::check_serves), with the settings to change.
std::unique_ptr<AccessModel> make_replay(const AccessModelInputs& in) {
  if (in.file.empty()) throw InputError("access model replay: no trace file given");
  return std::make_unique<ReplayAccess>(in.file);
}

// The file, and one offset per record (a record takes at least 3 bytes); 0 if it cannot be read
// (the reader then says why).
double replay_memory(const AccessModelInputs& in) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(in.file, ec);
  return ec ? 0.0 : static_cast<double>(size) * (1.0 + 8.0 / 3.0);
}

const auto kAccessModels = std::to_array<Registered<AccessModelFactory>>({
    {"synthetic", "a seeded generator with temporal locality, tuned to the ESS paper's per-layer misses",
     {&make_synthetic, false, &no_memory}},
    {"replay", "recorded top-k selections read from cache.access.file (an ESS-TOPK trace)", {&make_replay, true, &replay_memory}},
});

}  // namespace

std::span<const Registered<AccessModelFactory>> access_models() { return kAccessModels; }

std::unique_ptr<AccessModel> make_access_model(std::string_view name, const AccessModelInputs& inputs) {
  return registered(access_models(), "access", name).make.create(inputs);
}

bool access_model_reads_file(std::string_view name) {
  return registered(access_models(), "access", name).make.reads_file;
}

double access_model_memory_bytes(std::string_view name, const AccessModelInputs& inputs) {
  return registered(access_models(), "access", name).make.memory_bytes(inputs);
}

}  // namespace ess
