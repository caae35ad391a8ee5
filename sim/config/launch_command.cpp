#include "sim/config/launch_command.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "sim/base/text.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/launch_rules.h"
#include "sim/config/presets.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"
#include "sim/config/serving_config.h"
#include "sim/config/utf8.h"

namespace ess {

namespace {

// No launch or client flag counts past this (tokens, requests, GPUs): larger is a typo, and sums
// of two stay far from overflow.
constexpr long long kMaxFlagInteger = 1'000'000'000'000LL;

std::string origin_of(const std::string& command) {
  return command == "serve" ? "the launch command" : "the benchmark command";
}

}  // namespace

std::string_view fate_name(FlagFate f) {
  switch (f) {
    case FlagFate::used: return "used";
    case FlagFate::ignored: return "ignored";
    case FlagFate::assumed: return "assumed";
  }
  return "used";
}

std::vector<std::string> split_command(std::string_view text, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      ++i;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    word += c;
    in_word = true;
  }
  if (quote != 0) throw ConfigError(what, "", std::string("an open quote (") + quote + ") is never closed");
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::int64_t FlagValue::positive() const {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 1 && v <= kMaxFlagInteger) return v;
  } catch (const std::exception&) {
  }
  refuse("takes a positive integer (at most 10^12), got \"" + text + "\"");
}

double FlagValue::number() const {
  if (text == "inf" || text == "Inf" || text == "infinity") return std::numeric_limits<double>::infinity();
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v >= 0.0) return v;
  } catch (const std::exception&) {
  }
  refuse("takes a number >= 0 (or inf), got \"" + text + "\"");
}

double FlagValue::fraction() const {
  const double v = number();
  if (v <= 0.0 || v > 1.0) refuse("takes a fraction in (0, 1], got \"" + text + "\"");
  return v;
}

bool FlagValue::on() const {
  if (text == "true" || text == "True" || text == "1") return true;
  if (text == "false" || text == "False" || text == "0") return false;
  refuse("is a switch: give it alone, or =true / =false, not \"" + text + "\"");
}

void FlagValue::refuse(const std::string& why) const { throw ConfigError(origin_of(command), "", flag + ": " + why); }

