// The access models: one line each (the scenarios' default is synthetic).
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "sim/base/error.h"
#include "sim/offload/access_model.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/synthetic_access.h"

namespace ess {

namespace {

std::unique_ptr<AccessModel> make_synthetic(const AccessModelInputs& in) {
  SyntheticAccessParams params;  // the defaults of synthetic_access.h but for these three
  params.layers = in.layers;
  params.top_k = in.top_k;
  params.seed = in.seed;
  return std::make_unique<SyntheticAccess>(params);
}

std::unique_ptr<AccessModel> make_replay(const AccessModelInputs& in) {
  if (in.file.empty()) throw InputError("access model replay: no trace file given");
  auto replay = std::make_unique<ReplayAccess>(in.file);
  if (replay->layers() != in.layers || replay->top_k() != in.top_k) {
    throw AccessTraceError(in.file, std::nullopt,
                           "the trace has " + std::to_string(replay->layers()) + " layers and top_k " +
                               std::to_string(replay->top_k()) + "; expected " + std::to_string(in.layers) +
                               " and " + std::to_string(in.top_k));
  }
  return replay;
}

const std::array<Registered<AccessModelFactory>, 2> kAccessModels{{
    {"synthetic", "a seeded generator with temporal locality, tuned to the ESS paper's per-layer misses",
     {&make_synthetic, false}},
    {"replay", "recorded top-k selections read from cache.access.file (an ESS-TOPK trace)", {&make_replay, true}},
}};

}  // namespace

std::span<const Registered<AccessModelFactory>> access_models() { return kAccessModels; }

std::unique_ptr<AccessModel> make_access_model(std::string_view name, const AccessModelInputs& inputs) {
  return registered(access_models(), "access", name).make.create(inputs);
}

bool access_model_reads_file(std::string_view name) {
  return registered(access_models(), "access", name).make.reads_file;
}

}  // namespace ess
