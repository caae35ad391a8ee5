#include "sim/config/hardware_config.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "sim/base/error.h"
#include "sim/config/physical_ranges.h"
#include "sim/config/quantity.h"
#include "sim/config/reader.h"

namespace ess {

namespace {

// Bound of a GPU's power: 10 kW, far above any board (B200 1 kW, GB200 superchip 2.7 kW).
constexpr double kMaxGpuPowerWatts = 1e4;

int read_int(ObjectReader& r, std::string_view key, Range range) {
  return static_cast<int>(r.integer(key, range));
}

// The roofline keys of a kernel-class object; the caller finishes the object (a class may add keys).
RooflineParams read_roofline_keys(ObjectReader& r) {
  RooflineParams p;
  p.compute_efficiency = r.number("compute_efficiency", efficiency());
  p.compute_ramp = r.flops("compute_ramp", flop_ramp());
  p.memory_efficiency = r.number("memory_efficiency", efficiency());
  p.memory_ramp = r.bytes("memory_ramp", byte_ramp());
  p.kernel_overhead = r.seconds("kernel_overhead", latency());
  // Optional: 0 (the default, recorded as such) is the sharp max of the two roofs.
  p.transition = r.number_or("transition", Range::closed(0.0, 64.0), 0.0);
  if (p.transition > 0.0 && p.transition < 1.0) {
    r.fail("transition", "must be 0 (the max of the two roofs) or in [1, 64], got " + std::to_string(p.transition));
  }
  return p;
}

RooflineParams read_roofline(ObjectReader& r) {
  RooflineParams p = read_roofline_keys(r);
  r.finish();
  return p;
}

GpuSpec read_gpu(ObjectReader& r) {
  GpuSpec g;
  g.kind = r.text("kind");
  g.count = read_int(r, "count", Range::closed(1, 1024));
  g.hbm_capacity = r.bytes("hbm_capacity", capacity());
  g.hbm_bandwidth = r.bandwidth("hbm_bandwidth", link_bandwidth());
  auto pc = r.object("peak_compute");
  g.peak_compute.fp32 = pc.optional_compute_rate("fp32", peak_rate());
  g.peak_compute.bf16 = pc.optional_compute_rate("bf16", peak_rate());
  g.peak_compute.fp16 = pc.optional_compute_rate("fp16", peak_rate());
  g.peak_compute.fp8 = pc.optional_compute_rate("fp8", peak_rate());
  pc.finish();
  // Optional: a profile written before it existed has none (what needs it fails then, naming it).
  if (r.has("sm_count")) g.sm_count = read_int(r, "sm_count", Range::closed(1, 4096));
  // Optional: 1 (sustains the clock of the peaks) when the preset or profile does not say.
  g.sustained_clock_fraction = r.number_or("sustained_clock_fraction", Range::left_open(0.0, 1.0), kDefaultSustainedClock);
  // Optional (the serving energy model): a profile written before it existed has none.
  if (r.has("power")) {
    auto p = r.object("power");
    GpuPower power;
    power.idle = p.power("idle", Range::closed(0.0, kMaxGpuPowerWatts));
    power.busy = p.power("busy", Range::left_open(0.0, kMaxGpuPowerWatts));
    if (power.busy < power.idle) {
      p.fail("busy", "busy power (" + format_quantity(power.busy.value(), Dimension::watts) + ") must be at least the idle power (" +
                         format_quantity(power.idle.value(), Dimension::watts) + ")");
    }
    p.finish();
    g.power = power;
  } else {
    std::string source;
    (void)r.take("power", source);
  }
  r.finish();
  return g;
}

PcieSpec read_pcie(ObjectReader& r, int gpus_per_node) {
  PcieSpec p;
  p.generation = read_int(r, "generation", Range::closed(1, 7));
  p.h2d_bandwidth = r.bandwidth("h2d_bandwidth", link_bandwidth());
  p.d2h_bandwidth = r.bandwidth("d2h_bandwidth", link_bandwidth());
  p.latency = r.seconds("latency", latency());
  p.h2d_call_overhead = r.seconds("h2d_call_overhead", latency());
  p.d2h_call_overhead = r.seconds("d2h_call_overhead", latency());
  p.gather_h2d_efficiency = r.number("gather_h2d_efficiency", efficiency());
  p.gather_d2h_efficiency = r.number("gather_d2h_efficiency", efficiency());
  p.gather_sm_fraction = r.number("gather_sm_fraction", Range{0.0, 1.0, true, false, true, true});
  p.gpus_per_switch = read_int(r, "gpus_per_switch", Range::closed(1, 1024));
  p.switch_uplink_bandwidth = r.bandwidth("switch_uplink_bandwidth", link_bandwidth());
  if (gpus_per_node % p.gpus_per_switch != 0) {
    r.fail("gpus_per_switch", "gpus_per_switch (" + std::to_string(p.gpus_per_switch) +
                                  ") must divide the GPUs per node (gpu.count = " + std::to_string(gpus_per_node) + ")");
  }
  r.finish();
  return p;
}

CpuSpec read_cpu(ObjectReader& r, int gpus_per_node) {
  CpuSpec c;
  c.sockets = read_int(r, "sockets", Range::closed(1, 64));
  c.gpus_per_socket = read_int(r, "gpus_per_socket", Range::closed(1, 1024));
  c.dram_capacity_per_socket = r.bytes("dram_capacity_per_socket", capacity());
  c.dram_bandwidth_per_socket = r.bandwidth("dram_bandwidth_per_socket", link_bandwidth());
  if (c.sockets * c.gpus_per_socket < gpus_per_node) {
    r.fail("gpus_per_socket", "sockets x gpus_per_socket (" + std::to_string(c.sockets) + " x " +
                                  std::to_string(c.gpus_per_socket) + ") is less than the GPUs per node (gpu.count = " +
                                  std::to_string(gpus_per_node) + ")");
  }
  r.finish();
  return c;
}

// hardware.kernels.gemm_measured (optional; written by `ess-sim calibrate`), like every value with
// its source:
//   {"value": {"shapes": [{"n": N, "k": K, "dtype": "fp16", "m": [...], "seconds": [...]}, ...]},
//    "source": "..."}
std::shared_ptr<const GemmTable> read_gemm_measured(ObjectReader& r) {
  std::string source;
  const nlohmann::json* j = r.take("gemm_measured", source);
  if (j == nullptr || j->is_null()) return nullptr;
  const auto fail = [&r](const std::string& where, const std::string& message) {
    r.fail("gemm_measured", (where.empty() ? "" : where + ": ") + message);
  };
  if (!j->is_object() || !j->contains("shapes") || !(*j)["shapes"].is_array()) {
    fail("", "expected {\"value\": {\"shapes\": [{\"n\", \"k\", \"dtype\", \"m\": [...], \"seconds\": [...]}]}, "
             "\"source\": \"...\"}");
  }
  for (const auto& [key, v] : j->items()) {
    if (key != "shapes") fail("", "unknown key \"" + key + "\" (expected shapes)");
  }
  auto table = std::make_shared<GemmTable>();
  const auto& shapes = (*j)["shapes"];
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& e = shapes[i];
    const std::string where = "shapes[" + std::to_string(i) + "]";
    const auto int_of = [&](const char* key) {
      if (!e.is_object() || !e.contains(key) || !e[key].is_number_integer() || e[key].get<std::int64_t>() < 1) {
        fail(where, std::string("\"") + key + "\" must be an integer >= 1");
      }
      return e[key].get<std::int64_t>();
    };
    const std::int64_t n = int_of("n");
    const std::int64_t k = int_of("k");
    const auto dtype = e.contains("dtype") && e["dtype"].is_string() ? parse_dtype(e["dtype"].get<std::string>()) : std::nullopt;
    if (!dtype) fail(where, "\"dtype\" must be one of fp32, bf16, fp16, fp8");
    if (!e.contains("m") || !e["m"].is_array() || !e.contains("seconds") || !e["seconds"].is_array() ||
        e["m"].size() != e["seconds"].size() || e["m"].empty()) {
      fail(where, "\"m\" and \"seconds\" must be arrays of the same non-zero length");
    }
    for (std::size_t p = 0; p < e["m"].size(); ++p) {
      const auto& m = e["m"][p];
      const auto& t = e["seconds"][p];
      if (!m.is_number_integer() || !t.is_number()) fail(where, "m[" + std::to_string(p) + "] must be an integer and seconds[" + std::to_string(p) + "] a number");
      try {
        table->add(m.get<std::int64_t>(), n, k, *dtype, t.get<double>());
      } catch (const InputError& ex) {  // GemmTable::add: a bad or repeated measurement
        fail(where, ex.what());
      }
    }
  }
  r.record("gemm_measured", nlohmann::ordered_json(*j), source);
  return table;
}

}  // namespace

