// The flag tables behind translate_launch (launch_command.h): what each engine's launch command
// and each benchmark client's command is, flag by flag. One table per command dialect
// (launch_engines.cpp: vLLM, SGLang, TensorRT-LLM; launch_clients.cpp: the benchmark clients), one
// line per flag; launch_command.cpp turns the state they fill into a scenario.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/launch_command.h"

namespace ess {

// What the commands' flags said, before it becomes a scenario.
struct LaunchState {
  // The launch.
  std::string engine;  // "vllm", "sglang" or "trtllm"
  std::string model;   // as typed
  std::int64_t tp = 1;
  std::int64_t dp = 1;
  std::optional<std::int64_t> ep;  // expert-parallel ranks (SGLang --ep, TensorRT-LLM --ep_size)
  bool expert_parallel = false;    // vLLM --enable-expert-parallel: EP over the MoE group
  bool dp_attention = false;       // SGLang --enable-dp-attention
  std::optional<std::int64_t> prefill_tokens;  // the token budget as the engine takes it
  std::optional<std::int64_t> max_running;     // requests at once, as the engine takes it
  std::string kv_cache_dtype = "auto";
  std::optional<double> reserve;                   // memory.reserve
  nlohmann::ordered_json engine_keys = nlohmann::ordered_json::object();  // engine keys the flags set
  nlohmann::ordered_json execution = nlohmann::ordered_json::object();  // execution keys the flags set
  // The benchmark.
  std::string client;  // the client dialect's name
  std::optional<std::int64_t> concurrency;
  std::optional<std::int64_t> prompts;
  std::optional<std::int64_t> input_len;
  std::optional<std::int64_t> output_len;
  std::optional<double> rate;  // requests per second; nullopt or infinity: all at once
  std::optional<double> range_ratio;
};

// A flag's value checked as what the flag takes: ConfigError naming the command and the flag.
struct FlagValue {
  std::string command;  // "serve" or "bench", for errors
  std::string flag;
  std::string text;
  [[nodiscard]] std::int64_t positive() const;
  [[nodiscard]] double fraction() const;  // in (0, 1]
  [[nodiscard]] double number() const;    // finite and >= 0, or "inf"
  [[nodiscard]] bool on() const;          // a boolean flag given a value: true/false/1/0
  [[noreturn]] void refuse(const std::string& why) const;
};

// Applies a used flag (or refuses it by throwing): returns what it set, for the report.
using FlagApply = std::string (*)(LaunchState& s, const FlagValue& v);

struct FlagRule {
  std::vector<std::string_view> names;  // every spelling, "-tp" and "--tensor-parallel-size"
  bool takes_value = true;              // false: a switch ("--enable-expert-parallel")
  FlagFate fate = FlagFate::used;
  std::string_view why;                 // ignored / assumed: why, or what ess-sim does instead
  FlagApply apply = nullptr;            // used, and assumed flags that still set something
};

// A command: how it starts (after an optional "python"/"python3"), e.g. {"vllm", "serve"} or
// {"-m", "sglang.launch_server"}; a script path matches by its file name.
struct CommandDialect {
  std::string_view name;    // "vllm serve"
  std::string_view engine;  // serve dialects: the engine ("vllm"); clients: ""
  std::vector<std::vector<std::string_view>> starts;
  bool positional_model = false;  // the word after the start is the model (vllm serve MODEL)
  const std::vector<FlagRule>* rules = nullptr;
};

[[nodiscard]] const std::vector<CommandDialect>& serve_dialects();
[[nodiscard]] const std::vector<CommandDialect>& bench_dialects();

}  // namespace ess
