#include "sim/serving/table_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/engine/simulation.h"
#include "sim/serving/prefill_pool.h"

namespace ess {

namespace {

// The prefill table's interpolation error: direct prefill steps at the midpoints between
// consecutive token grid points, at the middle prompt length (not part of the timed run).
TableCheck prefill_checks(const Scenario& s, const StepTable& table) {
  TableCheck checks;
  const auto& ts = table.batches();
  const auto& ls = table.contexts();
  const std::int64_t prompt = (ls.front() + ls.back()) / 2;
  for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
    const std::int64_t tokens = (ts[i] + ts[i + 1]) / 2;
    const double predicted = table.at(static_cast<double>(tokens), static_cast<double>(prompt)).time;
    ResourceLimits vetted;  // points between the table's, which serving's preflight passed
    vetted.enforce = false;
    Simulation sim(prefill_instance_run(s, tokens, prompt), SimulationOptions(1, 0, vetted));
    const double direct = sim.run().step_time.at(0);
    const double err = (predicted - direct) / direct;
    checks.worst = std::max(checks.worst, std::abs(err));
    checks.rows.push_back({{"tokens_per_gpu", tokens}, {"prompt", prompt}, {"table_s", predicted}, {"direct_s", direct}, {"error", err}});
  }
  return checks;
}

// The chunk model's error (TableChecks::chunks).
TableCheck chunk_checks(const Scenario& s, const StepModel& model, const ChunkModel& chunks) {
  TableCheck checks;
  const bool offload = s.cache.mode == CacheMode::offload;
  const auto& bs = (offload ? *model.offload : model.gpu).batches();
  const auto& ts = chunks.slices.front().table.batches();
  const auto& cs = chunks.slices.front().table.contexts();
  const std::int64_t cached = (cs.front() + cs.back()) / 2;
  std::vector<std::int64_t> between;
  for (const std::int64_t b : bs) {
    const bool slice = std::any_of(chunks.slices.begin(), chunks.slices.end(), [&](const ChunkSlice& sl) { return sl.batch == b; });
    if (!slice && b >= chunks.slices.front().batch) between.push_back(b);
  }
  for (const std::int64_t b : between) {
    for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
      const std::int64_t tokens = (ts[i] + ts[i + 1]) / 2;
      const double context = static_cast<double>(chunks.context);
      const double predicted = model.at(static_cast<double>(b), context, offload ? 1.0 : 0.0).time +
                               chunks.added(static_cast<double>(b), static_cast<double>(tokens), static_cast<double>(cached)).time;
      const double direct =
          measure_point(table_point_run(s, offload, b, chunks.context, s.serving->table.steps, PrefillChunk{tokens, cached})).time;
      const double err = (predicted - direct) / direct;
      checks.worst = std::max(checks.worst, std::abs(err));
      checks.rows.push_back({{"batch_per_gpu", b}, {"chunk_tokens", tokens}, {"cached", cached}, {"model_s", predicted},
                             {"direct_s", direct}, {"error", err}});
    }
  }
  return checks;
}

// The decode table's error (TableChecks::decode).
TableCheck decode_checks(const Scenario& s, const StepModel& model) {
  TableCheck checks;
  const bool offload = s.cache.mode == CacheMode::offload;
  const StepTable& table = offload ? *model.offload : model.gpu;
  const auto& bs = table.batches();
  const auto& cs = table.contexts();
  const std::int64_t context = (cs.front() + cs.back()) / 2;
  for (std::size_t i = 0; i + 1 < bs.size(); ++i) {
    const std::int64_t b = (bs[i] + bs[i + 1]) / 2;
    if (b == bs[i]) continue;
    // As the serving loop looks it up: at the CUDA graph the engine replays for b requests.
    const double predicted = model.at_graph(static_cast<double>(b), static_cast<double>(s.engine.graph_batch(b)),
                                            static_cast<double>(context), offload ? 1.0 : 0.0,
                                            s.engine.exposed_host_request_time().value()).time;
    const double direct = measure_point(table_point_run(s, offload, b, context, s.serving->table.steps)).time;
    const double err = (predicted - direct) / direct;
    checks.worst = std::max(checks.worst, std::abs(err));
    checks.rows.push_back({{"batch_per_gpu", b}, {"context", context}, {"table_s", predicted}, {"direct_s", direct}, {"error", err}});
  }
  return checks;
}

}  // namespace

TableChecks check_tables(const Scenario& s, const ServingTables& tables) {
  TableChecks c;
  // In the order bench has always run them (each direct run shares SimGrid's clock with the next).
  if (s.serving->prefill.disaggregated()) c.prefill = prefill_checks(s, tables.prefill);
  if (s.serving->prefill.colocated()) c.chunks = chunk_checks(s, tables.model, tables.chunks);
  c.decode = decode_checks(s, tables.model);
  return c;
}

double table_points(const ServingTables& tables) {
  const auto points = [](const StepTable& t) { return static_cast<double>(t.points().size()); };
  double n = points(tables.model.gpu) + (tables.model.offload ? points(*tables.model.offload) : 0.0) + points(tables.prefill);
  for (const ChunkSlice& sl : tables.chunks.slices) n += points(sl.table) + 1.0;
  return n;
}

}  // namespace ess
