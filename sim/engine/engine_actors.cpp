#include "sim/engine/engine_actors.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include "sim/base/error.h"
#include "sim/engine/platform.h"
#include "sim/offload/prefetch.h"
#include "sim/engine/indexing.h"

namespace ess {

namespace sg4 = simgrid::s4u;

namespace {

// SimGrid settings for analytic, calibratable transfer times (sim/README.md "How a run flows"): CM02 without
// the TCP window limit or cross-traffic, so 1 GB over a 25 GB/s + 1 us link takes 0.040001 s.
const char* const kSimgridArgs[] = {
    "ess-sim",
    "--log=root.thres:critical",
    "--cfg=network/model:CM02",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
};


// Shared by the GPU actors of one run (they run one at a time, so no locking).
struct RunState {
  const Scenario* scenario = nullptr;  // the system: engine, cache policies, execution
  const Hardware* hardware = nullptr;  // the run's machine
  Platform platform;
  PlanCache* plans = nullptr;
  RunRecorder* recorder = nullptr;
  std::int64_t steps = 0;
  double t0 = 0.0;
  std::uint64_t activities = 0;
  std::map<std::pair<int, int>, sg4::BarrierPtr> barriers;  // (kind, group) -> barrier
  // Per GPU, two transfer engines (actors that run one transfer at a time, in order): miss fetches
  // (host->device) and write-backs (device->host).
  struct TransferJob {
    TransferRun run;
    int layer = -1;
    bool waited = false;  // prefetch: its layer has waited for it
    sg4::SemaphorePtr done;
  };
  struct TransferEngine {
    std::deque<TransferJob*> queue;
    sg4::SemaphorePtr work;
  };
  std::vector<TransferEngine> fetch_engines;
  std::vector<TransferEngine> writeback_engines;
  std::vector<std::deque<RunState::TransferJob>> writebacks;  // per GPU: write-backs of the current step
  // Prefetch (sim/offload/prefetch.h, PrefetchTraffic). Prefetches go to the fetch engine, or, when
  // they yield to on-demand fetches, to a third engine per GPU whose transfer is suspended while any
  // on-demand fetch runs.
  bool prefetch_yields = false;
  std::vector<TransferEngine> background_engines;
  // A prefetch in flight is suspended (its flow and its gather kernel's share of the SMs) while
  // any on-demand fetch runs, and resumed when none is left.
  struct Background {
    sg4::CommPtr comm;    // the prefetch moving now, if any
    sg4::ExecPtr sm;      // its gather kernel's share of the SMs
    bool paused = false;  // comm and sm suspended
    int immediate = 0;    // on-demand fetches running
    bool blocked = false; // the engine waits for them to end before starting its next transfer
    sg4::SemaphorePtr wake;
  };
  std::vector<Background> background;
  std::vector<std::deque<RunState::TransferJob>> prefetch_jobs;  // per GPU: prefetches of the current step
  std::vector<std::map<std::pair<int, int>, RunState::TransferJob*>> prefetch_index;  // per GPU: (lane, layer) -> job
  // Two-batch overlap: per GPU and micro-batch, a communication engine (an actor running that
  // lane's collectives one at a time, in order, beside the compute stream) and this step's jobs.
  struct CommJob {
    const Segment* segment = nullptr;
    int step = 0;
    sg4::SemaphorePtr done;
  };
  struct CommEngine {
    std::deque<CommJob*> queue;
    sg4::SemaphorePtr work;
    std::deque<CommJob> jobs;  // submitted this step, in order
    std::size_t waited = 0;    // how many of them the compute stream has waited for
  };
  std::vector<std::array<CommEngine, 2>> comm_engines;

  // Per GPU: compute time run ahead of SimGrid's clock (see run_compute), and what is in flight
  // that may hold SMs (while anything is, compute runs in SimGrid): transfers on its transfer
  // engines (a gather holds SMs) and collectives holding SMs (`in_flight` counts both,
  // `sm_collectives` the second).
  struct GpuClock {
    double pending = 0.0;
    int in_flight = 0;
    int sm_collectives = 0;
    SmSharers sharers() const { return {in_flight > sm_collectives, sm_collectives > 0}; }
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
  // leaves an actor, so actors catch, record it here, stop every other actor, and run_engine()
  // rethrows it once the engine has returned.
  std::exception_ptr error;
  int finished_gpus = 0;  // GPU actors that ran every step (a deadlock leaves some short)

