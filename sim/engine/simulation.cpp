#include "sim/engine/simulation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include "sim/engine/access_store.h"
#include "sim/engine/platform.h"
#include "sim/engine/step_plans.h"
#include "sim/graph/decode_step.h"
#include "sim/graph/rng.h"
#include "sim/offload/access_trace.h"
#include "sim/offload/cache_sim.h"
#include "sim/offload/synthetic_access.h"
#include "models/copy.h"

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
  std::vector<TraceTrack> compute_track;
  std::vector<TraceTrack> collective_track;
  std::vector<TraceTrack> port_out_track;
  std::vector<TraceTrack> port_in_track;
  std::vector<TraceTrack> pcie_h2d_track;
  std::vector<TraceTrack> pcie_d2h_track;
  // Per GPU, two transfer engines (actors that run one transfer at a time, in order): miss fetches
  // (host->device) and write-backs (device->host).
  struct TransferJob {
    const Transfer* transfer = nullptr;
    int layer = -1;
    double start = 0.0;  // when the engine began moving it (it may have queued behind others)
    double end = 0.0;
    sg4::SemaphorePtr done;
  };
  struct TransferEngine {
    std::deque<TransferJob*> queue;
    sg4::SemaphorePtr work;
  };
  std::vector<TransferEngine> fetch_engines;
  std::vector<TransferEngine> writeback_engines;
  std::vector<std::deque<RunState::TransferJob>> writebacks;  // per GPU: write-backs of the current step
  // Two-batch overlap: per GPU and micro-batch, a communication engine (an actor running that
  // lane's collectives one at a time, in order, beside the compute stream) and this step's jobs.
  struct CommJob {
    const Segment* segment = nullptr;
    GpuStepTimes* times = nullptr;
    bool traced = false;
    sg4::SemaphorePtr done;
  };
  struct CommEngine {
    std::deque<CommJob*> queue;
    sg4::SemaphorePtr work;
    std::deque<CommJob> jobs;  // submitted this step, in order
    std::size_t waited = 0;    // how many of them the compute stream has waited for
  };
  std::vector<std::array<CommEngine, 2>> comm_engines;
  std::vector<TraceTrack> collective_track_mb1;  // micro-batch 1's collectives

  // Per GPU: compute time run ahead of SimGrid's clock (see run_compute), and the transfers in
  // flight on its transfer engines (while any is, a gather may hold SMs and compute runs in SimGrid).
  struct GpuClock {
    double pending = 0.0;
    int in_flight = 0;
  };
  std::vector<GpuClock> clocks;
  // All-to-all port flows alone on their links (one collective at a time per GPU): timed
  // analytically as SimGrid would, latency + bytes / bandwidth, without starting flows.
  bool analytic_ports = false;
  bool ahead = true;  // compute may run ahead of SimGrid's clock (SimulationOptions::fast_paths)
  double nvs_latency = 0.0;
  double nvs_bandwidth = 0.0;
  double nic_latency = 0.0;
  double nic_bandwidth = 0.0;

  // The first error raised inside an actor. SimGrid aborts the process on an exception that
  // leaves an actor, so actors catch, record it here, stop every other actor, and run() rethrows
  // it once the engine has returned.
  std::exception_ptr error;
  int finished_gpus = 0;  // GPU actors that ran every step (a deadlock leaves some short)

  [[nodiscard]] double now() const { return sg4::Engine::get_clock() - t0; }
};

// Runs an actor's body; an exception ends the whole simulation and is rethrown by run().
// simgrid::ForcefulKillException (how SimGrid unwinds a killed actor) is not a std::exception and
// passes through untouched.
template <typename Body>
void guarded(RunState& st, Body&& body) {
  try {
    body();
  } catch (const std::exception&) {
    if (!st.error) st.error = std::current_exception();
    sg4::Actor::kill_all();
  }
}

// Brings SimGrid's clock to the GPU's own: one sleep for the compute run ahead of it.
void flush(RunState& st, int gpu) {
  auto& clock = st.clocks[idx(gpu)];
  if (clock.pending <= 0.0) return;
  const double pending = clock.pending;
  clock.pending = 0.0;
  sg4::this_actor::sleep_for(pending);
  ++st.result->activities;
}

std::size_t layer_slot(const RunState& st, int layer) {
  // Embedding and head (layer -1) go to the last slot.
  return layer < 0 ? st.result->layers.size() - 1 : idx(layer);
}

