#include "sim/serving/table_builder.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <system_error>

#include <unistd.h>
#include <cmath>

#include "sim/engine/simulation.h"
#include "sim/engine/step_band.h"
#include "sim/io/atomic_file.h"
#include "sim/serving/prefill_pool.h"

namespace ess {

namespace {

// Contexts further apart than this ratio get a middle grid point.
constexpr double kContextSpreadForMiddle = 1.25;

// Token counts 256, 512, ... below `budget`, then the budget.
std::vector<std::int64_t> doubling_to(std::int64_t budget) {
  constexpr std::int64_t kFewestTokens = 256;
  std::vector<std::int64_t> out;
  for (std::int64_t n = std::min(kFewestTokens, budget); n < budget; n *= 2) out.push_back(n);
  out.push_back(budget);
  return out;
}

// A private directory under the system's temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<unsigned> counter{0};
    const auto base = std::filesystem::temp_directory_path();
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto p = base / ("ess-serving-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
      std::error_code ec;  // a directory that cannot be made is reported below, not as a filesystem_error
      if (std::filesystem::create_directory(p, ec)) {
        path = std::move(p);
        return;
      }
    }
    // The environment (a full disk, permissions), not a bug: reported as an output that cannot be written.
    throw OutputError(base, "could not create a temporary directory under " + base.string());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

TableGrid table_grid(const Scenario& s, const ServingMemory& memory, const std::vector<Request>& requests) {
  const auto& t = s.serving->table;
  TableGrid g;
  if (!t.batches.empty()) {
    g.batches = t.batches;
  } else {
    // Two micro-batches need a request each: the grid starts at 2 and a lone request is priced
    // as two (the table clamps below its first point; engines fall back to one batch there).
    const std::int64_t first = s.execution.micro_batches;
    // A closed loop never holds more than its concurrency, spread evenly by admission (the slot
    // with the fewest requests first): no slot holds more than ceil(concurrency / slots).
    std::int64_t top = memory.batch_bound();
    const auto& arrivals = s.serving->arrivals;
    if (arrivals.closed_loop()) {
      const std::int64_t slots = s.parallelism.attention_dp;
      top = std::min(top, (static_cast<std::int64_t>(arrivals.concurrency) + slots - 1) / slots);
    }
    for (std::int64_t b = first; b < top; b *= 2) g.batches.push_back(b);
    g.batches.push_back(std::max(first, top));
    // Above the largest captured CUDA graph a step runs eagerly (engine.eager_launch_time): a step
    // in time the table must not interpolate across, so both sides of it are points.
    if (!s.engine.captured.empty()) {
      for (const std::int64_t edge : {s.engine.captured.back(), s.engine.captured.back() + 1}) {
        if (edge > first && edge < top) g.batches.push_back(edge);
      }
      std::sort(g.batches.begin(), g.batches.end());
      g.batches.erase(std::unique(g.batches.begin(), g.batches.end()), g.batches.end());
    }
  }
  if (!t.contexts.empty()) {
    g.contexts = t.contexts;
  } else {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    for (const auto& r : requests) {
      lo = lo == 0 ? r.prompt_tokens : std::min(lo, r.prompt_tokens);
      hi = std::max(hi, r.prompt_tokens + r.output_tokens);
    }
    if (requests.empty()) lo = hi = std::max<std::int64_t>(1, s.workload.context_length);
    g.contexts.push_back(lo);
    if (static_cast<double>(hi) > kContextSpreadForMiddle * static_cast<double>(lo)) {
      g.contexts.push_back(static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi)))));
    }
    if (hi > g.contexts.back()) g.contexts.push_back(hi);
  }
  return g;
}

DecodeRun table_point_run(const Scenario& s, bool offload, std::int64_t batch, std::int64_t context, std::int64_t steps,
                          std::optional<PrefillChunk> chunk) {
  Workload w = s.workload;  // the MTP and expert load of the scenario's
  const int tp = s.parallelism.tensor_parallel;
  w.batch_per_gpu = (batch + tp - 1) / tp;
  w.context_length = context;
  w.decode_steps = steps;
  w.prefill_chunk = chunk;
  DecodeRun run = decode_run(s, w, offload ? CacheMode::offload : CacheMode::gpu, MemoryBound::unbounded);
  // Under tensor-parallel attention a serving slot is a replica: `batch` requests and `chunk`
  // tokens of the replica, whatever their count.
  if (tp > 1) run.replica_requests = batch;
  return run;
}

