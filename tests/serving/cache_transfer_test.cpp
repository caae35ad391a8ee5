// The disaggregated caches' transfers (sim/serving/cache_transfer.h): what moves where, each alone,
// and the links they share (the prefill GPU's NIC, the decode node's NICs), through the prefill pool.
#include "sim/serving/cache_transfer.h"

#include <catch2/catch.hpp>

#include "sim/serving/prefill_pool.h"
#include "sim/serving/serving_loop.h"
#include "sim/serving/serving_metrics.h"
#include "tests/serving/serving_test_support.h"

using namespace ess;

namespace {

Scenario disaggregated(const std::string& file, int instances) {
  return test::serving_scenario(file, {"serving.prefill.mode=disaggregated", "serving.prefill.instances=" + std::to_string(instances),
                                       "serving.prefill.tokens_per_gpu=4096"});
}

double nic(const Scenario& s) { return s.hardware.network.bandwidth_per_gpu.value(); }

}  // namespace

TEST_CASE("under ESS the latent cache goes to host memory and the GPU's share to the GPU, both over the NIC", "[serving][transfer]") {
  const Scenario s = disaggregated(test::kServingEss, 1);
  const ServingMemory memory(s, 1000, 33000, std::nullopt);
  const CacheTransfer t = CacheLinks(s, 8).transfer(memory, 32000);
  const Footprint f = memory.offloaded(32000);
  CHECK(t.host_bytes == Approx(f.host));
  CHECK(t.gpu_bytes == Approx(f.hbm));
  CHECK(t.host_bytes > t.gpu_bytes);  // at 32K the pool and indexer cache are the smaller part
  // The two flows share the prefill GPU's NIC, the tightest link on both paths.
  CHECK(t.seconds == Approx(s.hardware.network.latency.value() + t.bytes() / nic(s)));
}

TEST_CASE("caches sent at once share the decode node's NICs and a prefill GPU's NIC", "[serving][transfer]") {
  const Scenario s = disaggregated(test::kServingBaseline, 2);
  const ServingMemory memory(s, 1000, 3000, std::nullopt);
  const CacheLinks links(s, 16);
  const CacheTransfer t = links.transfer(memory, 1000);
  const double latency = s.hardware.network.latency.value();
  const double alone = t.seconds - latency;
  // 8 prefill GPUs into 8 decode NICs: each still at its own NIC's rate.
  std::vector<PendingTransfer> eight;
  for (int g = 0; g < 8; ++g) eight.push_back({0.0, g, t});
  for (const double a : links.arrivals(eight)) CHECK(a == Approx(t.seconds));
  // 16 prefill GPUs into the same 8 NICs: half the rate each.
  std::vector<PendingTransfer> sixteen;
  for (int g = 0; g < 16; ++g) sixteen.push_back({0.0, g, t});
  for (const double a : links.arrivals(sixteen)) CHECK(a == Approx(latency + 2.0 * alone));
  // Two from one prefill GPU: they share its NIC.
  const std::vector<double> same = links.arrivals({{0.0, 3, t}, {0.0, 3, t}});
  CHECK(same.at(0) == Approx(latency + 2.0 * alone));
  CHECK(same.at(1) == Approx(latency + 2.0 * alone));
}

TEST_CASE("a request's transfer in the prefill pool is slowed by the ones beside it, and the results say by how much",
          "[serving][transfer]") {
  // Two instances (16 GPUs) prefill 16 prompts that arrive together, in one step of 2 s each; their
  // 16 caches then share the decode node's 8 NICs.
  const Scenario s = disaggregated(test::kServingBaseline, 2);
  const ServingMemory memory(s, 1010, 1010, std::nullopt);
  std::vector<Request> requests;
  for (int i = 0; i < 16; ++i) requests.push_back({i, 0.0, 1000, 10});
  const StepTable table({1, 1 << 20}, {1, 1 << 30}, {{2.0, 1.0}, {2.0, 1.0}, {2.0, 1.0}, {2.0, 1.0}});
  const PrefillPoolRun pool = run_prefill_pool(s, s.serving->prefill.instances, requests, table, memory);
  const double latency = s.hardware.network.latency.value();
  for (const PrefillOutcome& o : pool.requests) {
    CHECK(o.end == 2.0);
    CHECK(o.transfer_s == Approx(latency + 2.0 * (o.transfer_alone_s - latency)));
    CHECK(o.ready == Approx(o.end + o.transfer_s));
  }
  StepModel model;
  model.gpu = test::linear_table(0.010, 0.0, 64, 0.25);
  const ServingRun run = run_disaggregated(s, requests, model, memory, table, s.serving->prefill.instances);
  const auto j = serving_json(s, run, model, memory);
  const double alone = pool.requests[0].transfer_alone_s;
  CHECK(j["prefill"]["transfer_s"]["mean"].get<double>() == Approx(2.0 * alone - latency));
  CHECK(j["prefill"]["transfer_contention_s"]["mean"].get<double>() == Approx(alone - latency));
}
