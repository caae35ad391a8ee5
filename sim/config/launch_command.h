// Launch and benchmark commands as a serving scenario: `vllm serve MODEL -tp 8
// --enable-expert-parallel` (or SGLang's `python3 -m sglang.launch_server`, TensorRT-LLM's
// `trtllm-serve`) with the client that loaded it (`vllm bench serve`, `python3 -m
// sglang.bench_serving`, vLLM's `benchmarks/benchmark_serving.py`) become one scenario document:
// the layout the flags launch (scenarios/README.md's flag table), the engine preset and the
// settings each flag changes, the client's arrivals and lengths, colocated prefill under the
// engine's token budget. Every flag of both commands is reported: used (the keys it set), ignored
// (with why: it does not change what ess-sim predicts) or assumed (what ess-sim does instead); a
// flag no table knows, a value a flag does not take, or a layout ess-sim cannot model is a
// ConfigError naming the command and the flag, never dropped.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

enum class FlagFate { used, ignored, assumed };
[[nodiscard]] std::string_view fate_name(FlagFate f);

// What became of one flag (or of an engine default the commands left unset).
struct FlagReport {
  std::string command;  // "serve" or "bench"
  std::string flag;     // as typed, with its value: "-tp 8"; what the flags made together: "(layout)"
  FlagFate fate = FlagFate::used;
  std::string effect;   // the settings it made, or why it is ignored, or what is assumed
};

struct LaunchRequest {
  std::string serve;     // the engine's launch command
  std::string bench;     // the benchmark client's command
  std::string hardware;  // a hardware preset or profile path (no launch flag names the GPU)
  std::optional<std::string> engine;  // an engine preset of the launch's engine (default: its late release)
  std::string name = "from-launch";
};

struct LaunchTranslation {
  nlohmann::ordered_json scenario;  // schema ess-sim/scenario/v1
  std::vector<FlagReport> report;   // serve's flags, then bench's, then the defaults used
};

[[nodiscard]] LaunchTranslation translate_launch(const LaunchRequest& request);

// Shell-like words: whitespace separates, '...' and "..." quote, a backslash escapes the next
// character (a backslash-newline joins lines). ConfigError (origin `what`) on an open quote.
[[nodiscard]] std::vector<std::string> split_command(std::string_view text, const std::string& what);

}  // namespace ess
