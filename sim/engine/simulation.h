// One simulation run: a scenario in, per-step and per-layer timings, memory and a trace out.
//
// This is the only place that owns a SimGrid engine. SimGrid allows one engine per process at a
// time and keeps global state across engines, so a Simulation is run once, and a process should
// run one Simulation (the CLI does; tests that run several use relative times only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/graph/op.h"
#include "sim/io/chrome_trace.h"
#include "sim/memory/memory_plan.h"

namespace ess {

struct SimulationOptions {
  std::int64_t steps = 0;  // 0: the scenario's workload.decode_steps
  int trace_steps = 2;     // steps recorded in the Chrome trace (0: none)
};

// What one GPU did in one step. `busy` is time in each operator category; `wait` is time spent
// waiting for the other GPUs of a collective to arrive.
struct GpuStepTimes {
  double start = 0.0;  // seconds since the start of the run
  double end = 0.0;
  CategoryTimes busy{};
  double wait = 0.0;
};

struct LayerTimes {
  std::string kind;   // "dense", "moe", "mtp", or "head" for embedding and LM head
  CategoryTimes busy{};  // summed over steps and GPUs
  double wait = 0.0;     // summed over steps and GPUs
  Flops flops;           // per step per GPU, averaged
  Bytes bytes;
};

struct RunResult {
  std::int64_t batch_per_gpu = 0;
  int gpus = 0;
  std::int64_t steps = 0;
  MemoryBudget memory;
  std::vector<std::int64_t> step_context;         // cached tokens per request at each step's start
  std::vector<double> step_time;                  // per step: latest GPU end minus previous latest end
  std::vector<std::vector<GpuStepTimes>> gpu_steps;  // [step][gpu]
  std::vector<LayerTimes> layers;                 // model layers, MTP modules, then "head"
  std::uint64_t activities = 0;                   // SimGrid activities created (execs, comms, sleeps)
  ChromeTrace trace;
};

class Simulation {
 public:
  Simulation(const Scenario& scenario, SimulationOptions options);
  // Resolves the batch (CapacityError if it does not fit) and simulates every step. Call once.
  [[nodiscard]] RunResult run();

 private:
  const Scenario& scenario_;
  SimulationOptions options_;
  bool ran_ = false;
};

}  // namespace ess