  [[nodiscard]] double now() const { return sg4::Engine::get_clock() - t0; }
};

// Runs an actor's body; an exception ends the whole simulation and is rethrown by run_engine().
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
  ++st.activities;
}

// A compute segment. While no transfer of this GPU is in flight, nothing can share its SMs, so the
// segment takes exactly its duration: it is added to the GPU's clock without a SimGrid activity, and
// the clock is brought level (flush) before the next interaction (a transfer, a collective, the
// end of the step). Otherwise it runs as an Exec beside the gathers holding part of the SMs.
void run_compute(RunState& st, int step, int gpu, const Segment& seg) {
  auto& clock = st.clocks[idx(gpu)];
  const bool ahead = st.ahead && clock.in_flight == 0;
  if (!ahead) flush(st, gpu);
  const double start = st.now() + clock.pending;
  // Only this actor submits transfers and collectives, between segments: what shares the SMs
  // during the segment is in flight at its start.
  const SmSharers sharers = clock.sharers();
  if (seg.duration.value() > 0) {
    if (ahead) {
      clock.pending += seg.duration.value();
    } else {
      sg4::Exec::init()->set_flops_amount(seg.duration.value() * kGpuSpeed)->set_host(st.platform.gpus[idx(gpu)])->start()->wait();
      ++st.activities;
    }
  }
  const double elapsed = ahead ? seg.duration.value() : st.now() - start;
  st.recorder->compute(step, gpu, seg, start, elapsed, sharers);
}

// Barrier key of a collective: its kind and micro-batch (each lane synchronises on its own).
// 0: an EP group's all-to-all; 1: a replica's all-reduce; 2: a MoE group's all-gather or reduce-scatter.
int barrier_kind(const Segment& seg) {
  const int scope = seg.kind == SegmentKind::alltoall ? 0 : (seg.moe_group ? 2 : 1);
  return scope + 3 * seg.lane;
}

CollectiveRun do_collective(RunState& st, int gpu, const Segment& seg, bool beside_compute) {
  CollectiveRun c;
  const auto& barrier = st.barriers.at({barrier_kind(seg), seg.group});
  c.arrive = st.now();
  barrier->wait();  // a collective starts when every member has reached it
  c.start = st.now();
  // From a communication engine (two-batch overlap) the other micro-batch computes beside it: an
  // SM-holding all-to-all then moves each byte at seg.overlap_efficiency of the ports' rate, for all
  // of its time (sampling whether compute runs at its start made the step non-monotone in it).
  const double efficiency = beside_compute ? seg.overlap_efficiency : 1.0;
  c.out_done = c.start;
  c.in_done = c.start;
  if (seg.kind == SegmentKind::alltoall) {
    // What this GPU sends to and receives from its own node and from other nodes, each carried by
    // one flow through its NVSwitch port or its NIC (see platform.h).
    const int per_node = st.hardware->gpu.count;
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
        return b > 0 ? latency + static_cast<double>(bytes(b)) / (bandwidth * efficiency) : 0.0;
      };
      const double out_s = std::max(flow(out_local, st.nvs_latency, st.nvs_bandwidth),
                                    flow(out_remote, st.nic_latency, st.nic_bandwidth));
      const double in_s = std::max(flow(in_local, st.nvs_latency, st.nvs_bandwidth),
                                   flow(in_remote, st.nic_latency, st.nic_bandwidth));
      const double span = std::max(out_s, in_s);
      if (span > 0) {
        sg4::this_actor::sleep_for(span);
        ++st.activities;
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
    // A slowed all-to-all is carried as its bytes over the efficiency: the same time alone on a
    // link, and its share of a shared link's load.
    const auto flow_bytes = [&](double b) { return bytes(b / efficiency); };
    if (out_local > 0) out.push_back(sg4::Comm::sendto_async(self, nvswitch, flow_bytes(out_local)));
    if (out_remote > 0) out.push_back(sg4::Comm::sendto_async(self, st.platform.network, flow_bytes(out_remote)));
    if (in_local > 0) in.push_back(sg4::Comm::sendto_async(nvswitch, self, flow_bytes(in_local)));
    if (in_remote > 0) in.push_back(sg4::Comm::sendto_async(st.platform.network, self, flow_bytes(in_remote)));
    st.activities += out.size() + in.size();
    sg4::Comm::wait_all(out);
    sg4::Comm::wait_all(in);
    for (const auto& f : out) c.out_done = std::max(c.out_done, f->get_finish_time() - st.t0);
    for (const auto& f : in) c.in_done = std::max(c.in_done, f->get_finish_time() - st.t0);
  } else {
    sg4::this_actor::sleep_for(seg.duration.value());
    ++st.activities;
  }
  c.end = st.now();
  return c;
}

// A collective on the compute stream (one micro-batch): the GPU waits for all of it.
void run_collective(RunState& st, int step, int gpu, const Segment& seg) {
  flush(st, gpu);
  const CollectiveRun c = do_collective(st, gpu, seg, false);
  st.recorder->collective(step, gpu, seg, c, true);
}

// Tiered prefetch: suspends the prefetch in flight, if it still runs, or resumes it.
void pause(RunState::Background& b) {
  if (!b.comm || b.paused || b.comm->get_state() != sg4::Activity::State::STARTED) return;
  b.comm->suspend();
  if (b.sm) b.sm->suspend();
  b.paused = true;
}

void resume(RunState::Background& b) {
  if (!b.paused) return;
  b.comm->resume();
  if (b.sm) b.sm->resume();
  b.paused = false;
}

// Moves `t` between the GPU and its CPU socket as the scenario's transfer path does. A gather is a
// kernel: a flow through a link capped at the gather rate, plus a bounded Exec holding its share of the SMs for as
// long as the flow runs (compute beside it slows down). A copy pays one call overhead per run on
// the host before the DMA flow. NVMe-resident bytes are read first. Returns when the data has moved.
void transfer(RunState& st, int gpu, const Transfer& t, RunState::Background* background = nullptr) {
  const auto& hw = *st.hardware;
  sg4::Host* g = st.platform.gpus[idx(gpu)];
  sg4::Host* cpu = st.platform.gpu_socket[idx(gpu)];
  const auto& nvme = st.scenario->cache.nvme;
  if (t.nvme_bytes > 0 && nvme) {
    sg4::this_actor::sleep_for((nvme->latency + Bytes(t.nvme_bytes) / nvme->bandwidth).value());
    ++st.activities;
  }
  const auto bytes = static_cast<std::uint64_t>(std::ceil(t.bytes));
  // A background transfer starts only while no on-demand fetch runs.
  while (background != nullptr && background->immediate > 0) {
    background->blocked = true;
    background->wake->acquire();
  }
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
      ++st.activities;
    }
  } else {
    const Seconds overhead = t.h2d ? hw.pcie.h2d_call_overhead : hw.pcie.d2h_call_overhead;
    sg4::this_actor::sleep_for(overhead.value() * std::max(1.0, std::round(t.runs)));
    ++st.activities;
  }
  comm->start();
  ++st.activities;
  if (background != nullptr) {
    background->comm = comm;
    background->sm = sm;
    // Starting an activity yields to SimGrid's maestro: an on-demand fetch may have begun meanwhile.
    if (background->immediate > 0) pause(*background);
  }
  comm->wait();
  if (sm) sm->cancel();
  if (background != nullptr) {
    background->comm = nullptr;
    background->sm = nullptr;
    background->paused = false;
  }
}