Hardware read_hardware(ObjectReader& r) {
  Hardware h;
  h.name = r.text("name");
  r.optional_text("description");
  r.optional_text("provenance");
  h.nodes = static_cast<int>(r.integer_or("nodes", Range::closed(1, 4096), 1));
  {
    auto g = r.object("gpu");
    h.gpu = read_gpu(g);
  }
  {
    auto p = r.object("pcie");
    h.pcie = read_pcie(p, h.gpu.count);
  }
  {
    auto n = r.object("nvlink");
    h.nvlink.bandwidth = n.bandwidth("bandwidth", link_bandwidth());
    h.nvlink.latency = n.seconds("latency", latency());
    n.finish();
  }
  {
    auto n = r.object("network");
    h.network.bandwidth_per_gpu = n.bandwidth("bandwidth_per_gpu", link_bandwidth());
    h.network.latency = n.seconds("latency", latency());
    n.finish();
  }
  {
    auto c = r.object("cpu");
    h.cpu = read_cpu(c, h.gpu.count);
  }
  {
    auto k = r.object("kernels");
    {
      auto x = k.object("gemm");
      h.kernels.gemm = read_roofline(x);
    }
    {
      auto x = k.object("grouped_gemm");
      h.kernels.grouped_gemm = read_roofline(x);
    }
    {
      auto x = k.object("attention");
      h.kernels.attention = read_roofline(x);
    }
    {
      auto x = k.object("sparse_attention");
      h.kernels.sparse_attention = read_roofline(x);
    }
    {
      auto x = k.object("prefill_attention");
      h.kernels.prefill_attention = read_roofline_keys(x);
      h.kernels.prefill_attention_row_keys = x.number("row_keys", Range::closed(0.0, 1e6));
      x.finish();
    }
    {
      auto x = k.object("indexer");
      h.kernels.indexer = read_roofline(x);
    }
    {
      auto x = k.object("memory_bound");
      h.kernels.memory_bound = read_roofline(x);
    }
    h.kernels.topk_passes = k.number("topk_passes", Range::closed(1.0, 64.0));
    h.kernels.gemm_measured = read_gemm_measured(k);
    k.finish();
  }
  {
    auto c = r.object("collectives");
    h.collectives.allreduce_bus_bandwidth = c.bandwidth("allreduce_bus_bandwidth", link_bandwidth());
    h.collectives.allreduce_latency = c.seconds("allreduce_latency", latency());
    h.collectives.alltoall_nvlink_efficiency = c.number("alltoall_nvlink_efficiency", efficiency());
    h.collectives.alltoall_network_efficiency = c.number("alltoall_network_efficiency", efficiency());
    h.collectives.alltoall_latency = c.seconds("alltoall_latency", latency());
    c.finish();
  }
  r.finish();
  return h;
}

}  // namespace ess
