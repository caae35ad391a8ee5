#include "sim/serving/table_builder.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <system_error>

#include <unistd.h>
#include <cmath>

#include "sim/engine/simulation.h"
#include "sim/io/atomic_file.h"
#include "sim/serving/prefill_pool.h"

namespace ess {

namespace {

// Capacities that hold any grid point: 1 EB of HBM and of host memory per socket.
constexpr double kUnboundedBytes = 1e18;
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
    for (std::int64_t b = 1; b < memory.batch_bound(); b *= 2) g.batches.push_back(b);
    g.batches.push_back(memory.batch_bound());
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

StepPoint measure_point(const Scenario& base, bool offload, std::int64_t batch, std::int64_t context, std::int64_t steps,
                        const std::filesystem::path& access_store, std::optional<PrefillChunk> chunk) {
  Scenario s = base;
  s.serving.reset();
  s.workload.prefill_chunk = chunk;
  s.workload.batch_per_gpu = batch;
  s.workload.context_length = context;
  s.workload.decode_steps = steps;
  s.hardware.gpu.hbm_capacity = Bytes(kUnboundedBytes);
  s.hardware.cpu.dram_capacity_per_socket = Bytes(kUnboundedBytes);
  if (offload) {
    s.cache.host_memory_threshold = 1.0;
  } else {
    s.cache.mode = CacheMode::gpu;
  }
  ResourceLimits limits;
  limits.enforce = false;
  SimulationOptions options{steps, 0, limits};
  if (offload) options.access_store = access_store;
  Simulation sim(s, options);
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
  return {time / static_cast<double>(r.step_time.size()), samples > 0 ? util / samples : 0.0};
}

StepModel build_step_model(const Scenario& s, const ServingMemory& memory, const TableGrid& grid) {
  const TempDir store;
  const auto table = [&](bool offload) {
    std::vector<StepPoint> points;
    for (auto b : grid.batches) {
      for (auto c : grid.contexts) points.push_back(measure_point(s, offload, b, c, s.serving->table.steps, store.path));
    }
    return StepTable(grid.batches, grid.contexts, std::move(points));
  };
  StepModel m;
  if (memory.offload()) {
    m.offload = table(true);
    if (memory.fallback_possible()) m.gpu = table(false);
  } else {
    m.gpu = table(false);
  }
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

StepTable build_prefill_table(const Scenario& s, const TableGrid& grid) {
  std::vector<StepPoint> points;
  points.reserve(grid.batches.size() * grid.contexts.size());
  for (const std::int64_t tokens : grid.batches) {
    for (const std::int64_t prompt : grid.contexts) {
      const Scenario instance = prefill_instance_scenario(s, tokens, prompt);
      // Every run of the table passed serving's preflight (serving_preflight.h) before the first.
      ResourceLimits vetted;
      vetted.enforce = false;
      Simulation sim(instance, SimulationOptions(1, 0, vetted));
      const RunResult r = sim.run();
      points.push_back(StepPoint{r.step_time.at(0), 1.0});
    }
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

std::vector<std::int64_t> chunk_slice_batches(const Scenario& s, const TableGrid& decode_grid) {
  std::vector<std::int64_t> out;
  const auto& bs = decode_grid.batches;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    if (i % 2 != 0 && i + 1 != bs.size()) continue;
    const std::int64_t b = std::max<std::int64_t>(bs[i], s.execution.micro_batches);
    if (out.empty() || b > out.back()) out.push_back(b);
  }
  return out;
}

ChunkModel build_chunk_model(const Scenario& s, const ServingMemory& memory, const TableGrid& decode_grid,
                             const TableGrid& grid, const std::vector<Request>& requests) {
  const TempDir store;
  const bool offload = memory.offload();
  ChunkModel m;
  double sum = 0.0;
  for (const auto& r : requests) sum += static_cast<double>(r.prompt_tokens) + 0.5 * static_cast<double>(r.output_tokens);
  m.context = requests.empty() ? std::max<std::int64_t>(1, s.workload.context_length)
                               : std::max<std::int64_t>(1, std::llround(sum / static_cast<double>(requests.size())));
  const std::int64_t steps = s.serving->table.steps;
  const std::vector<std::int64_t> middle = {grid.contexts[grid.contexts.size() / 2]};
  for (const std::int64_t batch : chunk_slice_batches(s, decode_grid)) {
    const std::vector<std::int64_t>& cached = m.slices.empty() ? grid.contexts : middle;
    ChunkSlice slice;
    slice.batch = batch;
    slice.reference = measure_point(s, offload, batch, m.context, steps, store.path);
    std::vector<StepPoint> points;
    for (const std::int64_t tokens : grid.batches) {
      for (const std::int64_t c : cached) {
        points.push_back(measure_point(s, offload, batch, m.context, steps, store.path, PrefillChunk{tokens, c}));
      }
    }
    slice.table = StepTable(grid.batches, cached, std::move(points));
    m.slices.push_back(std::move(slice));
  }
  return m;
}

}  // namespace ess