namespace {

bool is_python(const std::string& w) { return w == "python" || w == "python3" || w.rfind("python3.", 0) == 0; }

bool is_env_assignment(const std::string& w) {
  const auto eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0 || c == '_' || std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

bool start_matches(const std::vector<std::string>& words, std::size_t at, const std::vector<std::string_view>& start) {
  if (words.size() - at < start.size()) return false;
  for (std::size_t k = 0; k < start.size(); ++k) {
    const std::string& w = words[at + k];
    const std::string_view s = start[k];
    if (w == s) continue;
    // A script matches by its file name: benchmarks/benchmark_serving.py.
    const bool script = s.size() > 3 && s.substr(s.size() - 3) == ".py";
    if (!script || w.size() < s.size() || w.compare(w.size() - s.size(), s.size(), s) != 0) return false;
    if (w.size() > s.size() && w[w.size() - s.size() - 1] != '/') return false;
  }
  return true;
}

// An environment variable on the launch line.
FlagReport env_report(const std::string& command, const std::string& assignment, LaunchState& s) {
  const auto eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  if (command == "serve" && name == "VLLM_ATTENTION_BACKEND" && value == "FLASHMLA") {
    s.engine_keys["mla_kernel"] = "flashmla";
    return {command, assignment, FlagFate::used, "engine.mla_kernel = flashmla"};
  }
  return {command, assignment, FlagFate::assumed, "an environment variable ess-sim does not model: the engine preset's choices stand"};
}

// Parses one command into the state; its flags' reports appended to `report`. Returns the dialect.
const CommandDialect& parse_command(const std::string& command, const std::string& text,
                                    const std::vector<CommandDialect>& dialects, LaunchState& s,
                                    std::vector<FlagReport>& report) {
  const std::string origin = origin_of(command);
  const std::vector<std::string> words = split_command(text, origin);
  std::size_t at = 0;
  while (at < words.size() && is_env_assignment(words[at])) report.push_back(env_report(command, words[at++], s));
  if (at < words.size() && is_python(words[at])) ++at;
  const CommandDialect* dialect = nullptr;
  std::size_t start_len = 0;
  for (const auto& d : dialects) {
    for (const auto& start : d.starts) {
      if (start_matches(words, at, start)) {
        dialect = &d;
        start_len = start.size();
        break;
      }
    }
    if (dialect != nullptr) break;
  }
  if (dialect == nullptr) {
    std::vector<std::string> known;
    for (const auto& d : dialects) known.emplace_back(d.name);
    throw ConfigError(origin, "",
                      "\"" + (words.empty() ? std::string() : words[at < words.size() ? at : 0]) + "\" is not a command ess-sim reads: " +
                          (command == "serve" ? "a launch is one of " : "a benchmark client is one of ") + quoted_list(known));
  }
  at += start_len;
  if (dialect->positional_model) {
    if (at >= words.size() || words[at].rfind('-', 0) == 0) {
      throw ConfigError(origin, "", std::string(dialect->name) + " takes the model first: " + std::string(dialect->name) + " MODEL [flags]");
    }
    s.model = words[at];
    report.push_back({command, words[at], FlagFate::used, "the model (below)"});
    ++at;
  }
  std::vector<std::string> names;
  for (const auto& r : *dialect->rules) {
    for (const auto n : r.names) names.emplace_back(n);
  }
  while (at < words.size()) {
    const std::string& w = words[at++];
    if (w.rfind('-', 0) != 0) {
      throw ConfigError(origin, "", "\"" + w + "\" is not a flag of " + std::string(dialect->name) + " (a value without its flag?)");
    }
    const auto eq = w.find('=');
    const std::string flag = w.substr(0, eq);
    const FlagRule* rule = nullptr;
    for (const auto& r : *dialect->rules) {
      if (std::find(r.names.begin(), r.names.end(), flag) != r.names.end()) rule = &r;
    }
    if (rule == nullptr) {
      throw ConfigError(origin, "",
                        flag + ": not a flag ess-sim knows for " + std::string(dialect->name) + did_you_mean(flag, names) +
                            "; what it changes is not modelled, so it is refused rather than dropped (remove it to go on)");
    }
    FlagValue v{command, flag, eq == std::string::npos ? std::string() : w.substr(eq + 1)};
    std::string typed = flag;
    if (rule->takes_value) {
      if (eq == std::string::npos) {
        if (at >= words.size()) v.refuse("needs a value");
        v.text = words[at++];
      }
      typed += " " + v.text;
    } else if (eq != std::string::npos) {
      typed = w;
      if (!v.on()) {
        report.push_back({command, typed, FlagFate::ignored, "switched off: as if not given"});
        continue;
      }
    }
    std::string effect(rule->why);
    if (rule->apply != nullptr) {
      const std::string set = rule->apply(s, v);
      effect = effect.empty() ? set : effect + "; " + set;
    }
    report.push_back({command, typed, rule->fate, effect});
  }
  return *dialect;
}

// The model preset a launch's model path names, and the cache it holds under the dtype given.
nlohmann::ordered_json model_section(const LaunchState& s, std::vector<FlagReport>& report) {
  std::string base = s.model;
  while (!base.empty() && base.back() == '/') base.pop_back();
  base = base.substr(base.find_last_of('/') == std::string::npos ? 0 : base.find_last_of('/') + 1);
  std::string lower = base;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool v32 = lower.rfind("deepseek-v3.2", 0) == 0;
  const bool v3 = !v32 && (lower.rfind("deepseek-v3", 0) == 0 || lower.rfind("deepseek-r1", 0) == 0);
  if (!v3 && !v32) {
    throw ConfigError("the launch command", "",
                      "model \"" + s.model + "\": ess-sim translates DeepSeek-V3, DeepSeek-R1 and DeepSeek-V3.2 launches "
                      "(other models: write the scenario with a model preset, `ess-sim presets`)");
  }
  nlohmann::ordered_json m;
  m["preset"] = v32 ? "deepseek-v3.2-exp" : "deepseek-v3";
  const std::string& d = s.kv_cache_dtype;
  const bool fp8 = d.rfind("fp8", 0) == 0;
  if (!fp8 && d != "auto" && d != "bf16" && d != "bfloat16") {
    throw ConfigError("the launch command", "", "--kv-cache-dtype " + d + ": ess-sim prices a bf16 or fp8 latent cache");
  }
  std::string effect = "model preset " + m["preset"].get<std::string>();
  if (v3 && !fp8) {
    m["attention"] = {
        {"cache_dtype", {{"value", "bf16"}, {"source", "--kv-cache-dtype " + d + ": the model dtype (bf16) for DeepSeek-R1/V3"}}},
        {"cache_bytes_per_token", {{"value", "1152B"}, {"source", "bf16 MLA latent: (512 + 64) x 2 B per token per layer"}}}};
    effect += ", a bf16 latent cache (1,152 B per token and layer)";
  } else {
    effect += ", its fp8 latent cache (656 B per token and layer)";
  }
  report.push_back({"serve", "(model)", FlagFate::used, s.model + ", kv-cache-dtype " + d + ": " + effect});
  return m;
}

struct Layout {
  std::int64_t attention_dp = 1;
  std::int64_t tensor_parallel = 1;
  std::int64_t expert_parallel = 1;
  std::int64_t moe_tp = 1;
  [[nodiscard]] std::int64_t gpus() const { return attention_dp * tensor_parallel; }
};

[[noreturn]] void refuse_layout(const std::string& why) { throw ConfigError("the launch command", "", why); }

Layout layout_of(const LaunchState& s) {
  Layout l;
  if (s.engine == "vllm") {
    if (s.dp > 1 && s.tp > 1) {
      refuse_layout("-dp " + std::to_string(s.dp) + " with -tp " + std::to_string(s.tp) +
                    ": vLLM's MoE group then spans the data-parallel replicas, a layout ess-sim does not model (use -tp or -dp alone)");
    }
    if (s.dp > 1) return {s.dp, 1, s.expert_parallel ? s.dp : 1, s.expert_parallel ? 1 : s.dp};
    return {1, s.tp, s.expert_parallel ? s.tp : 1, s.expert_parallel ? 1 : s.tp};
  }
  if (s.engine == "sglang") {
    const std::int64_t ep = s.ep.value_or(1);
    if (s.tp % ep != 0) refuse_layout("--ep " + std::to_string(ep) + " does not divide --tp " + std::to_string(s.tp));
    if (!s.dp_attention) return {s.dp, s.tp, ep, s.tp / ep};
    if (s.tp % s.dp != 0) refuse_layout("--dp " + std::to_string(s.dp) + " does not divide --tp " + std::to_string(s.tp));
    if (s.dp != s.tp) {
      refuse_layout("--enable-dp-attention with --dp " + std::to_string(s.dp) + " below --tp " + std::to_string(s.tp) +
                    ": attention TP inside each DP rank with a MoE group over all of them is a layout ess-sim does not model");
    }
    return {s.dp, 1, ep, s.tp / ep};
  }
  const std::int64_t ep = s.ep.value_or(1);
  if (s.tp % ep != 0) refuse_layout("--ep_size " + std::to_string(ep) + " does not divide --tp_size " + std::to_string(s.tp));
  return {1, s.tp, ep, s.tp / ep};
}

// The engine's token budget and running-request limit per ess-sim serving slot (a GPU under DP
// attention, a replica under TP), from the flags or the engine's defaults.
void budgets(const LaunchState& s, const std::string& preset, const Layout& l, nlohmann::ordered_json& serving,
             std::vector<FlagReport>& report) {
  std::int64_t tokens = 0;
  std::string why;
  if (s.engine == "sglang") {
    tokens = s.prefill_tokens.value_or(kColocatedTokensPerGpu);
    why = s.prefill_tokens ? "--chunked-prefill-size " + std::to_string(tokens) : "SGLang's chunked_prefill_size for 35-160 GB GPUs, 8,192";
    if (s.dp_attention) {
      // server_args.py: 0.4.x halves it under DP attention, later releases divide it by dp_size.
      const std::int64_t divisor = preset == "sglang-0.4" ? 2 : s.dp;
      tokens = std::max<std::int64_t>(1, tokens / divisor);
      why += ", divided by " + std::to_string(divisor) + " under DP attention (server_args.py" +
             (preset == "sglang-0.4" ? ", 0.4.x: // 2)" : ": // dp_size)");
    }
  } else if (s.engine == "vllm") {
    tokens = s.prefill_tokens.value_or(8192);
    why = s.prefill_tokens ? "--max-num-batched-tokens " + std::to_string(tokens)
                           : "vLLM's max_num_batched_tokens for `vllm serve` on GPUs of 70 GiB and more, 8,192";
    if (!s.prefill_tokens && preset == "vllm-0.7") {
      why += " (vLLM 0.7 without chunked prefill batches whole prompts up to max_model_len a step: assumed 8,192 here, "
             "ess-sim's activation estimate for longer steps is not what the engine reserves)";
    }
  } else {
    tokens = s.prefill_tokens.value_or(8192);
    why = s.prefill_tokens ? "--max_num_tokens " + std::to_string(tokens) : "TensorRT-LLM's max_num_tokens default, 8,192";
  }
  serving["prefill"] = {{"mode", "colocated"}, {"tokens_per_gpu", tokens}};
  report.push_back({"serve", "(token budget)", s.prefill_tokens ? FlagFate::used : FlagFate::assumed,
                    "serving.prefill.tokens_per_gpu = " + std::to_string(tokens) + " per " +
                        (l.tensor_parallel > 1 ? "replica" : "GPU") + ": " + why});
  std::optional<std::int64_t> running = s.max_running;
  if (running && s.engine == "sglang" && s.dp_attention) running = std::max<std::int64_t>(1, *running / s.dp);
  if (!running && s.engine == "vllm") running = preset == "vllm-0.7" ? 256 : 1024;
  if (running) {
    serving["max_batch_per_gpu"] = *running;
    report.push_back({"serve", "(running requests)", s.max_running ? FlagFate::used : FlagFate::assumed,
                      "serving.max_batch_per_gpu = " + std::to_string(*running) + " per " +
                          (l.tensor_parallel > 1 ? "replica" : "GPU") +
                          (s.max_running ? "" : preset == "vllm-0.7" ? ": vLLM V0's max_num_seqs, 256" : ": vLLM V1's max_num_seqs for `vllm serve` on GPUs of 70 GiB and more, 1,024")});
  }
}

// The client's arrivals: all at once (request rate inf, the clients' default) is a closed loop of
// --max-concurrency (all the prompts when not given); a finite rate is Poisson.
nlohmann::ordered_json arrivals(const LaunchState& s, const std::string& client, std::vector<FlagReport>& report) {
  const std::int64_t prompts = s.prompts.value_or(1000);
  if (!s.prompts) report.push_back({"bench", "(prompts)", FlagFate::assumed, "--num-prompts 1000, the clients' default"});
  // Lengths: vLLM's bench serve draws [len (1 - r), len (1 + r)] (r default 0); SGLang's and the
  // older benchmark_serving.py draw [len r, len] (r default 0 and 1).
  const double r = s.range_ratio.value_or(client == "benchmark_serving.py" ? 1.0 : 0.0);
  const auto lengths = [&](std::int64_t len) -> nlohmann::ordered_json {
    const auto d = static_cast<double>(len);
    std::int64_t lo = len;
    std::int64_t hi = len;
    if (client == "vllm bench serve") {
      if (r >= 1.0) throw ConfigError("the benchmark command", "", "--random-range-ratio " + shortest_number(r) + ": vllm bench serve takes it below 1");
      lo = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(d * (1.0 - r))));
      hi = static_cast<std::int64_t>(std::ceil(d * (1.0 + r)));
    } else {
      lo = std::max<std::int64_t>(1, std::min(len, static_cast<std::int64_t>(d * r)));
    }
    if (lo == hi) return lo;
    return {{"min", lo}, {"max", hi}};
  };
  nlohmann::ordered_json a;
  const bool all_at_once = !s.rate || std::isinf(*s.rate);
  if (all_at_once) {
    a["process"] = "concurrency";
    a["concurrency"] = std::min(prompts, s.concurrency.value_or(prompts));
    a["requests"] = prompts;
  } else {
    a["process"] = "poisson";
    a["rate"] = shortest_number(*s.rate) + "/s";
  }
  a["prompt_tokens"] = lengths(*s.input_len);
  a["output_tokens"] = lengths(*s.output_len);
  report.push_back({"bench", "(lengths)", FlagFate::used,
                    "prompt_tokens " + a["prompt_tokens"].dump() + ", output_tokens " + a["output_tokens"].dump() + " (" + client +
                        "'s random dataset, range ratio " + shortest_number(r) + ")"});
  if (!all_at_once && s.concurrency) {
    throw ConfigError("the benchmark command", "", "--max-concurrency with a finite --request-rate: ess-sim's arrivals are "
                                                   "either a closed loop or Poisson, not both");
  }
  return a;
}

}  // namespace