// Tiered prefetch: an on-demand fetch of `gpu` starts (suspending the prefetch in flight) or ends
// (resuming it once no on-demand fetch is left).
void immediate_begins(RunState& st, int gpu) {
  auto& b = st.background[idx(gpu)];
  ++b.immediate;
  pause(b);
}

void immediate_ends(RunState& st, int gpu) {
  auto& b = st.background[idx(gpu)];
  if (--b.immediate > 0) return;
  resume(b);
  if (b.blocked) {
    b.blocked = false;
    b.wake->release();
  }
}

// `immediate`: this engine moves on-demand fetches, which a yielding prefetch (PrefetchTraffic)
// waits for; `background`: this engine moves the yielding prefetches.
void transfer_engine(RunState& st, int gpu, RunState::TransferEngine& engine, bool immediate = false,
                     RunState::Background* background = nullptr) {
  while (true) {
    engine.work->acquire();
    RunState::TransferJob* job = engine.queue.front();
    engine.queue.pop_front();
    if (immediate) immediate_begins(st, gpu);
    job->run.start = st.now();
    transfer(st, gpu, *job->run.transfer, background);
    job->run.end = st.now();
    if (immediate) immediate_ends(st, gpu);
    --st.clocks[idx(gpu)].in_flight;
    job->done->release();
  }
}