// A compute segment. While no transfer of this GPU is in flight, nothing can share its SMs, so the
// segment takes exactly its duration: it is added to the GPU's clock without a SimGrid activity, and
// the clock is brought level (flush) before the next interaction (a transfer, a collective, the
// end of the step). Otherwise it runs as an Exec beside the gathers holding part of the SMs.
void run_compute(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  auto& clock = st.clocks[idx(gpu)];
  const bool ahead = st.ahead && clock.in_flight == 0;
  if (!ahead) flush(st, gpu);
  const double start = st.now() + clock.pending;
  if (seg.duration.value() > 0) {
    if (ahead) {
      clock.pending += seg.duration.value();
    } else {
      sg4::Exec::init()->set_flops_amount(seg.duration.value() * kGpuSpeed)->set_host(st.platform.gpus[idx(gpu)])->start()->wait();
      ++st.result->activities;
    }
  }
  const double elapsed = ahead ? seg.duration.value() : st.now() - start;
  auto& layer = st.result->layers[layer_slot(st, seg.layer)];
  for (const Op& op : seg.ops) {
    times.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.flops += op.flops;
    layer.bytes += op.bytes;
  }
  // Kernels run slower while a gather kernel (a write-back) holds part of the SMs.
  const double lost = std::max(0.0, elapsed - seg.duration.value());
  times.busy[static_cast<std::size_t>(OpCategory::transfer)] += lost;
  times.lost_to_gather += lost;
  layer.busy[static_cast<std::size_t>(OpCategory::transfer)] += lost;
  layer.lost_to_gather += lost;
  if (!traced) return;
  const std::string name = seg.layer < 0 ? std::string(seg.label) : "L" + std::to_string(seg.layer) + " " + std::string(seg.label);
  st.result->trace.slice(st.compute_track[idx(gpu)], name, "segment", start, elapsed,
                         {{"layer", seg.layer}, {"ops", seg.ops.size()}});
  double t = start;
  for (const Op& op : seg.ops) {
    st.result->trace.slice(st.compute_track[idx(gpu)], std::string(op.name), std::string(to_string(op.category)), t,
                           op.time.value(), {{"flops", op.flops.value()}, {"bytes", op.bytes.value()}});
    t += op.time.value();
  }
}

// When one collective of one GPU ran: arrival, start (every member arrived), end, and for an
// all-to-all what its port flows moved.
struct CollectiveRun {
  double arrive = 0.0;
  double start = 0.0;
  double end = 0.0;
  double bytes_out = 0.0;
  double out_done = 0.0;
  double in_done = 0.0;
};

// Barrier key of a collective: its kind and micro-batch (each lane synchronises on its own).
int barrier_kind(const Segment& seg) { return (seg.kind == SegmentKind::alltoall ? 0 : 1) + 2 * seg.lane; }

CollectiveRun do_collective(RunState& st, int gpu, const Segment& seg) {
  CollectiveRun c;
  const auto& barrier = st.barriers.at({barrier_kind(seg), seg.group});
  c.arrive = st.now();
  barrier->wait();  // a collective starts when every member has reached it
  c.start = st.now();
  c.out_done = c.start;
  c.in_done = c.start;
  if (seg.kind == SegmentKind::alltoall) {
    // What this GPU sends to and receives from its own node and from other nodes, each carried by
    // one flow through its NVSwitch port or its NIC (see platform.h).
    const int per_node = st.scenario->hardware.gpu.count;
    double out_local = 0.0;
    double out_remote = 0.0;
    double in_local = 0.0;
    double in_remote = 0.0;
    const std::size_t group_start = idx(seg.group) * seg.send_bytes.size();
    for (std::size_t i = 0; i < seg.send_bytes.size(); ++i) {
      const std::size_t peer = group_start + i;
      if (peer == idx(gpu)) continue;
      const bool local = static_cast<int>(peer) / per_node == gpu / per_node;
      (local ? out_local : out_remote) += seg.send_bytes[i];
      (local ? in_local : in_remote) += seg.recv_bytes[i];
    }
    // Round up: a transfer never shrinks to nothing.
    const auto bytes = [](double b) { return static_cast<std::uint64_t>(std::ceil(b)); };
    c.bytes_out = out_local + out_remote;
    if (st.analytic_ports) {
      // Each flow alone on its port link: latency + bytes / bandwidth, the up and down flows at once.
      const auto flow = [&](double b, double latency, double bandwidth) {
        return b > 0 ? latency + static_cast<double>(bytes(b)) / bandwidth : 0.0;
      };
      const double out_s = std::max(flow(out_local, st.nvs_latency, st.nvs_bandwidth),
                                    flow(out_remote, st.nic_latency, st.nic_bandwidth));
      const double in_s = std::max(flow(in_local, st.nvs_latency, st.nvs_bandwidth),
                                   flow(in_remote, st.nic_latency, st.nic_bandwidth));
      const double span = std::max(out_s, in_s);
      if (span > 0) {
        sg4::this_actor::sleep_for(span);
        ++st.result->activities;
      }
      c.out_done = c.start + out_s;
      c.in_done = c.start + in_s;
      c.end = st.now();
      return c;
    }
    sg4::Host* self = st.platform.gpus[idx(gpu)];
    sg4::Host* nvswitch = st.platform.nvswitch[idx(gpu / per_node)];
    std::vector<sg4::CommPtr> out;
    std::vector<sg4::CommPtr> in;
    if (out_local > 0) out.push_back(sg4::Comm::sendto_async(self, nvswitch, bytes(out_local)));
    if (out_remote > 0) out.push_back(sg4::Comm::sendto_async(self, st.platform.network, bytes(out_remote)));
    if (in_local > 0) in.push_back(sg4::Comm::sendto_async(nvswitch, self, bytes(in_local)));
    if (in_remote > 0) in.push_back(sg4::Comm::sendto_async(st.platform.network, self, bytes(in_remote)));
    st.result->activities += out.size() + in.size();
    sg4::Comm::wait_all(out);
    sg4::Comm::wait_all(in);
    for (const auto& f : out) c.out_done = std::max(c.out_done, f->get_finish_time() - st.t0);
    for (const auto& f : in) c.in_done = std::max(c.in_done, f->get_finish_time() - st.t0);
  } else {
    sg4::this_actor::sleep_for(seg.duration.value());
    ++st.result->activities;
  }
  c.end = st.now();
  return c;
}

