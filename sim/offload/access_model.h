// Which latent-cache entries the lightning indexer of DeepSeek-V3.2-Exp selects (its top-k) for each
// decode step, layer and request: the input of the pool simulation. Implementations:
// SyntheticAccess (synthetic_access.h), a seeded generator with temporal locality, and
// ReplayAccess (access_trace.h), which replays recorded selections from a file; one line each in
// access_registry.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "sim/base/error.h"
#include "sim/offload/registry.h"

namespace ess {

// One selection as the change from the previous selection of the same (layer, request).
struct SelectionDelta {
  std::vector<std::int64_t> removed;  // selected by the previous call, not by this one; ascending
  std::vector<std::int64_t> added;    // selected by this call, not by the previous one; ascending
  std::int64_t selected = 0;          // entries this call selects (min(top_k, context))
};

class AccessModel {
 public:
  AccessModel() = default;
  AccessModel(const AccessModel&) = delete;
  AccessModel& operator=(const AccessModel&) = delete;
  virtual ~AccessModel() = default;

  // Entries selected by `request` in `layer` at `step` when the context holds `context` tokens
  // (positions 0..context-1): written to `out` (replacing its content) sorted ascending, unique,
  // exactly min(top_k, context) of them. Steps must be visited in increasing order per
  // (layer, request); warm-up steps are negative. Implementations throw InternalError for calls
  // that break this contract or name a layer they do not have (a replay trace, InputError for a
  // step or context its file does not hold).
  virtual void select(int step, int layer, int request, std::int64_t context,
                      std::vector<std::int64_t>& out) = 0;

  // Whether select_delta is implemented: consecutive selections overlap by ~95% in decode, so a
  // pool fed the change costs O(change) per step instead of O(top_k).
  [[nodiscard]] virtual bool has_delta() const { return false; }
  // The selection select() would give for the same call (the same random draws, the same stream
  // state afterwards), as its change from the previous call for (layer, request), whichever of the
  // two that was; a first call adds every entry. Same contract and errors as select().
  virtual void select_delta(int /*step*/, int /*layer*/, int /*request*/, std::int64_t /*context*/,
                            SelectionDelta& /*out*/) {
    throw InternalError("AccessModel::select_delta: not implemented by this model (check has_delta())");
  }
};

// What a registered access model is made from.
struct AccessModelInputs {
  int layers = 0;              // layers with an indexer, >= 1
  std::int64_t top_k = 0;      // entries selected per step, layer and request, >= 1
  std::uint64_t seed = 0;      // generators: the seed of all their streams
  std::filesystem::path file;  // models that read a file (AccessModelFactory::reads_file): the file
};

// The access registry's factory: how to make the model, and whether it reads a file (the scenario
// then requires cache.access.file, preflight sizes and checks it).
struct AccessModelFactory {
  // Throws InputError for inputs the model cannot serve; a model reading a file throws
  // what its reader throws (AccessTraceError for a trace).
  std::unique_ptr<AccessModel> (*create)(const AccessModelInputs& inputs);
  bool reads_file;
};

// The registered access models, in registry order (access_registry.cpp).
[[nodiscard]] std::span<const Registered<AccessModelFactory>> access_models();

// The registered model `name` (InternalError listing the names if there is none): made
// from `inputs`, or whether it reads a file.
[[nodiscard]] std::unique_ptr<AccessModel> make_access_model(std::string_view name, const AccessModelInputs& inputs);
[[nodiscard]] bool access_model_reads_file(std::string_view name);

}  // namespace ess