StepPoint measure_point(const DecodeRun& run, const std::filesystem::path& access_store) {
  // Every run of the table passed serving's preflight (serving_preflight.h) before the first.
  ResourceLimits vetted;
  vetted.enforce = false;
  SimulationOptions options{run.workload.decode_steps, 0, vetted};
  if (run.offload()) options.access_store = access_store;
  Simulation sim(run, options);
  const RunResult r = sim.run();
  double time = 0.0;
  double util = 0.0;
  double samples = 0.0;
  for (std::size_t k = 0; k < r.step_time.size(); ++k) {
    time += r.step_time[k];
    for (const auto& g : r.gpu_steps[k]) {
      double busy = 0.0;
      for (OpCategory c : {OpCategory::gemm, OpCategory::attention, OpCategory::indexer, OpCategory::norm,
                           OpCategory::elementwise, OpCategory::collective}) {
        busy += g.busy[static_cast<std::size_t>(c)];
      }
      util += std::min(1.0, busy / r.step_time[k]);
      samples += 1.0;
    }
  }
  return {time / static_cast<double>(r.step_time.size()), samples > 0 ? util / samples : 0.0,
          step_band(r, run.system->hardware_bands).sigma};
}

StepModelRuns step_model_runs(const Scenario& s, const ServingMemory& memory, const TableGrid& grid) {
  const auto table = [&](bool offload) {
    std::vector<DecodeRun> runs;
    for (auto b : grid.batches) {
      for (auto c : grid.contexts) runs.push_back(table_point_run(s, offload, b, c, s.serving->table.steps));
    }
    return runs;
  };
  StepModelRuns r;
  if (memory.offload()) r.offload = table(true);
  if (!memory.offload() || memory.fallback_possible()) r.gpu = table(false);
  return r;
}

StepModel build_step_model(const Scenario& s, const ServingMemory& memory, const TableGrid& grid) {
  const TempDir store;
  const auto table = [&](const std::vector<DecodeRun>& runs) {
    std::vector<StepPoint> points;
    points.reserve(runs.size());
    for (const DecodeRun& run : runs) points.push_back(measure_point(run, store.path));
    return StepTable(grid.batches, grid.contexts, std::move(points));
  };
  const StepModelRuns runs = step_model_runs(s, memory, grid);
  StepModel m;
  if (!runs.offload.empty()) m.offload = table(runs.offload);
  if (!runs.gpu.empty()) m.gpu = table(runs.gpu);
  return m;
}

TableGrid prefill_table_grid(const Scenario& s, const std::vector<Request>& requests) {
  constexpr double kPromptRatio = 2.0;  // neighbouring prompt lengths at most this far apart
  TableGrid g;
  g.batches = doubling_to(s.serving->prefill.tokens_per_gpu);
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  for (const auto& r : requests) {
    lo = lo == 0 ? r.prompt_tokens : std::min(lo, r.prompt_tokens);
    hi = std::max(hi, r.prompt_tokens);
  }
  if (requests.empty()) lo = hi = 1;
  const auto steps = static_cast<int>(std::ceil(std::log(static_cast<double>(hi) / static_cast<double>(lo)) / std::log(kPromptRatio)));
  g.contexts.push_back(lo);
  for (int k = 1; k < steps; ++k) {
    const auto p = static_cast<std::int64_t>(std::llround(static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo),
                                                                                             static_cast<double>(k) / steps)));
    if (p > g.contexts.back() && p < hi) g.contexts.push_back(p);
  }
  if (hi > g.contexts.back()) g.contexts.push_back(hi);
  return g;
}

std::vector<PrefillRun> prefill_table_runs(const Scenario& s, const TableGrid& grid) {
  std::vector<PrefillRun> runs;
  runs.reserve(grid.batches.size() * grid.contexts.size());
  for (const std::int64_t tokens : grid.batches) {
    for (const std::int64_t prompt : grid.contexts) runs.push_back(prefill_instance_run(s, tokens, prompt));
  }
  return runs;
}

StepTable build_prefill_table(const Scenario& s, const TableGrid& grid) {
  std::vector<StepPoint> points;
  for (const PrefillRun& run : prefill_table_runs(s, grid)) {
    // Every run of the table passed serving's preflight (serving_preflight.h) before the first.
    ResourceLimits vetted;
    vetted.enforce = false;
    Simulation sim(run, SimulationOptions(1, 0, vetted));
    const RunResult r = sim.run();
    points.push_back(StepPoint{r.step_time.at(0), 1.0, step_band(r, s.hardware_bands).sigma});
  }
  return StepTable(grid.batches, grid.contexts, std::move(points));
}