void trace_collective(RunState& st, int gpu, const Segment& seg, const CollectiveRun& c, TraceTrack track) {
  const std::string label(seg.label);
  const std::string name = "L" + std::to_string(seg.layer) + " " + label + (seg.lane > 0 ? " (mb1)" : "");
  if (c.start > c.arrive) st.result->trace.slice(track, "wait " + label, "idle", c.arrive, c.start - c.arrive);
  st.result->trace.slice(track, name, "collectives", c.start, c.end - c.start, {{"bytes_sent", c.bytes_out}});
  if (seg.kind == SegmentKind::alltoall) {
    if (c.bytes_out > 0) {
      st.result->trace.slice(st.port_out_track[idx(gpu)], name, "link", c.start, c.out_done - c.start, {{"bytes", c.bytes_out}});
    }
    if (c.in_done > c.start) st.result->trace.slice(st.port_in_track[idx(gpu)], name, "link", c.start, c.in_done - c.start);
  }
}

// A collective on the compute stream (one micro-batch): the GPU waits for all of it.
void run_collective(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  flush(st, gpu);
  const CollectiveRun c = do_collective(st, gpu, seg);
  times.wait += c.start - c.arrive;
  times.busy[static_cast<std::size_t>(OpCategory::collective)] += c.end - c.start;
  times.comm += c.end - c.arrive;
  times.comm_exposed += c.end - c.arrive;
  auto& layer = st.result->layers[layer_slot(st, seg.layer)];
  layer.wait += c.start - c.arrive;
  layer.busy[static_cast<std::size_t>(OpCategory::collective)] += c.end - c.start;
  if (traced) trace_collective(st, gpu, seg, c, st.collective_track[idx(gpu)]);
}

