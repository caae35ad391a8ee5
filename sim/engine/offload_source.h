// Where an offload run's cache behaviour comes from, step by step: the access model (synthetic, or
// a replayed trace), and either the index-level cache simulation over the sampled requests (on a
// worker thread, step_plans.h) or a store of its results from an earlier run (access_store.h).
// No SimGrid.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "sim/config/run_request.h"
#include "sim/engine/access_store.h"
#include "sim/engine/step_plans.h"
#include "sim/graph/decode_step.h"
#include "sim/offload/access_model.h"
#include "sim/offload/cache_sim.h"

namespace ess {

class OffloadSource {
 public:
  // Outside offload mode it provides nothing. `access`: the access model preflight() made and
  // checked (Preflight::access); `store`: SimulationOptions::access_store (used for models whose
  // results may be stored, AccessModel::store_key).
  // `builder` must outlive it.
  OffloadSource(const DecodeRun& run, const DecodeStepBuilder& builder, std::int64_t steps,
                const std::filesystem::path& store, std::unique_ptr<AccessModel> access);
  OffloadSource(const OffloadSource&) = delete;
  OffloadSource& operator=(const OffloadSource&) = delete;

  // For PlanCache: each step's layers, asked for in step order (empty outside offload mode). Valid
  // while this object lives.
  [[nodiscard]] PlanCache::AccessSource access();

  // After a run of `steps` steps: stores what the cache simulation computed when a store was used
  // and had nothing for this run. Returns RunResult::access_store: "read", "written" or "".
  std::string finish(std::int64_t steps);

 private:
  std::filesystem::path store_;
  std::unique_ptr<AccessModel> access_model_;
  std::unique_ptr<CacheSimulator> cache_sim_;
  std::unique_ptr<AccessPipeline> pipeline_;  // after the simulator it reads: destroyed (joined) first
  std::string store_key_;                     // the access store's key ("" when not used)
  std::optional<AccessSteps> stored_;         // read from the store
  AccessSteps computed_;                      // to write to it
  bool offload_ = false;
};

}  // namespace ess