LaunchTranslation translate_launch(const LaunchRequest& q) {
  // Both commands reach the scenario's description (JSON): text that is not UTF-8 is refused here.
  for (const auto& [text, command] : {std::pair{&q.serve, "serve"}, std::pair{&q.bench, "bench"}}) {
    if (const auto at = invalid_utf8_at(*text)) {
      throw ConfigError(origin_of(command), "", "not UTF-8 at byte " + std::to_string(*at) + ": " + printable(*text));
    }
  }
  if (invalid_utf8_at(q.name)) throw ConfigError("--name", "", "not UTF-8: " + printable(q.name));
  LaunchTranslation out;
  LaunchState s;
  const CommandDialect& serve = parse_command("serve", q.serve, serve_dialects(), s, out.report);
  s.engine = std::string(serve.engine);
  const CommandDialect& bench = parse_command("bench", q.bench, bench_dialects(), s, out.report);
  s.client = std::string(bench.name);
  if (s.model.empty()) throw ConfigError("the launch command", "", "no model: give " + std::string(serve.name) + " the model path");
  if (!s.input_len || !s.output_len) {
    throw ConfigError("the benchmark command", "", "give --random-input-len and --random-output-len: ess-sim needs the lengths");
  }
  if (s.rate && *s.rate <= 0.0) throw ConfigError("the benchmark command", "", "--request-rate must be above 0 (inf: all at once)");

  std::string preset = q.engine.value_or(s.engine);
  if (preset != s.engine && preset.rfind(s.engine + "-", 0) != 0) {
    std::vector<std::string> same;
    for (const auto& n : preset_names(PresetKind::engine)) {
      if (n == s.engine || n.rfind(s.engine + "-", 0) == 0) same.push_back(n);
    }
    throw ConfigError("--engine", "", "\"" + preset + "\" is not a preset of the launch's engine (" + s.engine + "): one of " + quoted_list(same));
  }
  const Hardware hw = load_hardware_preset(q.hardware);
  const Layout l = layout_of(s);
  const std::int64_t per_node = hw.gpu.count;
  if (l.gpus() > per_node && l.gpus() % per_node != 0) {
    throw ConfigError("the launch command", "", "the layout's " + std::to_string(l.gpus()) + " GPUs are not whole nodes of " +
                                                    std::to_string(per_node) + " (" + q.hardware + ")");
  }
  if (l.gpus() < per_node) {
    throw ConfigError("the launch command", "", "the layout uses " + std::to_string(l.gpus()) + " of a node's " + std::to_string(per_node) +
                                                    " GPUs: ess-sim simulates whole nodes (launch on all of them, or pick hardware with that many)");
  }
  const std::int64_t nodes = l.gpus() / per_node;

  nlohmann::ordered_json& d = out.scenario;
  d["schema"] = "ess-sim/scenario/v1";
  d["name"] = q.name;
  d["description"] = "Translated by `ess-sim launch` from: " + q.serve + " | " + q.bench;
  d["seed"] = 1;
  d["model"] = model_section(s, out.report);
  if (nodes == 1) {
    d["hardware"] = q.hardware;
  } else {
    d["hardware"] = {{"preset", q.hardware}, {"nodes", nodes}};
  }
  d["parallelism"] = {{"attention_dp", l.attention_dp}, {"tensor_parallel", l.tensor_parallel}, {"expert_parallel", l.expert_parallel}};
  if (l.attention_dp > 1 && l.moe_tp > 1) d["parallelism"]["moe_tensor_parallel"] = l.moe_tp;
  out.report.push_back({"serve", "(layout)", FlagFate::used,
                        "attention DP" + std::to_string(l.attention_dp) + " x TP" + std::to_string(l.tensor_parallel) + ", MoE EP" +
                            std::to_string(l.expert_parallel) + " x TP" + std::to_string(l.moe_tp) + " on " + std::to_string(nodes) +
                            " node(s) of " + std::to_string(per_node)});
  d["workload"] = {{"batch_per_gpu", "max"}, {"context_length", *s.input_len + *s.output_len}, {"decode_steps", 16}};
  nlohmann::ordered_json engine = {{"preset", preset}};
  for (const auto& [k, v] : s.engine_keys.items()) engine[k] = v;
  d["engine"] = engine;
  out.report.push_back({"serve", "(engine)", q.engine ? FlagFate::used : FlagFate::assumed,
                        "engine preset " + preset + (q.engine ? " (--engine)" : " (the late-2025 release; --engine picks another)")});
  d["cache"] = {{"mode", "gpu"}};
  if (s.reserve) d["memory"] = {{"reserve", *s.reserve}};
  if (!s.execution.empty()) d["execution"] = s.execution;
  nlohmann::ordered_json serving;
  serving["arrivals"] = arrivals(s, s.client, out.report);
  if (!serving["arrivals"].contains("concurrency")) {
    const double seconds = static_cast<double>(s.prompts.value_or(1000)) / *s.rate;
    serving["duration"] = shortest_number(seconds) + "s";
    out.report.push_back({"bench", "(duration)", FlagFate::assumed,
                          "serving.duration = num-prompts / request-rate: Poisson arrivals for as long as the client sends"});
  }
  budgets(s, preset, l, serving, out.report);
  d["serving"] = serving;
  // The translation is a scenario ess-sim loads: checked here, so that its errors name the flags' keys.
  (void)load_scenario_text(d.dump(), "the translated scenario");
  return out;
}

}  // namespace ess