void submit(RunState& st, int gpu, RunState::TransferEngine& engine, RunState::TransferJob& job, const Transfer& t) {
  ++st.clocks[idx(gpu)].in_flight;
  job.run.transfer = &t;
  job.run.submitted = st.now();
  job.done = sg4::Semaphore::create(0);
  engine.queue.push_back(&job);
  engine.work->release();
}

void run_stage(RunState& st, int step, int gpu, const Segment& seg) {
  flush(st, gpu);
  StageRun run;
  run.start = st.now();
  RunState::TransferJob job;
  submit(st, gpu, st.fetch_engines[idx(gpu)], job, seg.transfer);
  if (seg.duration.value() > 0) {
    sg4::Exec::init()->set_flops_amount(seg.duration.value() * kGpuSpeed)->set_host(st.platform.gpus[idx(gpu)])->start()->wait();
    ++st.activities;
  }
  run.compute_end = st.now();
  job.done->acquire();
  run.end = st.now();
  run.fetch = job.run;
  st.recorder->stage(step, gpu, seg, run);
}

void start_writeback(RunState& st, int gpu, const Segment& seg) {
  flush(st, gpu);
  auto& jobs = st.writebacks[idx(gpu)];
  jobs.emplace_back();
  jobs.back().layer = seg.layer;
  submit(st, gpu, st.writeback_engines[idx(gpu)], jobs.back(), seg.transfer);
}

// Prefetch: the transfer for a later layer goes out; nothing waits for it until that layer.
void start_prefetch(RunState& st, int gpu, const Segment& seg) {
  flush(st, gpu);
  auto& jobs = st.prefetch_jobs[idx(gpu)];
  auto& job = jobs.emplace_back();
  job.layer = seg.layer;
  if (!st.prefetch_index[idx(gpu)].emplace(std::make_pair(seg.lane, seg.layer), &job).second) {
    throw InternalError("two prefetches for layer " + std::to_string(seg.layer) + " in one step");
  }
  auto& engine = st.prefetch_yields ? st.background_engines[idx(gpu)] : st.fetch_engines[idx(gpu)];
  submit(st, gpu, engine, job, seg.transfer);
}

// The layer needs what was prefetched for it: the compute stream waits for the transfer's end.
void wait_prefetch(RunState& st, int step, int gpu, const Segment& seg) {
  flush(st, gpu);
  const auto found = st.prefetch_index[idx(gpu)].find({seg.lane, seg.layer});
  if (found == st.prefetch_index[idx(gpu)].end()) {
    throw InternalError("layer " + std::to_string(seg.layer) + " waits for a prefetch never issued");
  }
  RunState::TransferJob& job = *found->second;
  const double from = st.now();
  job.done->acquire();
  job.waited = true;
  const double waited = st.now() - from;
  st.recorder->prefetch_waited(step, gpu, seg, job.run, from, waited);
}

// One non-collective segment on the compute stream.
void run_work(RunState& st, int step, int gpu, const Segment& seg) {
  switch (seg.kind) {
    case SegmentKind::compute: run_compute(st, step, gpu, seg); break;
    case SegmentKind::stage: run_stage(st, step, gpu, seg); break;
    case SegmentKind::writeback: start_writeback(st, gpu, seg); break;
    case SegmentKind::prefetch: start_prefetch(st, gpu, seg); break;
    case SegmentKind::prefetch_wait: wait_prefetch(st, step, gpu, seg); break;
    case SegmentKind::alltoall:
    case SegmentKind::allreduce: run_collective(st, step, gpu, seg); break;
  }
}

// The loop of one micro-batch's communication engine (a daemon: it ends with the simulation).
void comm_engine(RunState& st, int gpu, int lane) {
  auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
  while (true) {
    engine.work->acquire();
    RunState::CommJob* job = engine.queue.front();
    engine.queue.pop_front();
    // A collective whose kernels hold part of the SMs (the prefill all-to-all) keeps that share of
    // the GPU busy until it ends, as a gather does (transfer()).
    sg4::ExecPtr sm;
    if (job->segment->sm_fraction > 0) {
      sm = sg4::Exec::init()
               ->set_flops_amount(1e300)
               ->set_bound(job->segment->sm_fraction * kGpuSpeed)
               ->set_host(st.platform.gpus[idx(gpu)]);
      sm->start();
      ++st.activities;
    }
    const CollectiveRun c = do_collective(st, gpu, *job->segment, true);
    if (sm) {
      sm->cancel();
      --st.clocks[idx(gpu)].in_flight;
      --st.clocks[idx(gpu)].sm_collectives;
    }
    st.recorder->collective(job->step, gpu, *job->segment, c, false);
    job->done->release();
  }
}