// Moves `t` between the GPU and its CPU socket as the scenario's transfer path does. A gather is a
// kernel: a flow through a link capped at the gather rate, plus a bounded Exec holding its share of the SMs for as
// long as the flow runs (compute beside it slows down). A copy pays one call overhead per run on
// the host before the DMA flow. NVMe-resident bytes are read first. Returns when the data has moved.
void transfer(RunState& st, int gpu, const Transfer& t) {
  const auto& hw = st.scenario->hardware;
  sg4::Host* g = st.platform.gpus[idx(gpu)];
  sg4::Host* cpu = st.platform.gpu_socket[idx(gpu)];
  const auto& nvme = st.scenario->cache.nvme;
  if (t.nvme_bytes > 0 && nvme) {
    sg4::this_actor::sleep_for((nvme->latency + Bytes(t.nvme_bytes) / nvme->bandwidth).value());
    ++st.result->activities;
  }
  const auto bytes = static_cast<std::uint64_t>(std::ceil(t.bytes));
  // A gather ends on the GPU's SMs (a route capped at the gather rate); a copy on the GPU itself.
  sg4::Host* device = t.gather ? st.platform.gpu_gather[idx(gpu)] : g;
  sg4::CommPtr comm = t.h2d ? sg4::Comm::sendto_init(cpu, device) : sg4::Comm::sendto_init(device, cpu);
  comm->set_payload_size(bytes);
  sg4::ExecPtr sm;
  if (t.gather) {
    if (hw.pcie.gather_sm_fraction > 0) {
      // Never finishes on its own: cancelled when the flow completes.
      sm = sg4::Exec::init()->set_flops_amount(1e300)->set_bound(hw.pcie.gather_sm_fraction * kGpuSpeed)->set_host(g);
      sm->start();
      ++st.result->activities;
    }
  } else {
    const Seconds overhead = t.h2d ? hw.pcie.h2d_call_overhead : hw.pcie.d2h_call_overhead;
    sg4::this_actor::sleep_for(overhead.value() * std::max(1.0, std::round(t.runs)));
    ++st.result->activities;
  }
  comm->start();
  ++st.result->activities;
  comm->wait();
  if (sm) sm->cancel();
}

// The loop of one transfer engine: take the next job, move its data, signal it done. A daemon:
// it ends with the simulation.
void transfer_engine(RunState& st, int gpu, RunState::TransferEngine& engine) {
  while (true) {
    engine.work->acquire();
    RunState::TransferJob* job = engine.queue.front();
    engine.queue.pop_front();
    job->start = st.now();
    transfer(st, gpu, *job->transfer);
    job->end = st.now();
    --st.clocks[idx(gpu)].in_flight;
    job->done->release();
  }
}

void submit(RunState& st, int gpu, RunState::TransferEngine& engine, RunState::TransferJob& job, const Transfer& t) {
  ++st.clocks[idx(gpu)].in_flight;
  job.transfer = &t;
  job.done = sg4::Semaphore::create(0);
  engine.queue.push_back(&job);
  engine.work->release();
}

void run_stage(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  flush(st, gpu);
  const double start = st.now();
  RunState::TransferJob job;
  submit(st, gpu, st.fetch_engines[idx(gpu)], job, seg.transfer);
  if (seg.duration.value() > 0) {
    sg4::Exec::init()->set_flops_amount(seg.duration.value() * kGpuSpeed)->set_host(st.platform.gpus[idx(gpu)])->start()->wait();
    ++st.result->activities;
  }
  const double compute_end = st.now();
  job.done->acquire();
  const double end = st.now();
  const double transfer_end = job.end;
  const double lost = std::max(0.0, compute_end - start - seg.duration.value());
  const double exposed = end - compute_end;
  times.busy[static_cast<std::size_t>(OpCategory::transfer)] += lost + exposed;
  times.transfer += transfer_end - job.start;
  times.exposed += exposed;
  times.lost_to_gather += lost;
  auto& layer = st.result->layers[layer_slot(st, seg.layer)];
  layer.busy[static_cast<std::size_t>(OpCategory::transfer)] += lost + exposed;
  layer.transfer += transfer_end - job.start;
  layer.exposed += exposed;
  layer.lost_to_gather += lost;
  for (const Op& op : seg.ops) {
    times.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.busy[static_cast<std::size_t>(op.category)] += op.time.value();
    layer.flops += op.flops;
    layer.bytes += op.bytes;
  }
  if (!traced) return;
  const std::string name = "L" + std::to_string(seg.layer) + " " + std::string(seg.label);
  st.result->trace.slice(st.pcie_h2d_track[idx(gpu)], name, "transfer", job.start, transfer_end - job.start,
                         {{"bytes", seg.transfer.bytes}, {"path", seg.transfer.gather ? "gather" : "copy"}});
  if (compute_end > start) {
    st.result->trace.slice(st.compute_track[idx(gpu)], name, "segment", start, compute_end - start,
                           {{"layer", seg.layer}, {"ops", seg.ops.size()}, {"lost_to_gather_s", lost}});
    double t = start;
    const double stretch = seg.duration.value() > 0 ? (compute_end - start) / seg.duration.value() : 1.0;
    for (const Op& op : seg.ops) {
      st.result->trace.slice(st.compute_track[idx(gpu)], std::string(op.name), std::string(to_string(op.category)), t,
                             op.time.value() * stretch);
      t += op.time.value() * stretch;
    }
  }
  if (exposed > 0) st.result->trace.slice(st.compute_track[idx(gpu)], "wait fetch", "exposed", compute_end, exposed);
}

