#include "sim/engine/simulation.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>

#include "sim/engine/platform.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/rng.h"

namespace ess {

namespace sg4 = simgrid::s4u;

namespace {

// SimGrid settings for analytic, calibratable transfer times (DESIGN.md section 7): CM02 without
// the TCP window limit or cross-traffic, so 1 GB over a 25 GB/s + 1 us link takes 0.040001 s.
const char* const kSimgridArgs[] = {
    "ess-sim",
    "--log=root.thres:critical",
    "--cfg=network/model:CM02",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
};

std::size_t idx(int i) { return static_cast<std::size_t>(i); }

// Builds step plans on first use and drops them once every GPU has finished them, so memory
// stays bounded however many steps run. Each step draws from its own random stream.
class PlanCache {
 public:
  PlanCache(const DecodeStepBuilder& builder, std::uint64_t seed, int gpus) : builder_(builder), rng_(seed), gpus_(gpus) {}

  const StepPlan& get(int step) {
    while (first_ + static_cast<int>(plans_.size()) <= step) {
      const int s = first_ + static_cast<int>(plans_.size());
      Rng rng = rng_.fork(static_cast<std::uint64_t>(s));
      plans_.push_back(Entry{builder_.build(s, rng), 0});
    }
    return plans_[idx(step - first_)].plan;
  }

  void done(int step) {
    ++plans_[idx(step - first_)].finished;
    while (!plans_.empty() && plans_.front().finished == gpus_) {
      plans_.pop_front();
      ++first_;
    }
  }

 private:
  struct Entry {
    StepPlan plan;
    int finished;
  };
  const DecodeStepBuilder& builder_;
  Rng rng_;
  int gpus_;
  int first_ = 0;
  std::deque<Entry> plans_;
};

// Shared by the GPU actors of one run (they run one at a time, so no locking).
struct RunState {
  const Scenario* scenario = nullptr;
  const DecodeStepBuilder* builder = nullptr;
  Platform platform;
  PlanCache* plans = nullptr;
  std::int64_t steps = 0;
  int trace_steps = 0;
  double t0 = 0.0;
  std::map<std::pair<int, int>, sg4::BarrierPtr> barriers;  // (kind, group) -> barrier
  RunResult* result = nullptr;
  std::vector<double> incoming_done;  // per GPU: when the last flow into it finished (per all-to-all)
  std::vector<TraceTrack> compute_track;
  std::vector<TraceTrack> collective_track;
  std::vector<TraceTrack> port_out_track;
  std::vector<TraceTrack> port_in_track;