// The compute stream waits for every collective micro-batch `lane` has in flight; the wait is
// exposed communication (category collectives, on the layer of the last collective waited for).
void wait_lane(RunState& st, int step, int gpu, int lane) {
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
  st.recorder->lane_waited(step, gpu, lane, *last, from, stalled);
}

// Two-batch overlap on one GPU. Each micro-batch's segments split into phases, each the work
// between two of its collectives. The compute stream runs phase i of micro-batch 0, then phase i of
// micro-batch 1, then phase i + 1 of micro-batch 0, ...; before a phase it waits for the
// micro-batch's collectives in flight, and the collectives that end a phase go to the
// micro-batch's communication engine, so one's all-to-all runs while the other computes. The
// decode all-to-all holds no SMs (DeepEP's low-latency kernels, whose RDMA needs none while in
// flight); the prefill one holds Segment::sm_fraction of them (DeepEP's normal kernels).
void run_lanes(RunState& st, int step, int gpu, const std::vector<Segment>& segments) {
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
      wait_lane(st, step, gpu, lane);
      const Phase& phase = lanes[idx(lane)][i];
      for (const Segment* seg : phase.work) run_work(st, step, gpu, *seg);
      auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
      if (!phase.comms.empty()) flush(st, gpu);
      for (const Segment* seg : phase.comms) {
        // Kernels holding SMs from now on: compute beside them runs in SimGrid, sharing the GPU.
        if (seg->sm_fraction > 0) {
          ++st.clocks[idx(gpu)].in_flight;
          ++st.clocks[idx(gpu)].sm_collectives;
        }
        auto& job = engine.jobs.emplace_back();
        job.segment = seg;
        job.step = step;
        job.done = sg4::Semaphore::create(0);
        engine.queue.push_back(&job);
        engine.work->release();
      }
    }
  }
  for (int lane = 0; lane < 2; ++lane) {
    wait_lane(st, step, gpu, lane);
    auto& engine = st.comm_engines[idx(gpu)][idx(lane)];
    engine.jobs.clear();
    engine.waited = 0;
  }
}

// The host time an overlapping engine did not hide behind the step's GPU work (plan.host_floor,
// engine.host_overlap): the CPU prepared the next step from the step's start, so the GPUs idle
// until it is ready. Run as a host segment at the step's end.
void wait_for_host(RunState& st, int step, int gpu, const StepPlan& plan, double begun) {
  flush(st, gpu);
  const double wait = begun + plan.host_floor.value() - st.now();
  if (wait <= 0) return;
  Segment host;
  host.kind = SegmentKind::compute;
  host.label = segname::host;
  host.duration = Seconds(wait);
  host.ops.push_back(Op{opname::step_overhead, OpCategory::host, host.duration, Flops(0.0), Bytes(0.0)});
  run_compute(st, step, gpu, host);
}

void gpu_main(RunState& st, int gpu) {
  for (int step = 0; step < st.steps; ++step) {
    const StepPlan& plan = st.plans->get(step);
    const double begun = st.now();
    st.recorder->step_begins(step, gpu, begun);
    if (st.scenario->execution.micro_batches == 2) {
      run_lanes(st, step, gpu, plan.gpus[idx(gpu)].segments);
    } else {
      for (const Segment& seg : plan.gpus[idx(gpu)].segments) run_work(st, step, gpu, seg);
    }
    if (plan.host_floor.value() > 0) wait_for_host(st, step, gpu, plan, begun);
    // A step ends when its write-backs have reached host memory (the next step may select them).
    flush(st, gpu);
    const double drain = st.now();
    for (auto& job : st.writebacks[idx(gpu)]) {
      job.done->acquire();
      st.recorder->writeback_done(step, gpu, job.layer, job.run);
    }
    st.writebacks[idx(gpu)].clear();
    for (const auto& job : st.prefetch_jobs[idx(gpu)]) {
      if (!job.waited) {
        throw InternalError("step " + std::to_string(step) + ": the prefetch of layer " + std::to_string(job.layer) +
                            " on GPU " + std::to_string(gpu) + " was never waited for");
      }
    }
    st.prefetch_jobs[idx(gpu)].clear();
    st.prefetch_index[idx(gpu)].clear();
    st.recorder->step_ends(step, gpu, plan, drain, st.now());
    st.plans->done(step);
  }
  ++st.finished_gpus;
}

}  // namespace

