// ess-runner's command line: parsing, validation and the config object of its trace.
//
// Every option takes a value ("--batch 8" or "--batch=8") except the flag --self-test. All options
// without a default are required, unless --self-test is given (it runs only the kernel checks).
// Errors are OptionsError with a message that names the option, what was expected and what was
// given; the program prints it and exits with status 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/offload/eviction.h"
#include "sim/offload/gpu_pool.h"

namespace ess::runner {

class OptionsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a layer's miss fetch is ordered against its attention (sim/graph/decode_step.cpp):
//  serial: the fetch runs after q_absorb and the compute stream waits for it before sparse_mla;
//  da:     sparse_mla_hits runs during the fetch, then sparse_mla_misses and attention_merge.
enum class OverlapMode { serial, da };
// How misses cross PCIe: a UVA gather kernel, or one cudaMemcpyAsync per contiguous run.
enum class TransferPath { gather, copy };

[[nodiscard]] const char* to_string(OverlapMode mode);
[[nodiscard]] const char* to_string(TransferPath path);

struct RunnerOptions {
  // Model shape (DeepSeek-V3.2-Exp: 7168, 1536, 512, 128, 128, 64, 128, 64, 128, 2048, 18432, 129280).
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t q_lora = 0;
  std::int64_t kv_lora = 0;
  std::int64_t heads = 0;
  std::int64_t qk_nope = 0;
  std::int64_t qk_rope = 0;
  std::int64_t v_head = 0;
  std::int64_t indexer_heads = 0;
  std::int64_t indexer_dim = 0;
  std::int64_t top_k = 0;
  std::int64_t ffn = 0;
  std::int64_t vocab = 0;
  // Workload: one query token per request per step (no MTP); step s runs at context + s tokens.
  std::int64_t batch = 0;
  std::int64_t context = 0;
  std::int64_t steps = 0;
  std::int64_t warmup_steps = 2;
  // GPU pool per request and layer, as sim/offload/cache_sim.h: a fixed capacity (raised, if
  // needed, to one selection outside the pinned window) plus the newest `pinned_recent` tokens.
  std::int64_t pool_entries = 0;
  std::int64_t pinned_recent = 0;
  std::string eviction{kDefaultEviction};  // a registered eviction policy (sim/offload/eviction.h)
  PolicyValues eviction_params;  // every declared eviction parameter (--heat-decay, ...), defaults filled
  OverlapMode overlap = OverlapMode::serial;
  TransferPath transfer = TransferPath::gather;
  std::string access;                          // the ESS-TOPK access trace
  std::optional<std::string> scenario_sha256;  // 64 hex digits, copied into the trace
  std::string out;                             // the Chrome trace to write
  int device = 0;
  bool self_test = false;
};

struct Command {
  enum class Action { run, help, version };
  Action action = Action::run;
  RunnerOptions options;
};

// Parses the arguments after the program name. --help / -h and --version anywhere win over
// everything else. Throws OptionsError.
[[nodiscard]] Command parse_command_line(const std::vector<std::string>& args);

// The usage text printed by --help.
[[nodiscard]] std::string usage_text();

// The trace's otherData.config: every option (given or defaulted) in usage order, keyed by its
// name without the leading dashes ("q-lora"), each value as JSON text: numbers as numbers,
// choices and paths as strings, --self-test as true/false, --scenario-sha256 as null when absent.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> config_fields(const RunnerOptions& options);

}  // namespace ess::runner
