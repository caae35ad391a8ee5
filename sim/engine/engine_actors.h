// The SimGrid side of a run: the platform, one actor per GPU running its step plans, and in
// offload mode its transfer engines (on-demand fetches, write-backs, tiered prefetches), with two
// micro-batches one communication engine per GPU and micro-batch, and the collectives' barriers.
// What happens is reported to a RunRecorder (recorder.h); nothing here keeps results.
//
// This is the only place that owns a SimGrid engine. SimGrid allows one engine per process at a
// time and keeps global state across engines, so run_engine is called once per process (the CLI
// does; tests that run several use relative times only).
#pragma once

#include <cstdint>

#include "sim/config/run_request.h"
#include "sim/engine/recorder.h"
#include "sim/engine/step_plans.h"

namespace ess {

struct EngineRun {
  std::uint64_t activities = 0;  // SimGrid activities created (execs, comms, sleeps)
};

// Runs `steps` steps of `plans` on every GPU of the run's machine (its platform); `offload`: the
// run moves latent entries over PCIe. `fast_paths`: see SimulationOptions::fast_paths. An error
// raised inside an actor stops every actor and is rethrown here; a run that ends with a GPU short
// of its steps is an InternalError.
[[nodiscard]] EngineRun run_engine(const RunBase& run, bool offload, PlanCache& plans, std::int64_t steps, bool fast_paths,
                                   RunRecorder& recorder);

}  // namespace ess