void start_writeback(RunState& st, int gpu, const Segment& seg) {
  flush(st, gpu);
  auto& jobs = st.writebacks[idx(gpu)];
  jobs.emplace_back();
  jobs.back().layer = seg.layer;
  submit(st, gpu, st.writeback_engines[idx(gpu)], jobs.back(), seg.transfer);
}

// One non-collective segment on the compute stream.
void run_work(RunState& st, int gpu, const Segment& seg, GpuStepTimes& times, bool traced) {
  switch (seg.kind) {
    case SegmentKind::compute: run_compute(st, gpu, seg, times, traced); break;
    case SegmentKind::stage: run_stage(st, gpu, seg, times, traced); break;
    case SegmentKind::writeback: start_writeback(st, gpu, seg); break;
    case SegmentKind::alltoall:
    case SegmentKind::allreduce: run_collective(st, gpu, seg, times, traced); break;
  }
}

// The loop of one micro-batch's communication engine (a daemon: it ends with the simulation).
void comm_engine(RunState& st, int gpu, int lane) {
  auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
  while (true) {
    engine.work->acquire();
    RunState::CommJob* job = engine.queue.front();
    engine.queue.pop_front();
    const CollectiveRun c = do_collective(st, gpu, *job->segment);
    job->times->comm += c.end - c.arrive;
    if (job->traced) {
      trace_collective(st, gpu, *job->segment, c, lane == 0 ? st.collective_track[idx(gpu)] : st.collective_track_mb1[idx(gpu)]);
    }
    job->done->release();
  }
}

// The compute stream waits for every collective micro-batch `lane` has in flight; the wait is
// exposed communication (category collectives, on the layer of the last collective waited for).
void wait_lane(RunState& st, int gpu, int lane, GpuStepTimes& times, bool traced) {
  flush(st, gpu);
  auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
  const double from = st.now();
  const Segment* last = nullptr;
  while (engine.waited < engine.jobs.size()) {
    auto& job = engine.jobs[engine.waited++];
    job.done->acquire();
    last = job.segment;
  }
  const double stalled = st.now() - from;
  if (last == nullptr || stalled <= 0) return;
  times.busy[static_cast<std::size_t>(OpCategory::collective)] += stalled;
  times.comm_exposed += stalled;
  st.result->layers[layer_slot(st, last->layer)].busy[static_cast<std::size_t>(OpCategory::collective)] += stalled;
  if (traced) {
    st.result->trace.slice(st.compute_track[idx(gpu)], "wait " + std::string(last->label) + (lane > 0 ? " (mb1)" : ""),
                           "exposed", from, stalled, {{"layer", last->layer}});
  }
}

// Two-batch overlap on one GPU. Each micro-batch's segments split into phases, each the work
// between two of its collectives. The compute stream runs phase i of micro-batch 0, then phase i of
// micro-batch 1, then phase i + 1 of micro-batch 0, ...; before a phase it waits for the
// micro-batch's collectives in flight, and the collectives that end a phase go to the
// micro-batch's communication engine, so one's all-to-all runs while the other computes. The
// all-to-all holds no SMs (DeepEP's low-latency kernels, whose RDMA needs none while in flight).
void run_lanes(RunState& st, int gpu, const std::vector<Segment>& segments, GpuStepTimes& times, bool traced) {
  struct Phase {
    std::vector<const Segment*> work;
    std::vector<const Segment*> comms;  // the collectives that end it
  };
  std::array<std::vector<Phase>, 2> lanes;
  for (const Segment& seg : segments) {
    auto& phases = lanes[idx(seg.lane)];
    const bool collective = seg.kind == SegmentKind::alltoall || seg.kind == SegmentKind::allreduce;
    if (phases.empty() || (!collective && !phases.back().comms.empty())) phases.emplace_back();
    (collective ? phases.back().comms : phases.back().work).push_back(&seg);
  }
  const std::size_t rounds = std::max(lanes[0].size(), lanes[1].size());
  for (std::size_t i = 0; i < rounds; ++i) {
    for (int lane = 0; lane < 2; ++lane) {
      if (i >= lanes[idx(lane)].size()) continue;
      wait_lane(st, gpu, lane, times, traced);
      const Phase& phase = lanes[idx(lane)][i];
      for (const Segment* seg : phase.work) run_work(st, gpu, *seg, times, traced);
      auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
      if (!phase.comms.empty()) flush(st, gpu);
      for (const Segment* seg : phase.comms) {
        auto& job = engine.jobs.emplace_back();
        job.segment = seg;
        job.times = &times;
        job.traced = traced;
        job.done = sg4::Semaphore::create(0);
        engine.queue.push_back(&job);
        engine.work->release();
      }
    }
  }
  for (int lane = 0; lane < 2; ++lane) {
    wait_lane(st, gpu, lane, times, traced);
    auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
    engine.jobs.clear();
    engine.waited = 0;
  }
}