  [[nodiscard]] double now() const { return sg4::Engine::get_clock() - t0; }
};

std::size_t layer_slot(const RunState& st, int layer) {
  // Embedding and head (layer -1) go to the last slot.
  return layer < 0 ? st.result->layers.size() - 1 : idx(layer);
}

void run_compute(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  const double start = st.now();
  if (seg.duration.value() > 0) {
    sg4::Exec::init()->set_flops_amount(seg.duration.value() * kGpuSpeed)->set_host(st.platform.gpus[idx(gpu)])->start()->wait();
    ++st.result->activities;
  }
  auto& layer = st.result->layers[layer_slot(st, seg.layer)];
  for (const Op& op : seg.ops) {
    times.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.flops += op.flops;
    layer.bytes += op.bytes;
  }
  if (!traced) return;
  const std::string name = seg.layer < 0 ? std::string(seg.label) : "L" + std::to_string(seg.layer) + " " + std::string(seg.label);
  st.result->trace.slice(st.compute_track[idx(gpu)], name, "segment", start, st.now() - start,
                         {{"layer", seg.layer}, {"ops", seg.ops.size()}});
  double t = start;
  for (const Op& op : seg.ops) {
    st.result->trace.slice(st.compute_track[idx(gpu)], std::string(op.name), std::string(to_string(op.category)), t,
                           op.time.value(), {{"flops", op.flops.value()}, {"bytes", op.bytes.value()}});
    t += op.time.value();
  }
}

void run_collective(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  const int kind = seg.kind == SegmentKind::alltoall ? 0 : 1;
  const auto& barrier = st.barriers.at({kind, seg.group});
  const double arrive = st.now();
  barrier->wait();  // a collective starts when every member has reached it
  const double start = st.now();
  double bytes_out = 0.0;
  double out_done = start;
  if (seg.kind == SegmentKind::alltoall) {
    std::vector<sg4::CommPtr> comms;
    std::vector<int> peers;
    for (std::size_t peer = 0; peer < seg.send_bytes.size(); ++peer) {
      if (peer == idx(gpu) || seg.send_bytes[peer] <= 0.0) continue;
      // Round up: a transfer never shrinks to nothing.
      const auto bytes = static_cast<std::uint64_t>(std::ceil(seg.send_bytes[peer]));
      comms.push_back(sg4::Comm::sendto_async(st.platform.gpus[idx(gpu)], st.platform.gpus[peer], bytes));
      peers.push_back(static_cast<int>(peer));
      bytes_out += seg.send_bytes[peer];
    }
    st.result->activities += comms.size();
    sg4::Comm::wait_all(comms);
    for (std::size_t i = 0; i < comms.size(); ++i) {
      const double finish = comms[i]->get_finish_time() - st.t0;
      out_done = std::max(out_done, finish);
      double& in = st.incoming_done[idx(peers[i])];
      in = std::max(in, finish);
    }
    barrier->wait();  // and ends when every member has sent and received everything
  } else {
    sg4::this_actor::sleep_for(seg.duration.value());
    ++st.result->activities;
  }
  const double end = st.now();
  times.wait += start - arrive;
  times.busy[static_cast<std::size_t>(OpCategory::collective)] += end - start;
  auto& layer = st.result->layers[layer_slot(st, seg.layer)];
  layer.wait += start - arrive;
  layer.busy[static_cast<std::size_t>(OpCategory::collective)] += end - start;
  if (!traced) return;
  const std::string label(seg.label);
  const std::string name = "L" + std::to_string(seg.layer) + " " + label;
  if (start > arrive) st.result->trace.slice(st.collective_track[idx(gpu)], "wait " + label, "idle", arrive, start - arrive);
  st.result->trace.slice(st.collective_track[idx(gpu)], name, "collectives", start, end - start,
                         {{"bytes_sent", bytes_out}});
  if (seg.kind == SegmentKind::alltoall) {
    if (bytes_out > 0) {
      st.result->trace.slice(st.port_out_track[idx(gpu)], name, "link", start, out_done - start, {{"bytes", bytes_out}});
    }
    const double in_done = st.incoming_done[idx(gpu)];
    if (in_done > start) st.result->trace.slice(st.port_in_track[idx(gpu)], name, "link", start, in_done - start);
  }
}

void gpu_main(RunState& st, int gpu) {
  for (int step = 0; step < st.steps; ++step) {
    const StepPlan& plan = st.plans->get(step);
    auto& times = st.result->gpu_steps[idx(step)][idx(gpu)];
    times.start = st.now();
    const bool traced = step < st.trace_steps;
    for (const Segment& seg : plan.gpus[idx(gpu)].segments) {
      if (seg.kind == SegmentKind::compute) {
        run_compute(st, gpu, seg, times, traced);
      } else {
        if (seg.kind == SegmentKind::alltoall) st.incoming_done[idx(gpu)] = 0.0;
        run_collective(st, gpu, seg, times, traced);
      }
    }
    times.end = st.now();
    if (gpu == 0) st.result->step_context[idx(step)] = plan.context;
    st.plans->done(step);
  }
}

}  // namespace

Simulation::Simulation(const Scenario& scenario, SimulationOptions options) : scenario_(scenario), options_(options) {
  if (options_.steps < 0) throw std::invalid_argument("Simulation: steps must be >= 0");
  if (options_.trace_steps < 0) throw std::invalid_argument("Simulation: trace_steps must be >= 0");
}

RunResult Simulation::run() {
  if (ran_) throw std::logic_error("Simulation::run called twice");
  ran_ = true;

  RunResult result;
  result.batch_per_gpu = resolve_batch(scenario_);
  result.memory = plan_memory(scenario_, result.batch_per_gpu);
  const DecodeStepBuilder builder(scenario_, result.batch_per_gpu);
  result.gpus = builder.gpus();
  result.steps = options_.steps > 0 ? options_.steps : scenario_.workload.decode_steps;
  result.step_context.assign(idx(static_cast<int>(result.steps)), 0);
  result.gpu_steps.assign(idx(static_cast<int>(result.steps)), std::vector<GpuStepTimes>(idx(result.gpus)));
  for (int l = 0; l < builder.layer_count(); ++l) result.layers.push_back(LayerTimes{std::string(builder.layer_kind(l)), {}, 0.0, {}, {}});
  result.layers.push_back(LayerTimes{"head", {}, 0.0, {}, {}});

  int argc = static_cast<int>(std::size(kSimgridArgs));
  std::vector<char*> argv;
  std::vector<std::string> storage(std::begin(kSimgridArgs), std::end(kSimgridArgs));
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  sg4::Engine engine(&argc, argv.data());

  PlanCache plans(builder, scenario_.seed, result.gpus);
  RunState st;
  st.scenario = &scenario_;
  st.builder = &builder;
  st.platform = build_platform(scenario_.hardware);
  st.plans = &plans;
  st.steps = result.steps;
  st.trace_steps = options_.trace_steps;
  st.t0 = sg4::Engine::get_clock();
  st.result = &result;
  st.incoming_done.assign(idx(result.gpus), 0.0);
  const int tp = scenario_.parallelism.tensor_parallel;
  const int ep = scenario_.parallelism.expert_parallel;
  for (int g = 0; g < result.gpus / ep; ++g) st.barriers[{0, g}] = sg4::Barrier::create(static_cast<unsigned>(ep));
  for (int g = 0; g < result.gpus / tp; ++g) st.barriers[{1, g}] = sg4::Barrier::create(static_cast<unsigned>(tp));
  for (int g = 0; g < result.gpus; ++g) {
    const std::string gpu = "GPU " + std::to_string(g);
    st.compute_track.push_back(result.trace.track(gpu, "compute stream"));
    st.collective_track.push_back(result.trace.track(gpu, "collectives"));
  }
  for (int g = 0; g < result.gpus; ++g) {
    st.port_out_track.push_back(result.trace.track("NVSwitch ports", "GPU " + std::to_string(g) + " out"));
    st.port_in_track.push_back(result.trace.track("NVSwitch ports", "GPU " + std::to_string(g) + " in"));
  }
  for (int g = 0; g < result.gpus; ++g) {
    sg4::Actor::create("gpu" + std::to_string(g), st.platform.gpus[idx(g)], [&st, g] { gpu_main(st, g); });
  }
  engine.run();

  for (std::size_t s = 0; s < result.gpu_steps.size(); ++s) {
    double end = 0.0;
    for (const auto& g : result.gpu_steps[s]) end = std::max(end, g.end);
    double previous = 0.0;
    if (s > 0) {
      for (const auto& g : result.gpu_steps[s - 1]) previous = std::max(previous, g.end);
    }
    result.step_time.push_back(end - previous);
  }
  return result;
}

}  // namespace ess