TableGrid chunk_table_grid(const Scenario& s, const std::vector<Request>& requests) {
  constexpr double kCachedRatio = 2.0;  // neighbouring cached-token points at most this far apart
  TableGrid g;
  const std::int64_t budget = s.serving->prefill.tokens_per_gpu;
  g.batches = doubling_to(budget);
  std::int64_t longest = 1;
  for (const auto& r : requests) longest = std::max(longest, r.prompt_tokens);
  g.contexts.push_back(0);
  const std::int64_t hi = longest - 1;  // the most a chunk can have cached
  for (double c = static_cast<double>(std::min(budget, hi)); c < static_cast<double>(hi); c *= kCachedRatio) {
    const auto v = static_cast<std::int64_t>(std::llround(c));
    if (v > g.contexts.back()) g.contexts.push_back(v);
  }
  if (hi > g.contexts.back()) g.contexts.push_back(hi);
  return g;
}

namespace {

// The slices' batches: every other batch of the decode grid from its smallest, and its largest
// (at least the micro-batches: each holds a request).
std::vector<std::int64_t> chunk_slice_batches(const Scenario& s, const TableGrid& decode_grid) {
  std::vector<std::int64_t> out;
  const auto& bs = decode_grid.batches;
  // The decode grid's points on both sides of the largest captured CUDA graph are slices too: a
  // mixed step always runs eagerly, so a slice's increment over its decode step holds the eager
  // launches only below that edge, and interpolating increments across it would drop them.
  const auto edge = [&](std::int64_t b) {
    return !s.engine.captured.empty() && (b == s.engine.captured.back() || b == s.engine.captured.back() + 1);
  };
  for (std::size_t i = 0; i < bs.size(); ++i) {
    if (i % 2 != 0 && i + 1 != bs.size() && !edge(bs[i])) continue;
    const std::int64_t b = std::max<std::int64_t>(bs[i], s.execution.micro_batches);
    if (out.empty() || b > out.back()) out.push_back(b);
  }
  return out;
}

}  // namespace

ChunkModelRuns chunk_model_runs(const Scenario& s, const ServingMemory& memory, const TableGrid& decode_grid,
                                const TableGrid& grid, const std::vector<Request>& requests) {
  const bool offload = memory.offload();
  ChunkModelRuns m;
  double sum = 0.0;
  for (const auto& r : requests) sum += static_cast<double>(r.prompt_tokens) + 0.5 * static_cast<double>(r.output_tokens);
  m.context = requests.empty() ? std::max<std::int64_t>(1, s.workload.context_length)
                               : std::max<std::int64_t>(1, std::llround(sum / static_cast<double>(requests.size())));
  const std::int64_t steps = s.serving->table.steps;
  const std::vector<std::int64_t> middle = {grid.contexts[grid.contexts.size() / 2]};
  for (const std::int64_t batch : chunk_slice_batches(s, decode_grid)) {
    ChunkSliceRuns slice{batch, m.slices.empty() ? grid.contexts : middle, table_point_run(s, offload, batch, m.context, steps), {}};
    for (const std::int64_t tokens : grid.batches) {
      for (const std::int64_t c : slice.cached) {
        slice.points.push_back(table_point_run(s, offload, batch, m.context, steps, PrefillChunk{tokens, c}));
      }
    }
    m.slices.push_back(std::move(slice));
  }
  return m;
}

ChunkModel build_chunk_model(const Scenario& s, const ServingMemory& memory, const TableGrid& decode_grid,
                             const TableGrid& grid, const std::vector<Request>& requests) {
  const TempDir store;
  const ChunkModelRuns runs = chunk_model_runs(s, memory, decode_grid, grid, requests);
  ChunkModel m;
  m.context = runs.context;
  for (const ChunkSliceRuns& r : runs.slices) {
    ChunkSlice slice;
    slice.batch = r.batch;
    slice.reference = measure_point(r.reference, store.path);
    std::vector<StepPoint> points;
    points.reserve(r.points.size());
    for (const DecodeRun& run : r.points) points.push_back(measure_point(run, store.path));
    slice.table = StepTable(grid.batches, r.cached, std::move(points));
    m.slices.push_back(std::move(slice));
  }
  return m;
}

}  // namespace ess
