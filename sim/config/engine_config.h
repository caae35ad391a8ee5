// The serving engine a scenario runs (scenarios/engines/: deepseek, sglang, vllm, trtllm): the
// choices of an engine that change what a decode step costs, each one a kernel or a schedule the
// cost models price (never an efficiency fitted to an end-to-end number).
//
//   "engine": "sglang"                                  a preset
//   "engine": {"preset": "vllm", "kernel_gap": "1us"}   a preset with overrides
//   (absent)                                            the "deepseek" preset, recorded as the default
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/mla_kernels.h"
#include "models/units.h"
#include "sim/config/reader.h"

namespace ess {

// The least engine.prefill_alltoall_overlap_efficiency accepted: a tenth of the ports' rate, seven
// times below the 0.72 fitted on the measured prefill rows. Values near 0 are no deployment's and
// broke the flow arithmetic (1e-9 gave a 1.26e9 s step, 1e-12 a step faster than at 1).
inline constexpr double kMinAlltoallOverlapEfficiency = 0.1;

inline constexpr std::string_view kDefaultEngine = "deepseek";

struct EngineConfig {
  std::string name;     // the engine ("deepseek", "sglang", "vllm", "trtllm")
  std::string version;  // the releases the choices describe
  // The MLA decode kernel (models/mla_kernels.h): its query-row tile and MMA input type.
  const MlaKernel* mla_kernel = nullptr;
  // GPU time between two consecutive kernels of a step, paid once per launched kernel (a step's
  // kernels replay from a CUDA graph: the launch cost per graph node).
  Seconds kernel_gap;
  // Expert-parallel load balancing (deepseek-ai/EPLB): redundant experts replicate the hottest
  // experts and experts are placed on ranks by their measured load (sim/graph/expert_routing.h).
  // Off: routed expert e sits on rank e / experts_per_rank, and redundant_experts must be 0.
  bool eplb = false;
  // SMs the prefill all-to-all kernels (DeepEP's normal dispatch and combine) hold while in flight:
  // compute running beside them (two-batch overlap) gets the rest (hardware.gpu.sm_count). The
  // decode kernels (low-latency) hold none once their RDMA is issued.
  int prefill_alltoall_sms = 0;
  // The share of its bandwidth alone that the prefill all-to-all (those SM-holding kernels) keeps
  // while the other micro-batch computes beside it (two-batch overlap): its flows move each byte at
  // this share of the ports' rate. 1: unslowed, as DeepEP's unit tests run it.
  double prefill_alltoall_overlap_efficiency = 1.0;  // in [kMinAlltoallOverlapEfficiency, 1]
  // CUDA graphs: the batch sizes the engine captures (a rule of cuda_graph_rules(): "none", or an
  // engine's default list up to cuda_graph_max_batch); a decode batch is padded to the smallest
  // captured size >= it, and runs unpadded (eagerly) above the largest.
  std::string cuda_graph_sizes = "none";
  std::int64_t cuda_graph_max_batch = 0;
  std::vector<std::int64_t> captured;  // the rule's sizes up to cuda_graph_max_batch, ascending
  // Host time on the critical path of every decode step: the GPUs idle while the engine's CPU
  // schedules the step, samples and processes its outputs, beyond what it overlaps with the GPU:
  // host_step_time + host_request_time x the replica's requests.
  Seconds host_step_time;
  Seconds host_request_time;
  // The engine prepares step k+1 on the CPU while the GPU runs step k (SGLang's overlap scheduler,
  // TensorRT-LLM's, vLLM's async scheduling): a step then lasts max(GPU time, host time) instead
  // of their sum.
  bool host_overlap = false;
  // CPU time to launch one kernel outside a CUDA graph: in a step that runs eagerly (one with a
  // prompt chunk, or a batch above the largest captured size) every kernel takes at least this
  // long, the GPU waiting for its launch when the kernel is shorter.
  Seconds eager_launch_time;
  // Colocated serving's schedule when prompts wait (sim/serving/serving_loop.h): "mixed", a step
  // runs the replica's decode tokens and prompt chunks together under the token budget (vLLM V1's
  // scheduler, TensorRT-LLM's in-flight batching); "prefill_first", a replica with prompts waiting
  // runs a step of prompt chunks only and its decoding requests wait (vLLM V0's default scheduler,
  // SGLang's without --enable-mixed-chunk).
  bool prefill_first = false;
  // The engine model's own error in serving, per metric: one sigma of ln(simulated / measured)
  // over the release's serving benchmarks (scenarios/benchmarks/serving-benchmarks.csv), each row
  // simulated with the host time fitted on the release's other rows (validate/fit-engine-host.sh;
  // releases with too few rows take the pool of the fitted ones). A serving run's band adds it to
  // the calibration band in quadrature (sim/serving/serving_band.h). nullopt: unknown.
  struct ServingError {
    std::optional<double> ttft, tpot, throughput;
  } serving_error;
  // What each request of a step adds to its length on the host: host_request_time, unless the
  // engine overlaps its host time with the GPU (then a floor the step rarely reaches).
  [[nodiscard]] Seconds exposed_host_request_time() const { return host_overlap ? Seconds(0.0) : host_request_time; }
  // Whether a decode pass of `requests` requests of one replica runs eagerly (no CUDA graph): a
  // batch above the largest captured size, for an engine that captures graphs.
  [[nodiscard]] bool eager(std::int64_t requests) const { return !captured.empty() && requests > captured.back(); }
  // The batch the kernels compute for `requests` requests of one replica.
  [[nodiscard]] std::int64_t graph_batch(std::int64_t requests) const;
};

// The capture-size rules: name and the sizes up to `max_batch`, ascending.
struct CudaGraphRule {
  std::string_view name;
  std::string_view summary;  // one line, for `ess-sim policies`
  std::vector<std::int64_t> (*sizes)(std::int64_t max_batch);
};
[[nodiscard]] const std::vector<CudaGraphRule>& cuda_graph_rules();

// Which summaries of results.json show a key: decode runs', prefill runs', or both.
enum class KeyShown { decode, prefill, both };

// One engine key, declared once (engine_keys(), in reading order): read_engine reads it, every
// run's summary.engine shows it (under `summary`, in declaration order), a sweep has a column
// `engine_<summary>` for a number decode summaries show, and scenarios/README.md's engine table has
// its row (tests/config/engine_keys_test.cpp holds the table to the declarations). Adding a key:
// its EngineConfig field, its line here, its row there, and the code that uses it; the presets
// give it a value with its source.
struct EngineKey {
  std::string_view name;     // engine.<name> in a scenario
  std::string_view summary;  // results.json summary.engine.<summary>
  KeyShown shown = KeyShown::both;
  bool number = false;  // shown as a JSON number
  void (*read)(ObjectReader& r, EngineConfig& e) = nullptr;
  nlohmann::ordered_json (*value)(const EngineConfig& e) = nullptr;
};
[[nodiscard]] const std::vector<EngineKey>& engine_keys();

// Reads the resolved engine section (the preset already merged in): name, description and
// version, then every declared key.
[[nodiscard]] EngineConfig read_engine(ObjectReader& r);

// results.json's summary.engine: name, version and each key the run's kind shows; a decode run
// (`decode_requests`: requests of one replica) adds the batch its kernels compute (graph_batch).
[[nodiscard]] nlohmann::ordered_json engine_summary(const EngineConfig& e, std::optional<std::int64_t> decode_requests);

}  // namespace ess