void gpu_main(RunState& st, int gpu) {
  for (int step = 0; step < st.steps; ++step) {
    const StepPlan& plan = st.plans->get(step);
    auto& times = st.result->gpu_steps[idx(step)][idx(gpu)];
    times.start = st.now();
    const bool traced = step < st.trace_steps;
    if (st.scenario->execution.micro_batches == 2) {
      run_lanes(st, gpu, plan.gpus[idx(gpu)].segments, times, traced);
    } else {
      for (const Segment& seg : plan.gpus[idx(gpu)].segments) run_work(st, gpu, seg, times, traced);
    }
    // A step ends when its write-backs have reached host memory (the next step may select them).
    flush(st, gpu);
    const double drain = st.now();
    for (auto& job : st.writebacks[idx(gpu)]) {
      job.done->acquire();
      if (traced) {
        st.result->trace.slice(st.pcie_d2h_track[idx(gpu)], "L" + std::to_string(job.layer) + " writeback", "transfer",
                               job.start, job.end - job.start, {{"bytes", job.transfer->bytes}});
      }
    }
    st.writebacks[idx(gpu)].clear();
    times.writeback_wait = st.now() - drain;
    times.busy[static_cast<std::size_t>(OpCategory::transfer)] += times.writeback_wait;
    times.end = st.now();
    if (gpu == 0 && !plan.offload.empty()) {
      for (std::size_t l = 0; l < plan.offload.size(); ++l) {
        const auto& o = plan.offload[l];
        auto& layer = st.result->layers[l];
        layer.misses += o.access.misses;
        layer.misses_var += o.access.misses_stderr * o.access.misses_stderr;
        layer.hits += o.access.hits;
        layer.overlap_steps[static_cast<std::size_t>(o.overlap)] += 1;
        st.result->step_h2d_bytes[idx(step)] += o.h2d_bytes * st.result->gpus;
        st.result->step_d2h_bytes[idx(step)] += o.d2h_bytes * st.result->gpus;
      }
    }
    if (!plan.offload.empty()) {
      for (std::size_t l = 0; l < plan.offload.size(); ++l) {
        st.result->layers[l].h2d_bytes += plan.offload[l].h2d_bytes;
        st.result->layers[l].d2h_bytes += plan.offload[l].d2h_bytes;
      }
    }
    if (gpu == 0) st.result->step_context[idx(step)] = plan.context;
    st.plans->done(step);
  }
  ++st.finished_gpus;
}

// Every input of the cache simulation (see access_store.h), and the binary that computes it (its
// size and modification time: a rebuilt binary never reads another's results).
std::string access_store_key(const CacheSimConfig& c, const SyntheticAccessParams& p, const DecodeStepBuilder& builder,
                             std::int64_t steps) {
  nlohmann::json k;
  struct stat self{};
  if (::stat("/proc/self/exe", &self) == 0) {
    k["binary"] = {static_cast<long long>(self.st_size), static_cast<long long>(self.st_mtime)};
  }
  k["pools"] = {c.layers, c.top_k, c.sampled_requests, c.warmup_windows, c.capacity_ratio, c.capacity_entries,
                c.pinned_recent, c.policy, c.heat_decay};
  k["synthetic"] = {p.layers, p.top_k, p.recent_window, p.distance_exponent, p.seed, p.retention, p.prefill_retention};
  std::vector<std::int64_t> contexts;
  for (int step = 0; step < steps; ++step) contexts.push_back(builder.context_at(step));
  k["contexts"] = contexts;
  return k.dump();
}

}  // namespace

std::uint64_t synthetic_access_seed(std::uint64_t scenario_seed) {
  // Random stream of the synthetic access model, separate from the MoE routing streams.
  constexpr std::uint64_t kAccessStream = 0xACCE55;
  return Rng(scenario_seed).fork(kAccessStream).next();
}

Simulation::Simulation(const Scenario& scenario, SimulationOptions options) : scenario_(scenario), options_(options) {
  if (options_.steps < 0) throw std::invalid_argument("Simulation: steps must be >= 0");
  if (options_.trace_steps < 0) throw std::invalid_argument("Simulation: trace_steps must be >= 0");
}

