// The benchmark clients' commands, flag by flag (launch_rules.h): vLLM's `vllm bench serve` and
// its older `benchmarks/benchmark_serving.py`, SGLang's `python3 -m sglang.bench_serving`. Their
// random datasets draw lengths differently (launch_command.cpp, arrivals).
#include <string>

#include "sim/config/launch_rules.h"

namespace ess {

namespace {

using F = FlagFate;
using S = LaunchState;
using V = FlagValue;

constexpr std::string_view kClientSide = "client-side: does not change what the server runs";

const std::vector<FlagRule> kClient = {
    {{"--max-concurrency"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.concurrency = v.positive(); return "serving.arrivals.concurrency"; }},
    {{"--num-prompts"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.prompts = v.positive(); return "serving.arrivals.requests"; }},
    {{"--random-input-len", "--random-input"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.input_len = v.positive(); return "serving.arrivals.prompt_tokens"; }},
    {{"--random-output-len", "--random-output"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.output_len = v.positive(); return "serving.arrivals.output_tokens"; }},
    {{"--random-range-ratio"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string {
       s.range_ratio = v.number();
       if (*s.range_ratio > 1.0) v.refuse("takes a ratio in [0, 1], got \"" + v.text + "\"");
       return "the spread of the lengths (below)";
     }},
    {{"--request-rate"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.rate = v.number(); return "the arrival process (below)"; }},
    {{"--dataset-name"}, true, F::used, "",
     +[](S&, const V& v) -> std::string {
       if (v.text != "random") {
         v.refuse("only the random dataset's lengths are known without its files: give --dataset-name random with "
                  "--random-input-len and --random-output-len, or serve a request trace (serving.arrivals.process trace)");
       }
       return "random prompts of the lengths below";
     }},
    {{"--random-prefix-len"}, true, F::used, "",
     +[](S&, const V& v) -> std::string {
       if (v.text != "0") v.refuse("a shared prefix is not modelled (no prefix caching in ess-sim)");
       return "no shared prefix";
     }},
    {{"--burstiness"}, true, F::used, "",
     +[](S&, const V& v) -> std::string {
       if (v.number() != 1.0) v.refuse("only Poisson arrivals (burstiness 1) are modelled");
       return "Poisson arrivals";
     }},
    {{"--ignore-eos"}, false, F::ignored, "every request decodes its output length in ess-sim, as --ignore-eos makes it", nullptr},
    {{"--backend"}, true, F::ignored, kClientSide, nullptr},
    {{"--model"}, true, F::ignored, kClientSide, nullptr},
    {{"--tokenizer"}, true, F::ignored, kClientSide, nullptr},
    {{"--host"}, true, F::ignored, kClientSide, nullptr},
    {{"--port"}, true, F::ignored, kClientSide, nullptr},
    {{"--base-url"}, true, F::ignored, kClientSide, nullptr},
    {{"--endpoint"}, true, F::ignored, kClientSide, nullptr},
    {{"--seed"}, true, F::ignored, kClientSide, nullptr},
    {{"--trust-remote-code"}, false, F::ignored, kClientSide, nullptr},
    {{"--disable-tqdm"}, false, F::ignored, kClientSide, nullptr},
    {{"--save-result"}, false, F::ignored, kClientSide, nullptr},
    {{"--result-dir"}, true, F::ignored, kClientSide, nullptr},
    {{"--result-filename"}, true, F::ignored, kClientSide, nullptr},
    {{"--output-file"}, true, F::ignored, kClientSide, nullptr},
    {{"--percentile-metrics"}, true, F::ignored, kClientSide, nullptr},
    {{"--metric-percentiles"}, true, F::ignored, kClientSide, nullptr},
};

}  // namespace

const std::vector<CommandDialect>& bench_dialects() {
  static const std::vector<CommandDialect> d = {
      {"vllm bench serve", "", {{"vllm", "bench", "serve"}}, false, &kClient},
      {"benchmark_serving.py", "", {{"benchmark_serving.py"}}, false, &kClient},
      {"sglang.bench_serving", "", {{"-m", "sglang.bench_serving"}}, false, &kClient},
  };
  return d;
}

}  // namespace ess
