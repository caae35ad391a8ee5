// The engines' launch commands, flag by flag (launch_rules.h). Sources: vLLM's engine arguments
// (vllm/engine/arg_utils.py), SGLang's server arguments (python/sglang/srt/server_args.py),
// TensorRT-LLM's trtllm-serve options (tensorrt_llm/commands/serve.py).
#include <string>

#include "sim/config/launch_rules.h"

namespace ess {

namespace {

using F = FlagFate;
using S = LaunchState;
using V = FlagValue;

constexpr std::string_view kNotOnGpu = "does not change what runs on the GPUs";
constexpr std::string_view kBounds = "bounds the requests' length; the benchmark's lengths are what run";
constexpr std::string_view kNoReuse =
    "prefix reuse is not modelled: a random dataset's prompts share no prefix, so none is lost";
constexpr std::string_view kMemoryShare =
    "not applied: ess-sim's memory plan (weights, activation estimate, runtime overhead, memory.reserve) decides the cache space";

std::string set_engine(S& s, const std::string& key, nlohmann::ordered_json value) {
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  s.engine_keys[key] = std::move(value);
  return "engine." + key + " = " + text;
}

std::string use_model(S& s, const V& v) {
  s.model = v.text;
  return "the model (below)";
}
std::string kv_dtype(S& s, const V& v) {
  s.kv_cache_dtype = v.text;
  return "the latent cache's dtype (below)";
}
std::string speculative(S&, const V& v) {
  v.refuse("speculative decoding needs the draft's acceptance rate, which a launch does not give: drop the flag and "
           "set workload.mtp.depth and workload.mtp.acceptance with --set in the scenario");
}
std::string graphs_off(S& s, const V&) { return set_engine(s, "cuda_graph_sizes", "none"); }
std::string mixed(S& s, const V&) { return set_engine(s, "prefill_schedule", "mixed"); }

const std::vector<FlagRule> kVllm = {
    {{"--model"}, true, F::used, "", &use_model},
    {{"-tp", "--tensor-parallel-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.tp = v.positive(); return "tensor-parallel ranks (the layout below)"; }},
    {{"-dp", "--data-parallel-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.dp = v.positive(); return "data-parallel ranks (the layout below)"; }},
    {{"--enable-expert-parallel", "-ep"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { s.expert_parallel = true; return "experts split over the MoE group (the layout below)"; }},
    {{"--kv-cache-dtype"}, true, F::used, "", &kv_dtype},
    {{"--max-num-batched-tokens"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.prefill_tokens = v.positive(); return "serving.prefill.tokens_per_gpu (per replica)"; }},
    {{"--max-num-seqs"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.max_running = v.positive(); return "serving.max_batch_per_gpu (per replica)"; }},
    {{"--gpu-memory-utilization"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string {
       s.reserve = 1.0 - v.fraction();
       return "memory.reserve = 1 - " + v.text + " (the HBM vLLM leaves unused)";
     }},
    {{"--enforce-eager"}, false, F::used, "", &graphs_off},
    {{"--async-scheduling"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { return set_engine(s, "host_overlap", "on"); }},
    {{"--enable-chunked-prefill"}, false, F::used, "", &mixed},
    {{"--speculative-config"}, true, F::used, "", &speculative},
    {{"--no-enable-prefix-caching"}, false, F::ignored, kNoReuse, nullptr},
    {{"--enable-prefix-caching"}, false, F::assumed, kNoReuse, nullptr},
    {{"--max-model-len"}, true, F::ignored, kBounds, nullptr},
    {{"--block-size"}, true, F::assumed, "paged blocks are not modelled: a request's cache is held per token", nullptr},
    {{"--quantization", "-q"}, true, F::assumed, "the model preset's weights are priced (FP8 for the DeepSeek presets)", nullptr},
    {{"--dtype"}, true, F::assumed, "the model preset's activation dtype is priced", nullptr},
    {{"--compilation-config", "-O"}, true, F::assumed, "torch.compile settings are not modelled; CUDA graphs follow engine.cuda_graph_sizes", nullptr},
    {{"--trust-remote-code"}, false, F::ignored, kNotOnGpu, nullptr},
    {{"--host"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--port"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--served-model-name"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--tokenizer"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--download-dir"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--seed"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--disable-log-requests"}, false, F::ignored, kNotOnGpu, nullptr},
    {{"--disable-log-stats"}, false, F::ignored, kNotOnGpu, nullptr},
    {{"--uvicorn-log-level"}, true, F::ignored, kNotOnGpu, nullptr},
};

std::string sglang_ep(S& s, const V&) {
  if (!s.ep) s.ep = s.tp;
  return "experts split over the MoE group (the layout below)";
}

const std::vector<FlagRule> kSglang = {
    {{"--model-path", "--model"}, true, F::used, "", &use_model},
    {{"--tp", "--tp-size", "--tensor-parallel-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.tp = v.positive(); return "GPUs of the model (the layout below)"; }},
    {{"--dp", "--dp-size", "--data-parallel-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.dp = v.positive(); return "data-parallel ranks (the layout below)"; }},
    {{"--enable-dp-attention"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { s.dp_attention = true; return "attention data-parallel (the layout below)"; }},
    {{"--ep", "--ep-size", "--expert-parallel-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.ep = v.positive(); return "expert-parallel ranks (the layout below)"; }},
    {{"--enable-ep-moe", "--enable-deepep-moe"}, false, F::used, "", &sglang_ep},
    {{"--moe-a2a-backend"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string {
       if (v.text == "none") return "no all-to-all backend: MoE as the layout gives it";
       if (v.text != "deepep") v.refuse("ess-sim prices DeepEP's all-to-all only; \"" + v.text + "\" is not priced");
       return sglang_ep(s, v);
     }},
    {{"--chunked-prefill-size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.prefill_tokens = v.positive(); return "serving.prefill.tokens_per_gpu (below)"; }},
    {{"--max-running-requests"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.max_running = v.positive(); return "serving.max_batch_per_gpu (below)"; }},
    {{"--cuda-graph-max-bs"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { return set_engine(s, "cuda_graph_max_batch", v.positive()); }},
    {{"--disable-cuda-graph"}, false, F::used, "", &graphs_off},
    {{"--enable-mixed-chunk"}, false, F::used, "", &mixed},
    {{"--disable-overlap-schedule"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { return set_engine(s, "host_overlap", "off"); }},
    {{"--enable-eplb"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { return set_engine(s, "eplb", "on"); }},
    {{"--enable-two-batch-overlap"}, false, F::used, "",
     +[](S& s, const V&) -> std::string { s.execution["micro_batches"] = 2; return "execution.micro_batches = 2"; }},
    {{"--kv-cache-dtype"}, true, F::used, "", &kv_dtype},
    {{"--attention-backend"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string {
       if (v.text == "flashmla") return set_engine(s, "mla_kernel", "flashmla");
       return "priced as FlashMLA (an assumption: no measurement of the " + v.text + " MLA kernel is bundled)";
     }},
    {{"--speculative-algorithm"}, true, F::used, "", &speculative},
    {{"--mem-fraction-static"}, true, F::assumed, kMemoryShare, nullptr},
    {{"--disable-radix-cache"}, false, F::ignored, kNoReuse, nullptr},
    {{"--enable-torch-compile"}, false, F::assumed, "torch.compile is not modelled", nullptr},
    {{"--context-length"}, true, F::ignored, kBounds, nullptr},
    {{"--nnodes"}, true, F::ignored, "the nodes follow from the GPUs of the layout and the hardware's GPUs per node", nullptr},
    {{"--node-rank"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--dist-init-addr"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--trust-remote-code"}, false, F::ignored, kNotOnGpu, nullptr},
    {{"--host"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--port"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--served-model-name"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--log-level"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--random-seed"}, true, F::ignored, kNotOnGpu, nullptr},
};

const std::vector<FlagRule> kTrtllm = {
    {{"--tp_size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.tp = v.positive(); return "tensor-parallel ranks (the layout below)"; }},
    {{"--ep_size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.ep = v.positive(); return "expert-parallel ranks (the layout below)"; }},
    {{"--pp_size"}, true, F::used, "",
     +[](S&, const V& v) -> std::string {
       if (v.positive() != 1) v.refuse("pipeline parallelism is not modelled");
       return "no pipeline stages";
     }},
    {{"--max_batch_size"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.max_running = v.positive(); return "serving.max_batch_per_gpu (per replica)"; }},
    {{"--max_num_tokens"}, true, F::used, "",
     +[](S& s, const V& v) -> std::string { s.prefill_tokens = v.positive(); return "serving.prefill.tokens_per_gpu (per replica)"; }},
    {{"--backend"}, true, F::used, "",
     +[](S&, const V& v) -> std::string {
       if (v.text != "pytorch") return "the trtllm presets describe the PyTorch backend; \"" + v.text + "\" is priced as it (an assumption)";
       return "the PyTorch backend the trtllm presets describe";
     }},
    {{"--max_seq_len"}, true, F::ignored, kBounds, nullptr},
    {{"--kv_cache_free_gpu_memory_fraction"}, true, F::assumed, kMemoryShare, nullptr},
    {{"--extra_llm_api_options"}, true, F::assumed,
     "not read (a YAML file): what it sets (enable_attention_dp, cuda_graph_config, ...) is not applied; give it with --set "
     "(parallelism.attention_dp, engine.*)",
     nullptr},
    {{"--trust_remote_code"}, false, F::ignored, kNotOnGpu, nullptr},
    {{"--host"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--port"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--log_level"}, true, F::ignored, kNotOnGpu, nullptr},
    {{"--tokenizer"}, true, F::ignored, kNotOnGpu, nullptr},
};

}  // namespace

const std::vector<CommandDialect>& serve_dialects() {
  static const std::vector<CommandDialect> d = {
      {"vllm serve", "vllm", {{"vllm", "serve"}}, true, &kVllm},
      {"vllm api_server", "vllm", {{"-m", "vllm.entrypoints.openai.api_server"}}, false, &kVllm},
      {"sglang.launch_server", "sglang", {{"-m", "sglang.launch_server"}, {"sglang", "serve"}}, false, &kSglang},
      {"trtllm-serve", "trtllm", {{"trtllm-serve", "serve"}, {"trtllm-serve"}}, true, &kTrtllm},
  };
  return d;
}

}  // namespace ess