RunResult Simulation::run() {
  if (ran_) throw std::logic_error("Simulation::run called twice");
  ran_ = true;

  Preflight checked = preflight(scenario_, options_.steps, options_.trace_steps, options_.limits);
  RunResult result;
  result.batch_per_gpu = checked.batch_per_gpu;
  result.memory = std::move(checked.memory);
  result.offload = scenario_.cache.mode == CacheMode::offload;
  const auto& placement = result.memory.placement;
  const DecodeStepBuilder builder(scenario_, result.batch_per_gpu, result.offload ? placement.offloaded : 0,
                                  placement.cold_fraction);
  result.gpus = builder.gpus();
  result.steps = checked.steps;
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

  result.step_h2d_bytes.assign(idx(static_cast<int>(result.steps)), 0.0);
  result.step_d2h_bytes.assign(idx(static_cast<int>(result.steps)), 0.0);
  // Offload: the index-level cache simulation over a sample of requests feeds each step's plan.
  std::unique_ptr<AccessModel> access_model;
  std::unique_ptr<CacheSimulator> cache_sim;
  std::unique_ptr<AccessPipeline> pipeline;
  PlanCache::AccessSource access;
  std::string store_key;                 // the access store's key ("" when not used)
  std::optional<AccessSteps> stored;     // read from the store
  AccessSteps computed;                  // to write to it
  if (result.offload) {
    const auto& c = scenario_.cache;
    const std::int64_t top_k = scenario_.model.indexer->top_k;
    if (c.access.model == "replay") {
      access_model = std::move(checked.replay);  // loaded and checked against this run by preflight()
    } else {
      SyntheticAccessParams params;
      params.layers = builder.layer_count();
      params.top_k = top_k;
      params.seed = synthetic_access_seed(scenario_.seed);
      access_model = std::make_unique<SyntheticAccess>(params);
    }
    CacheSimConfig cc;
    cc.layers = builder.layer_count();
    cc.top_k = top_k;
    cc.sampled_requests = static_cast<int>(c.sampled_requests);
    cc.warmup_windows = static_cast<int>(c.warmup_windows);
    if (c.pool_ratio) cc.capacity_ratio = *c.pool_ratio;
    if (c.pool_entries) cc.capacity_entries = *c.pool_entries;
    cc.pinned_recent = c.pinned_recent;
    cc.policy = c.eviction;
    cc.heat_decay = c.heat_decay;
    if (!options_.access_store.empty() && c.access.model != "replay") {
      const auto& synthetic = static_cast<const SyntheticAccess&>(*access_model);
      store_key = access_store_key(cc, synthetic.params(), builder, result.steps);
      stored = load_access_steps(options_.access_store, store_key, static_cast<std::size_t>(result.steps),
                                 static_cast<std::size_t>(builder.layer_count()));
    }
    if (stored) {
      access = [&stored](int step, std::int64_t) { return (*stored)[static_cast<std::size_t>(step)]; };
    } else {
      cache_sim = std::make_unique<CacheSimulator>(cc, *access_model);
      pipeline = std::make_unique<AccessPipeline>(*cache_sim, builder, result.steps);
      access = [&pipeline, &computed, &store_key](int step, std::int64_t) {
        auto layers = pipeline->next(step);
        if (!store_key.empty()) computed.push_back(layers);
        return layers;
      };
    }
  }
  PlanCache plans(builder, scenario_.seed, result.gpus, access);
  RunState st;
  st.scenario = &scenario_;
  st.builder = &builder;
  st.platform = build_platform(scenario_.hardware);
  st.plans = &plans;
  st.steps = result.steps;
  st.trace_steps = options_.trace_steps;
  st.t0 = sg4::Engine::get_clock();
  st.result = &result;
  const int tp = scenario_.parallelism.tensor_parallel;
  const int ep = scenario_.parallelism.expert_parallel;
  const int lanes = scenario_.execution.micro_batches;
  for (int lane = 0; lane < lanes; ++lane) {
    for (int g = 0; g < result.gpus / ep; ++g) st.barriers[{0 + 2 * lane, g}] = sg4::Barrier::create(static_cast<unsigned>(ep));
    for (int g = 0; g < result.gpus / tp; ++g) st.barriers[{1 + 2 * lane, g}] = sg4::Barrier::create(static_cast<unsigned>(tp));
  }
  for (int g = 0; g < result.gpus; ++g) {
    const std::string gpu = "GPU " + std::to_string(g);
    st.compute_track.push_back(result.trace.track(gpu, "compute stream"));
    st.collective_track.push_back(result.trace.track(gpu, lanes == 2 ? "collectives (micro-batch 0)" : "collectives"));
    if (lanes == 2) st.collective_track_mb1.push_back(result.trace.track(gpu, "collectives (micro-batch 1)"));
  }
  st.comm_engines.resize(idx(result.gpus));
  st.clocks.resize(idx(result.gpus));
  // With one micro-batch a GPU runs one collective at a time, so its port flows are alone on their
  // links (platform.h); two micro-batches may overlap two collectives on one port: SimGrid shares it.
  st.analytic_ports = lanes == 1 && options_.fast_paths;
  st.ahead = options_.fast_paths;
  st.nvs_latency = alltoall_intranode_latency(scenario_.hardware).value();
  st.nvs_bandwidth = alltoall_intranode_bandwidth(scenario_.hardware).value();
  st.nic_latency = alltoall_internode_latency(scenario_.hardware).value();
  st.nic_bandwidth = alltoall_internode_bandwidth(scenario_.hardware).value();
  st.writebacks.resize(idx(result.gpus));
  st.fetch_engines.resize(idx(result.gpus));
  st.writeback_engines.resize(idx(result.gpus));
  if (result.offload) {
    for (int g = 0; g < result.gpus; ++g) {
      st.pcie_h2d_track.push_back(result.trace.track("PCIe links", "GPU " + std::to_string(g) + " h2d"));
      st.pcie_d2h_track.push_back(result.trace.track("PCIe links", "GPU " + std::to_string(g) + " d2h"));
    }
  }
  for (int g = 0; g < result.gpus; ++g) {
    st.port_out_track.push_back(result.trace.track("NVSwitch ports", "GPU " + std::to_string(g) + " out"));
    st.port_in_track.push_back(result.trace.track("NVSwitch ports", "GPU " + std::to_string(g) + " in"));
  }
  for (int g = 0; g < result.gpus; ++g) {
    sg4::Actor::create("gpu" + std::to_string(g), st.platform.gpus[idx(g)],
                       [&st, g] { guarded(st, [&st, g] { gpu_main(st, g); }); });
    if (lanes == 2) {
      for (int lane = 0; lane < 2; ++lane) {
        st.comm_engines[idx(g)][idx(lane)].work = sg4::Semaphore::create(0);
        sg4::Actor::create("comm" + std::to_string(lane), st.platform.gpus[idx(g)],
                           [&st, g, lane] { guarded(st, [&st, g, lane] { comm_engine(st, g, lane); }); })
            ->daemonize();
      }
    }
    if (result.offload) {
      for (auto* engines : {&st.fetch_engines, &st.writeback_engines}) {
        auto& transfers = (*engines)[idx(g)];
        transfers.work = sg4::Semaphore::create(0);
        sg4::Actor::create("transfers", st.platform.gpu_socket[idx(g)], [&st, g, &transfers] { guarded(st, [&] { transfer_engine(st, g, transfers); }); })
            ->daemonize();
      }
    }
  }
  engine.run();
  if (st.error) std::rethrow_exception(st.error);
  if (st.finished_gpus != result.gpus) {
    throw std::logic_error("the simulation stopped before every GPU finished its steps (" +
                           std::to_string(st.finished_gpus) + " of " + std::to_string(result.gpus) +
                           " did): SimGrid found no activity left to run");
  }
  if (!store_key.empty() && !stored && computed.size() == static_cast<std::size_t>(result.steps)) {
    store_access_steps(options_.access_store, store_key, computed);
  }
  result.access_store = store_key.empty() ? "" : (stored ? "read" : "written");

  for (std::size_t s = 0; s < result.gpu_steps.size(); ++s) {
    double end = 0.0;
    for (const auto& g : result.gpu_steps[s]) end = std::max(end, g.end);
    double previous = 0.0;
    if (s > 0) {
      for (const auto& g : result.gpu_steps[s - 1]) previous = std::max(previous, g.end);
    }
    result.step_time.push_back(end - previous);
  }
  // Bounded inputs give finite, positive times; anything else is a bug, never a result to print.
  for (std::size_t s = 0; s < result.step_time.size(); ++s) {
    if (!std::isfinite(result.step_time[s]) || result.step_time[s] <= 0.0) {
      throw std::logic_error("step " + std::to_string(s) + " took " + std::to_string(result.step_time[s]) +
                             " s of simulated time (expected a finite, positive duration)");
    }
  }
  return result;
}

}  // namespace ess
