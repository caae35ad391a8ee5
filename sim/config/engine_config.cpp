#include "sim/config/engine_config.h"

#include <algorithm>
#include <string>

namespace ess {

namespace {

void range(std::vector<std::int64_t>& out, std::int64_t from, std::int64_t to_exclusive, std::int64_t step) {
  for (std::int64_t b = from; b < to_exclusive; b += step) out.push_back(b);
}

std::vector<std::int64_t> no_graphs(std::int64_t) { return {}; }

// vLLM's set_cudagraph_sizes: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16).
std::vector<std::int64_t> vllm_sizes(std::int64_t max_batch) {
  std::vector<std::int64_t> s = {1, 2, 4};
  range(s, 8, 256, 8);
  range(s, 256, max_batch + 1, 16);
  return s;
}

// SGLang's server_args.py decode sizes: [1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16)
// + range(512, max + 1, 32).
std::vector<std::int64_t> sglang_sizes(std::int64_t max_batch) {
  std::vector<std::int64_t> s = {1, 2, 4, 8, 12};
  range(s, 16, 257, 8);
  range(s, 272, 512, 16);
  range(s, 512, max_batch + 1, 32);
  return s;
}

}  // namespace

const std::vector<CudaGraphRule>& cuda_graph_rules() {
  static const std::vector<CudaGraphRule> rules = {
      {"none", "no padding: every batch runs at its own size", &no_graphs},
      {"vllm", "vLLM: 1, 2, 4, multiples of 8 to 248, of 16 from 256", &vllm_sizes},
      {"sglang", "SGLang: 1, 2, 4, 8, 12, multiples of 8 to 256, of 16 to 496, of 32 from 512", &sglang_sizes},
  };
  return rules;
}

std::int64_t EngineConfig::graph_batch(std::int64_t requests) const {
  const auto it = std::lower_bound(captured.begin(), captured.end(), requests);
  return it == captured.end() ? requests : *it;
}

const std::vector<EngineKey>& engine_keys() {
  using J = nlohmann::ordered_json;
  using K = KeyShown;
  static const std::vector<EngineKey> keys = {
      {"mla_kernel", "mla_kernel", K::decode, false,
       [](ObjectReader& r, EngineConfig& e) { e.mla_kernel = find_mla_kernel(r.choice("mla_kernel", mla_kernel_names())); },
       [](const EngineConfig& e) { return J(std::string(e.mla_kernel->name)); }},
      // A gap above 1 ms would be a host-bound step, not a kernel's launch: out of range.
      {"kernel_gap", "kernel_gap_s", K::both, true,
       [](ObjectReader& r, EngineConfig& e) { e.kernel_gap = r.seconds("kernel_gap", Range::closed(0.0, 1e-3)); },
       [](const EngineConfig& e) { return J(e.kernel_gap.value()); }},
      {"eplb", "eplb", K::both, false,
       [](ObjectReader& r, EngineConfig& e) { e.eplb = r.choice("eplb", {"on", "off"}) == "on"; },
       [](const EngineConfig& e) { return J(e.eplb); }},
      {"prefill_alltoall_sms", "prefill_alltoall_sms", K::prefill, true,
       [](ObjectReader& r, EngineConfig& e) {
         e.prefill_alltoall_sms = static_cast<int>(r.integer("prefill_alltoall_sms", Range::closed(0, 4096)));
       },
       [](const EngineConfig& e) { return J(e.prefill_alltoall_sms); }},
      {"prefill_alltoall_overlap_efficiency", "prefill_alltoall_overlap_efficiency", K::prefill, true,
       [](ObjectReader& r, EngineConfig& e) {
         e.prefill_alltoall_overlap_efficiency =
             r.number("prefill_alltoall_overlap_efficiency", Range::closed(kMinAlltoallOverlapEfficiency, 1.0));
       },
       [](const EngineConfig& e) { return J(e.prefill_alltoall_overlap_efficiency); }},
      {"cuda_graph_sizes", "cuda_graph_sizes", K::decode, false,
       [](ObjectReader& r, EngineConfig& e) {
         std::vector<std::string> rules;
         for (const auto& rule : cuda_graph_rules()) rules.emplace_back(rule.name);
         e.cuda_graph_sizes = r.choice("cuda_graph_sizes", rules);
       },
       [](const EngineConfig& e) { return J(e.cuda_graph_sizes); }},
      {"cuda_graph_max_batch", "cuda_graph_max_batch", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.cuda_graph_max_batch = r.integer("cuda_graph_max_batch", Range::closed(0, 1 << 16)); },
       [](const EngineConfig& e) { return J(e.cuda_graph_max_batch); }},
      {"host_step_time", "host_step_time_s", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.host_step_time = r.seconds("host_step_time", Range::closed(0.0, 0.1)); },
       [](const EngineConfig& e) { return J(e.host_step_time.value()); }},
      {"host_request_time", "host_request_time_s", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.host_request_time = r.seconds("host_request_time", Range::closed(0.0, 1e-3)); },
       [](const EngineConfig& e) { return J(e.host_request_time.value()); }},
      {"host_overlap", "host_overlap", K::decode, false,
       [](ObjectReader& r, EngineConfig& e) { e.host_overlap = r.choice("host_overlap", {"on", "off"}) == "on"; },
       [](const EngineConfig& e) { return J(e.host_overlap); }},
      {"eager_launch_time", "eager_launch_time_s", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.eager_launch_time = r.seconds("eager_launch_time", Range::closed(0.0, 1e-4)); },
       [](const EngineConfig& e) { return J(e.eager_launch_time.value()); }},
      {"prefill_schedule", "prefill_schedule", K::decode, false,
       [](ObjectReader& r, EngineConfig& e) {
         e.prefill_first = r.choice("prefill_schedule", {"mixed", "prefill_first"}) == "prefill_first";
       },
       [](const EngineConfig& e) { return J(e.prefill_first ? "prefill_first" : "mixed"); }},
      // One sigma of ln(simulated / measured); 3 is a factor of 20 either way, no model's error.
      {"serving_error_ttft", "serving_error_ttft", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.serving_error.ttft = r.optional_number("serving_error_ttft", Range::closed(0.0, 3.0)); },
       [](const EngineConfig& e) { return e.serving_error.ttft ? J(*e.serving_error.ttft) : J(nullptr); }},
      {"serving_error_tpot", "serving_error_tpot", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) { e.serving_error.tpot = r.optional_number("serving_error_tpot", Range::closed(0.0, 3.0)); },
       [](const EngineConfig& e) { return e.serving_error.tpot ? J(*e.serving_error.tpot) : J(nullptr); }},
      {"serving_error_throughput", "serving_error_throughput", K::decode, true,
       [](ObjectReader& r, EngineConfig& e) {
         e.serving_error.throughput = r.optional_number("serving_error_throughput", Range::closed(0.0, 3.0));
       },
       [](const EngineConfig& e) { return e.serving_error.throughput ? J(*e.serving_error.throughput) : J(nullptr); }},
  };
  return keys;
}

EngineConfig read_engine(ObjectReader& r) {
  EngineConfig e;
  e.name = r.text("name");
  (void)r.optional_text("description");
  e.version = r.text("version");
  for (const EngineKey& key : engine_keys()) key.read(r, e);
  for (const auto& rule : cuda_graph_rules()) {
    if (rule.name != e.cuda_graph_sizes) continue;
    for (const std::int64_t size : rule.sizes(e.cuda_graph_max_batch)) {
      if (size <= e.cuda_graph_max_batch) e.captured.push_back(size);
    }
  }
  r.finish();
  return e;
}

nlohmann::ordered_json engine_summary(const EngineConfig& e, std::optional<std::int64_t> decode_requests) {
  nlohmann::ordered_json j = {{"name", e.name}, {"version", e.version}};
  const KeyShown run = decode_requests ? KeyShown::decode : KeyShown::prefill;
  for (const EngineKey& key : engine_keys()) {
    if (key.shown == KeyShown::both || key.shown == run) j[std::string(key.summary)] = key.value(e);
  }
  if (decode_requests) j["graph_batch"] = e.graph_batch(*decode_requests);
  return j;
}

}  // namespace ess