EngineRun run_engine(const RunBase& run, bool offload, PlanCache& plans, std::int64_t steps, bool fast_paths,
                     RunRecorder& recorder) {
  const Scenario& scenario = *run.system;
  const int gpus = run.gpus();
  int argc = static_cast<int>(std::size(kSimgridArgs));
  std::vector<char*> argv;
  std::vector<std::string> storage(std::begin(kSimgridArgs), std::end(kSimgridArgs));
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  sg4::Engine engine(&argc, argv.data());

  RunState st;
  st.scenario = &scenario;
  st.hardware = &run.hardware;
  st.platform = build_platform(run.hardware);
  st.plans = &plans;
  st.recorder = &recorder;
  st.steps = steps;
  st.t0 = sg4::Engine::get_clock();
  const int tp = run.parallelism.tensor_parallel;
  const int ep = run.parallelism.expert_parallel;
  const int moe_group = run.parallelism.gathers_tokens() ? run.parallelism.moe_group() : gpus;
  const int lanes = scenario.execution.micro_batches;
  for (int lane = 0; lane < lanes; ++lane) {
    for (int g = 0; g < gpus / ep; ++g) st.barriers[{0 + 3 * lane, g}] = sg4::Barrier::create(static_cast<unsigned>(ep));
    for (int g = 0; g < gpus / tp; ++g) st.barriers[{1 + 3 * lane, g}] = sg4::Barrier::create(static_cast<unsigned>(tp));
    for (int g = 0; g < gpus / moe_group; ++g) {
      st.barriers[{2 + 3 * lane, g}] = sg4::Barrier::create(static_cast<unsigned>(moe_group));
    }
  }
  st.comm_engines.resize(idx(gpus));
  st.clocks.resize(idx(gpus));
  // With one micro-batch a GPU runs one collective at a time, so its port flows are alone on their
  // links (platform.h); two micro-batches may overlap two collectives on one port: SimGrid shares it.
  st.analytic_ports = lanes == 1 && fast_paths;
  st.ahead = fast_paths;
  st.nvs_latency = alltoall_intranode_latency(run.hardware).value();
  st.nvs_bandwidth = alltoall_intranode_bandwidth(run.hardware).value();
  st.nic_latency = alltoall_internode_latency(run.hardware).value();
  st.nic_bandwidth = alltoall_internode_bandwidth(run.hardware).value();
  st.writebacks.resize(idx(gpus));
  st.prefetch_jobs.resize(idx(gpus));
  st.prefetch_index.resize(idx(gpus));
  if (offload) {
    st.prefetch_yields =
        registered(prefetch_policies(), "prefetch", scenario.cache.prefetch.policy).make()->traffic().yields_to_on_demand;
  }
  if (st.prefetch_yields) {
    st.background_engines.resize(idx(gpus));
    st.background.resize(idx(gpus));
  }
  st.fetch_engines.resize(idx(gpus));
  st.writeback_engines.resize(idx(gpus));
  for (int g = 0; g < gpus; ++g) {
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
    if (offload) {
      const bool yields = st.prefetch_yields;
      for (auto* engines : {&st.fetch_engines, &st.writeback_engines}) {
        auto& transfers = (*engines)[idx(g)];
        transfers.work = sg4::Semaphore::create(0);
        const bool immediate = yields && engines == &st.fetch_engines;
        sg4::Actor::create("transfers", st.platform.gpu_socket[idx(g)], [&st, g, &transfers, immediate] {
          guarded(st, [&] { transfer_engine(st, g, transfers, immediate); });
        })->daemonize();
      }
      if (yields) {
        auto& transfers = st.background_engines[idx(g)];
        transfers.work = sg4::Semaphore::create(0);
        auto& background = st.background[idx(g)];
        background.wake = sg4::Semaphore::create(0);
        sg4::Actor::create("prefetches", st.platform.gpu_socket[idx(g)], [&st, g, &transfers, &background] {
          guarded(st, [&] { transfer_engine(st, g, transfers, false, &background); });
        })->daemonize();
      }
    }
  }
  engine.run();
  if (st.error) std::rethrow_exception(st.error);
  if (st.finished_gpus != gpus) {
    throw InternalError("the simulation stopped before every GPU finished its steps (" +
                        std::to_string(st.finished_gpus) + " of " + std::to_string(gpus) +
                        " did): SimGrid found no activity left to run");
  }
  return EngineRun{st.activities};
}

}  // namespace ess
