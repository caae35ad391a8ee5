// Property: a scenario the loader accepts either runs to finite, positive step times or is refused
// as bad input (ConfigError, CapacityError, ResourceError, AccessTraceError) before it starts:
// never another exception, never a zero or infinite step, never an abort inside SimGrid.
// Hardware values are drawn log-uniformly over each field's whole documented range (the bounds
// of sim/config/physical_ranges.h), with a fixed seed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>

#include "tests/engine/test_scenarios.h"
#include "sim/config/config_error.h"
#include "sim/engine/simulation.h"
#include "sim/base/rng.h"
#include "sim/memory/memory_plan.h"
#include "sim/offload/access_trace.h"

namespace {

// exp(uniform(log lo, log hi)), or uniform for a range starting at 0.
double log_uniform(ess::Rng& rng, double lo, double hi) {
  if (lo <= 0.0) return hi * rng.uniform();
  return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * rng.uniform());
}

std::string with_unit(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g%s", v, unit);
  return buf;
}

nlohmann::json random_scenario(ess::Rng& rng) {
  const bool deepseek = rng.below(2) == 0;
  const int gpus = 1 << rng.below(4);  // 1, 2, 4, 8
  nlohmann::json hw = {{"preset", deepseek ? "h200-sxm" : "a100-80gb-sxm"}, {"gpu", {{"count", gpus}}}};
  const auto bw = [&] { return with_unit(log_uniform(rng, 1e6, 1e18), "B/s"); };
  const auto lat = [&] { return with_unit(log_uniform(rng, 0.0, 10e-3), "s"); };
  const auto eff = [&] { return log_uniform(rng, 1e-3, 1.0); };
  hw["gpu"]["hbm_bandwidth"] = bw();
  hw["gpu"]["hbm_capacity"] = with_unit(log_uniform(rng, 1e9, 1e15), "B");
  hw["gpu"]["peak_compute"] = {{"bf16", with_unit(log_uniform(rng, 1e9, 1e21), "FLOP/s")},
                               {"fp16", with_unit(log_uniform(rng, 1e9, 1e21), "FLOP/s")},
                               {"fp8", with_unit(log_uniform(rng, 1e9, 1e21), "FLOP/s")}};
  hw["pcie"] = {{"h2d_bandwidth", bw()}, {"d2h_bandwidth", bw()}, {"latency", lat()}, {"h2d_call_overhead", lat()},
                {"d2h_call_overhead", lat()}, {"gather_h2d_efficiency", eff()}, {"gather_d2h_efficiency", eff()},
                {"gather_sm_fraction", rng.uniform() * 0.99}, {"gpus_per_switch", 1}, {"switch_uplink_bandwidth", bw()}};
  hw["nvlink"] = {{"bandwidth", bw()}, {"latency", lat()}};
  hw["network"] = {{"bandwidth_per_gpu", bw()}, {"latency", lat()}};
  hw["cpu"] = {{"sockets", 1}, {"gpus_per_socket", gpus}};
  for (const char* k : {"gemm", "grouped_gemm", "attention", "sparse_attention", "prefill_attention", "indexer", "memory_bound"}) {
    hw["kernels"][k] = {{"compute_efficiency", eff()}, {"memory_efficiency", eff()}, {"kernel_overhead", lat()},
                        {"compute_ramp", log_uniform(rng, 0.0, 1e15)}, {"memory_ramp", with_unit(log_uniform(rng, 0.0, 1e12), "B")}};
  }
  hw["kernels"]["prefill_attention"]["row_keys"] = rng.uniform() * 1000.0;
  hw["collectives"] = {{"allreduce_bus_bandwidth", bw()}, {"allreduce_latency", lat()},
                       {"alltoall_nvlink_efficiency", eff()}, {"alltoall_network_efficiency", eff()}, {"alltoall_latency", lat()}};
  nlohmann::json model = {{"preset", deepseek ? "deepseek-v3.2-exp" : "llama-2-7b"}, {"layers", 1 + rng.below(3)}};
  if (deepseek) model["moe"] = {{"first_dense_layers", rng.below(2)}};
  nlohmann::json workload = {{"context_length", 1 + rng.below(131072)}, {"decode_steps", 1 + rng.below(2)}};
  workload["batch_per_gpu"] = rng.below(4) == 0 ? nlohmann::json("max") : nlohmann::json(1 + rng.below(64));
  nlohmann::json doc = {{"model", model}, {"hardware", hw}, {"workload", workload}};
  if (deepseek) {
    doc["parallelism"] = {{"attention_dp", gpus}, {"expert_parallel", gpus}};
    if (rng.below(2) == 0) {
      doc["cache"] = {{"mode", "offload"}, {"pool_ratio", log_uniform(rng, 1e-3, 1.0)}, {"sampled_requests", 1 + rng.below(2)},
                      {"warmup_windows", rng.below(4)}, {"transfer", rng.below(2) == 0 ? "gather" : "copy"}};
    }
  } else {
    doc["parallelism"] = {{"tensor_parallel", gpus}};
  }
  return doc;
}

}  // namespace

TEST_CASE("any scenario within the documented ranges runs to finite positive times or is refused as bad input") {
  ess::Rng rng(20261201);
  int ran = 0;
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    const nlohmann::json doc = random_scenario(rng);
    INFO("scenario " << i << ": " << doc.dump());
    try {
      const ess::Scenario s = ess::test::load(doc);
      const ess::RunResult r = ess::Simulation(s, ess::SimulationOptions(0, 0)).run();
      REQUIRE(!r.step_time.empty());
      for (const double t : r.step_time) {
        CHECK(std::isfinite(t));
        CHECK(t > 0.0);
      }
      for (const auto& step : r.gpu_steps) {
        for (const auto& g : step) {
          for (const double b : g.busy) CHECK((std::isfinite(b) && b >= 0.0));
        }
      }
      ++ran;
    } catch (const ess::ConfigError&) {
      ++refused;
    } catch (const ess::CapacityError&) {
      ++refused;
    } catch (const ess::ResourceError&) {
      ++refused;
    } catch (const ess::AccessTraceError&) {
      ++refused;
    }
  }
  // The property is about both outcomes: most draws must actually run.
  CHECK(ran >= 20);
  INFO("ran " << ran << ", refused " << refused);
  CHECK(ran + refused == 40);
}
