// What the `ess-sim cost` operations share across their files (cmd_cost*.cpp): the model presets,
// options a model may fill, the text and JSON every operation prints, and one add function per
// operation (cmd_cost.cpp lists them).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/cost.h"
#include "models/hardware.h"
#include "sim/cli/commands.h"
#include "sim/config/model_config.h"

namespace ess {

// A model preset by name; ConfigError naming --model with a "did you mean" when unknown.
[[nodiscard]] ModelConfig load_model_preset(const std::string& name);
// The same for an MoE operator: a model with a dense MLP is refused.
[[nodiscard]] ModelConfig load_moe_model_preset(const std::string& name);

namespace cost_cli {

// The operations, one file each; each adds its subcommand to `cost`.
void add_cost_gemm_command(CLI::App* cost, CommandAction& action);              // cmd_cost_basic.cpp
void add_cost_norm_command(CLI::App* cost, CommandAction& action);              // cmd_cost_basic.cpp
void add_cost_copy_command(CLI::App* cost, CommandAction& action);              // cmd_cost_basic.cpp
void add_cost_allreduce_command(CLI::App* cost, CommandAction& action);         // cmd_cost_basic.cpp
void add_cost_alltoall_command(CLI::App* cost, CommandAction& action);          // cmd_cost_basic.cpp
void add_cost_attention_command(CLI::App* cost, CommandAction& action);         // cmd_cost_attention.cpp
void add_cost_indexer_command(CLI::App* cost, CommandAction& action);           // cmd_cost_indexer.cpp
void add_cost_grouped_gemm_command(CLI::App* cost, CommandAction& action);      // cmd_cost_grouped_gemm.cpp
void add_cost_dispatch_command(CLI::App* cost, CommandAction& action);          // cmd_cost_alltoall.cpp
void add_cost_combine_command(CLI::App* cost, CommandAction& action);           // cmd_cost_alltoall.cpp
void add_cost_routing_command(CLI::App* cost, CommandAction& action);           // cmd_cost_routing.cpp
void add_cost_prefill_command(CLI::App* cost, CommandAction& action);           // cmd_cost_prefill.cpp

// ---- Options and their values ----

// Counts on the command line: 1 to 2^40.
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

// A ConfigError about an option (`what`: "--model X", "cost attention").
[[noreturn]] void bad_option(const std::string& what, const std::string& message);

// "1048576", "1MiB" or "64MB" -> bytes, for the option `option` (errors name it).
[[nodiscard]] Bytes parse_bytes_argument(const std::string& text, const std::string& option = "--bytes");
// A dtype name the option's IsMember check already admitted.
[[nodiscard]] DType dtype_of(const std::string& name);

// A required count option in [1, kMaxCount].
CLI::Option* add_count(CLI::App* cmd, const std::string& name, std::int64_t& target, const std::string& help);

// The operators of the decode step (attention, indexer, grouped GEMM, dispatch and combine) name
// their options after the model's quantities; `--model PRESET` fills every one that a model
// determines, and an option given explicitly wins over the model's value. The shapes are the ones
// sim/graph/decode_step.cpp passes to the same model functions, so `cost` prices exactly what a
// simulation prices (tests/contract/cost_step_graph_test.cpp holds them equal).

// An option that may be left to the model preset: given() says whether the user wrote it.
template <class T>
struct Given {
  T value{};
  CLI::Option* option = nullptr;
  [[nodiscard]] bool given() const { return option != nullptr && option->count() > 0; }
  [[nodiscard]] std::string name() const { return option->get_name(); }
};

// An optional count option in [1, kMaxCount], or a text option.
void add_count(CLI::App* cmd, const std::string& name, Given<std::int64_t>& target, const std::string& help);
void add_text(CLI::App* cmd, const std::string& name, Given<std::string>& target, const std::string& help);
// --hardware and --json of the decode-step operators.
void add_common_hardware(CLI::App* cmd, std::string& hardware, bool& json);

// `v` when the model is there (`has`), else none.
[[nodiscard]] std::optional<std::int64_t> if_model(bool has, std::int64_t v);

// Collects the options that neither the command line nor the model gave, to name them all at once.
class Resolver {
 public:
  Resolver(std::string command, bool has_model);
  // The option's value, else the model's, else 0 and the option is recorded as missing.
  std::int64_t count(const Given<std::int64_t>& o, std::optional<std::int64_t> from_model);
  // A size with a unit ("656B"), > 0; else the model's, else 1 B and the option is recorded as missing.
  Bytes size(const Given<std::string>& o, std::optional<Bytes> from_model);
  // Throws ConfigError naming every missing option.
  void finish() const;

 private:
  std::string command_;
  bool has_model_;
  std::vector<std::string> missing_;
};

// Refuses options that do not apply to what is being priced ("--kv-heads applies to gqa only").
void refuse_unused(const std::vector<const CLI::Option*>& options, const std::string& why);

// ---- What the operations print ----

// Seconds with 4 significant digits in the largest unit that keeps the number >= 1 ("12.5 us").
[[nodiscard]] std::string human_time(Seconds t);
// 4 significant digits with a k/M/G/T prefix ("1.5 GFLOP").
[[nodiscard]] std::string human_count(double v, const char* unit);

// {"seconds": t}, a line.
void print_seconds_json(std::ostream& out, Seconds t);
// One JSON object, a line.
void print_json(std::ostream& out, const nlohmann::ordered_json& j);
// A kernel's time and its parts: compute, memory, overhead (and the table/roofline pair of a
// measured GEMM).
void print_kernel(std::ostream& out, const std::string& what, const std::string& hardware, const KernelCost& c);
// A transfer's time and its effective bandwidth.
void print_transfer(std::ostream& out, const std::string& what, const std::string& hardware, Seconds t, Bytes bytes);

// Which hardware fields a kernel's roofline read: the peak of `peak_dtype` (none for a bytes-only
// kernel), the HBM bandwidth and the parameter set `params` ("hardware.kernels.attention").
struct KernelSource {
  std::optional<DType> peak_dtype;
  std::string params;
  RooflineParams p;
  std::optional<double> topk_passes;
};

[[nodiscard]] KernelSource kernel_source(std::optional<DType> peak, const std::string& params, const RooflineParams& p);
// "uses hardware.gpu.peak_compute.X ... x PARAMS.compute_efficiency ...": the fields behind a kernel's time.
void print_uses(std::ostream& out, const Hardware& hw, const KernelSource& k);
// {"field": name, "value": value}.
[[nodiscard]] nlohmann::ordered_json field(const std::string& name, double value);
// {"seconds", "op", "bound", "compute_s", "memory_s", "overhead_s", "flops", "bytes", "shape", "hardware"}.
[[nodiscard]] nlohmann::ordered_json kernel_json(const std::string& op, const KernelCost& c, const Hardware& hw,
                                                 const KernelSource& k, nlohmann::ordered_json shape);

}  // namespace cost_cli

}  // namespace ess
