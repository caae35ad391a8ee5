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
#include <string>
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

// One call the cache simulation will make: a step (warm-up windows are negative) at a context.
struct AccessCall {
  int step = 0;
  std::int64_t context = 0;
};

// What a run will ask its access model for, known before it starts (preflight, sim/engine): checked
// with AccessModel::check_serves so that a trace lacking a step fails before the engine starts. The
// `*_setting` texts name the scenario settings behind each part, for the model's messages.
struct AccessDemand {
  int layers = 0;                      // with the MTP modules in use
  std::int64_t top_k = 0;              // model.indexer.top_k
  std::int64_t sampled_requests = 0;   // cache.sampled_requests
  std::vector<AccessCall> warmup;      // the warm-up windows with a positive context, oldest first
  std::string warmup_setting;          // e.g. "warm-up windows -32 to -1 (cache.warmup_windows)"
  std::vector<AccessCall> steps;       // the simulated steps, in order
  std::string steps_setting;           // e.g. "steps 0 to 15 (workload.decode_steps or --steps)"
  std::string context_setting;         // how a step's context follows from the scenario
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

  // Whether the model can answer every call of `demand` (a recorded trace must hold its layers,
  // requests, steps and contexts); throws InputError (AccessTraceError for a trace) saying what is
  // missing and which setting asks for it. Generators serve any demand.
  virtual void check_serves(const AccessDemand& /*demand*/) const {}
  // Everything the model's selections depend on, as text, for the key of the access store
  // (sim/engine/access_store.h); "" when its results must not be stored (a model reading a file,
  // which may change under the same name).
  [[nodiscard]] virtual std::string store_key() const { return ""; }
};

struct SyntheticAccessParams;

// What a registered access model is made from.
struct AccessModelInputs {
  int layers = 0;              // layers with an indexer, >= 1
  std::int64_t top_k = 0;      // entries selected per step, layer and request, >= 1
  std::uint64_t seed = 0;      // generators: the seed of all their streams
  std::filesystem::path file;  // models that read a file (AccessModelFactory::reads_file): the file
  // Generators: the scenario's locality (cache.access); layers, top_k and seed above replace its
  // own. nullptr: the generator's defaults.
  const SyntheticAccessParams* locality = nullptr;
};

// The access registry's factory: how to make the model, whether it reads a file (the scenario then
// requires cache.access.file), and the host memory it will hold, estimated before it is made
// (preflight refuses a run that would not fit before reading a large file).
struct AccessModelFactory {
  // Throws InputError for inputs the model cannot serve; a model reading a file throws
  // what its reader throws (AccessTraceError for a trace).
  std::unique_ptr<AccessModel> (*create)(const AccessModelInputs& inputs);
  bool reads_file;
  double (*memory_bytes)(const AccessModelInputs& inputs);
};

// The registered access models, in registry order (access_registry.cpp).
[[nodiscard]] std::span<const Registered<AccessModelFactory>> access_models();
// The model of a scenario that names none.
inline constexpr std::string_view kDefaultAccessModel = "synthetic";

// The registered model `name` (InternalError listing the names if there is none): made
// from `inputs`, whether it reads a file, or the memory it would hold.
[[nodiscard]] std::unique_ptr<AccessModel> make_access_model(std::string_view name, const AccessModelInputs& inputs);
[[nodiscard]] bool access_model_reads_file(std::string_view name);
[[nodiscard]] double access_model_memory_bytes(std::string_view name, const AccessModelInputs& inputs);

}  // namespace ess
