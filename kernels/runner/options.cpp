#include "kernels/runner/options.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <string_view>
#include <system_error>

#include "kernels/bench/json_writer.h"
#include "sim/base/text.h"

namespace ess::runner {

namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

enum class Kind { integer, number, choice, text, hex64, flag };

struct Spec {
  std::string_view name;  // without the dashes
  Kind kind;
  bool required;
  std::string_view fallback;  // default value as typed ("" if required or a flag)
  std::int64_t min = 0;       // integer bounds (inclusive)
  std::int64_t max = 0;
  std::vector<std::string_view> choices;
  std::string_view help;
  const PolicyParam* param = nullptr;  // number: the eviction parameter it sets (its range and name)
};

// The eviction policies the simulator registers (sim/offload/eviction_registry.cpp): the runner
// plans its pools with the same code, so it takes the same names.
std::vector<std::string_view> eviction_choices() {
  std::vector<std::string_view> names;
  for (const auto& r : eviction_policies()) names.push_back(r.name);
  return names;
}

// A number option for each parameter the eviction policies declare (sim/offload/policy_params.h),
// as the scenario's cache.<name>: --heat-decay for heat_decay. Its texts live as long as the table.
std::vector<Spec> eviction_param_specs() {
  static std::deque<std::string> texts;
  std::vector<Spec> out;
  for (const PolicyParam* p : declared_params(eviction_policies())) {
    const std::string& name = texts.emplace_back(p->option());
    std::array<char, 32> shortest{};  // the default as typed: the shortest text that reads back exactly
    const auto written = std::to_chars(shortest.data(), shortest.data() + shortest.size(), p->default_value);
    const std::string& fallback = texts.emplace_back(shortest.data(), written.ptr);
    const std::string& help = texts.emplace_back(std::string(p->summary) + ", in " + p->range());
    out.push_back(Spec{name, Kind::number, false, fallback, 0, 0, {}, help, p});
  }
  return out;
}

// In usage order, which is also the order of the trace's config object.
const std::vector<Spec>& specs() {
  static const std::vector<Spec> table = [] {
    std::vector<Spec> t{
      {"layers", Kind::integer, true, "", 1, 100000, {}, "decoder layers to run (all dense MLA + MLP)"},
      {"hidden", Kind::integer, true, "", 8, kInt32Max, {}, "hidden size (7168)"},
      {"q-lora", Kind::integer, true, "", 8, kInt32Max, {}, "q_lora_rank (1536)"},
      {"kv-lora", Kind::integer, true, "", 1, kInt32Max, {}, "kv_lora_rank (512; the only value supported)"},
      {"heads", Kind::integer, true, "", 1, kInt32Max, {}, "attention heads (128; a multiple of 32)"},
      {"qk-nope", Kind::integer, true, "", 1, kInt32Max, {}, "qk_nope_head_dim (128)"},
      {"qk-rope", Kind::integer, true, "", 1, kInt32Max, {}, "qk_rope_head_dim (64; the only value supported)"},
      {"v-head", Kind::integer, true, "", 1, kInt32Max, {}, "v_head_dim (128)"},
      {"indexer-heads", Kind::integer, true, "", 1, kInt32Max, {}, "indexer heads (64; the only value supported)"},
      {"indexer-dim", Kind::integer, true, "", 1, kInt32Max, {}, "indexer head dim (128; the only value supported)"},
      {"top-k", Kind::integer, true, "", 1, kInt32Max, {}, "entries the indexer selects per token (2048)"},
      {"ffn", Kind::integer, true, "", 8, kInt32Max, {}, "dense MLP width (18432)"},
      {"vocab", Kind::integer, true, "", 4, kInt32Max, {}, "vocabulary (129280)"},
      {"batch", Kind::integer, true, "", 1, 4096, {}, "requests (one query token each per step)"},
      {"context", Kind::integer, true, "", 1, kInt32Max - 1, {}, "cached tokens per request at step 0"},
      {"steps", Kind::integer, true, "", 1, 1000000, {}, "decode steps recorded in the trace"},
      {"warmup-steps", Kind::integer, false, "2", 0, 1000000, {}, "decode steps run first and not recorded"},
      {"pool-entries", Kind::integer, true, "", 1, kInt32Max, {}, "GPU pool capacity per request and layer"},
      {"pinned-recent", Kind::integer, false, "0", 0, kInt32Max, {}, "newest tokens always resident"},
      {"eviction", Kind::choice, true, "", 0, 0, eviction_choices(), "pool eviction policy (`ess-sim policies` describes them)"},
      {"overlap", Kind::choice, true, "", 0, 0, {"serial", "da"}, "fetch/attention overlap"},
      {"transfer", Kind::choice, true, "", 0, 0, {"gather", "copy"}, "miss fetch path"},
      {"access", Kind::text, true, "", 0, 0, {}, "ESS-TOPK access trace (.esstrace)"},
      {"scenario-sha256", Kind::hex64, false, "", 0, 0, {}, "digest of the scenario, copied into the trace"},
      {"out", Kind::text, true, "", 0, 0, {}, "Chrome trace to write"},
      {"device", Kind::integer, false, "0", 0, 1023, {}, "CUDA device ordinal"},
      {"self-test", Kind::flag, false, "", 0, 0, {}, "only check the custom kernels against CPU references"},
    };
    const auto after = std::find_if(t.begin(), t.end(), [](const Spec& s) { return s.name == "eviction"; }) + 1;
    const std::vector<Spec> params = eviction_param_specs();
    t.insert(after, params.begin(), params.end());
    return t;
  }();
  return table;
}

const Spec* find_spec(std::string_view name) {
  for (const Spec& s : specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& message) { throw OptionsError(message); }

std::string unknown_option_message(std::string_view name) {
  std::string best;
  std::size_t best_distance = 3;  // suggest only close matches
  for (const Spec& s : specs()) {
    const std::size_t d = edit_distance(name, s.name);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(s.name);
    }
  }
  std::string message = "unknown option --" + std::string(name);
  if (!best.empty()) message += " (did you mean --" + best + "?)";
  return message + "; see --help";
}

std::int64_t parse_integer(const Spec& s, const std::string& text) {
  std::int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  const std::string range = "[" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]";
  if (text.empty() || error != std::errc() || end != last) {
    fail("--" + std::string(s.name) + ": expected an integer in " + range + ", got '" + text + "'");
  }
  if (value < s.min || value > s.max) {
    fail("--" + std::string(s.name) + ": " + text + " is outside " + range);
  }
  return value;
}

// A policy parameter's value, within the range it declares.
double parse_param(const Spec& s, const std::string& text) {
  double value = 0.0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  const std::string range = s.param->range();
  if (text.empty() || error != std::errc() || end != last || !std::isfinite(value)) {
    fail("--" + std::string(s.name) + ": expected a number in " + range + ", got '" + text + "'");
  }
  if (!s.param->admits(value)) fail("--" + std::string(s.name) + ": " + text + " is outside " + range);
  return value;
}

std::string parse_choice(const Spec& s, const std::string& text) {
  std::string listed;
  for (const std::string_view c : s.choices) {
    if (c == text) return text;
    listed += (listed.empty() ? "" : ", ") + std::string(c);
  }
  std::string message = "--" + std::string(s.name) + ": unknown value '" + text + "' (expected one of: " + listed + ")";
  if (s.name == "overlap" && text == "dba") message += "; ess-runner does not implement dba";
  fail(message);
}

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

// Limits of ess-runner's kernels and of its int32 row ids, checked once every value is known.
void check_supported(const RunnerOptions& o) {
  const auto need = [](bool ok, const std::string& message) {
    if (!ok) fail(message);
  };
  need(o.kv_lora == 512, "--kv-lora " + std::to_string(o.kv_lora) +
                             ": ess-runner supports only 512 (its latent rows are FlashMLA's 656-byte layout, "
                             "512 fp8 + 4 fp32 scales + 64 bf16 rope, and sparse_mla is tiled for it)");
  need(o.qk_rope == 64, "--qk-rope " + std::to_string(o.qk_rope) +
                            ": ess-runner supports only 64 (the rope part of its 656-byte latent rows)");
  need(o.indexer_heads == 64, "--indexer-heads " + std::to_string(o.indexer_heads) +
                                  ": ess-runner supports only 64 (the tiles of its indexer_score kernel)");
  need(o.indexer_dim == 128, "--indexer-dim " + std::to_string(o.indexer_dim) +
                                 ": ess-runner supports only 128 (the tiles of its indexer_score kernel)");
  need(o.heads % 32 == 0, "--heads " + std::to_string(o.heads) +
                              ": must be a multiple of 32 (sparse_mla runs 32 heads per block)");
  const auto multiple_of_8 = [&](const char* name, std::int64_t v) {
    need(v % 8 == 0, std::string("--") + name + " " + std::to_string(v) +
                         ": must be a multiple of 8 (rows are read in 16-byte vectors of bf16)");
  };
  multiple_of_8("hidden", o.hidden);
  multiple_of_8("q-lora", o.q_lora);
  multiple_of_8("qk-nope", o.qk_nope);
  multiple_of_8("v-head", o.v_head);
  multiple_of_8("ffn", o.ffn);
  need(o.vocab % 4 == 0, "--vocab " + std::to_string(o.vocab) +
                             ": must be a multiple of 4 (sampling reads the logits as float4)");
  need(o.context > o.warmup_steps,
       "--context " + std::to_string(o.context) + " must exceed --warmup-steps " + std::to_string(o.warmup_steps) +
           " (warm-up step -w runs at context - w tokens, which must be >= 1)");
  // Latent rows are addressed by a 32-bit id: (layer x batch + request) x (context + steps) + position.
  const double rows = static_cast<double>(o.layers) * static_cast<double>(o.batch) *
                      static_cast<double>(o.context + o.steps);
  need(rows <= static_cast<double>(kInt32Max),
       "--layers x --batch x (--context + --steps) = " + bench::json_number(rows) +
           " latent rows exceed ess-runner's 32-bit row ids (at most 2^31 - 1)");
}

}  // namespace

const char* to_string(OverlapMode mode) { return mode == OverlapMode::da ? "da" : "serial"; }
const char* to_string(TransferPath path) { return path == TransferPath::copy ? "copy" : "gather"; }

Command parse_command_line(const std::vector<std::string>& args) {
  Command command;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      command.action = Command::Action::help;
      return command;
    }
  }
  for (const std::string& a : args) {
    if (a == "--version") {
      command.action = Command::Action::version;
      return command;
    }
  }

  std::map<std::string, std::string, std::less<>> given;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      fail("unexpected argument '" + a + "': options are written --name value; see --help");
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const Spec* spec = find_spec(name);
    if (spec == nullptr) fail(unknown_option_message(name));
    if (given.count(name) != 0) fail("--" + name + " given twice");
    if (spec->kind == Kind::flag) {
      if (value) fail("--" + name + " takes no value, got '" + *value + "'");
      given.emplace(name, "");
      continue;
    }
    if (!value) {
      if (i + 1 == args.size()) fail("--" + name + " needs a value");
      const std::string& next = args[i + 1];
      if (next.size() >= 2 && next.compare(0, 2, "--") == 0) {
        fail("--" + name + " needs a value, got the option " + next);
      }
      value = next;
      ++i;
    }
    given.emplace(name, *value);
  }

  RunnerOptions& o = command.options;
  o.self_test = given.count("self-test") != 0;
  // A value as given, else the default; nullopt for a missing option (an error unless --self-test).
  const auto text_of = [&](const Spec& s) -> std::optional<std::string> {
    if (const auto found = given.find(s.name); found != given.end()) return found->second;
    if (!s.fallback.empty()) return std::string(s.fallback);
    if (s.required && !o.self_test) fail("missing required option --" + std::string(s.name) + "; see --help");
    return std::nullopt;
  };
  for (const Spec& s : specs()) {
    if (s.kind == Kind::flag) continue;
    const std::optional<std::string> text = text_of(s);
    if (!text) continue;
    switch (s.kind) {
      case Kind::integer: {
        const std::int64_t v = parse_integer(s, *text);
        static const std::map<std::string_view, std::int64_t RunnerOptions::*> fields{
            {"layers", &RunnerOptions::layers},
            {"hidden", &RunnerOptions::hidden},
            {"q-lora", &RunnerOptions::q_lora},
            {"kv-lora", &RunnerOptions::kv_lora},
            {"heads", &RunnerOptions::heads},
            {"qk-nope", &RunnerOptions::qk_nope},
            {"qk-rope", &RunnerOptions::qk_rope},
            {"v-head", &RunnerOptions::v_head},
            {"indexer-heads", &RunnerOptions::indexer_heads},
            {"indexer-dim", &RunnerOptions::indexer_dim},
            {"top-k", &RunnerOptions::top_k},
            {"ffn", &RunnerOptions::ffn},
            {"vocab", &RunnerOptions::vocab},
            {"batch", &RunnerOptions::batch},
            {"context", &RunnerOptions::context},
            {"steps", &RunnerOptions::steps},
            {"warmup-steps", &RunnerOptions::warmup_steps},
            {"pool-entries", &RunnerOptions::pool_entries},
            {"pinned-recent", &RunnerOptions::pinned_recent},
        };
        if (s.name == "device") {
          o.device = static_cast<int>(v);
        } else {
          o.*(fields.at(s.name)) = v;
        }
        break;
      }
      case Kind::number: o.eviction_params.set(s.param->name, parse_param(s, *text)); break;
      case Kind::choice: {
        const std::string c = parse_choice(s, *text);
        if (s.name == "eviction") o.eviction = c;
        if (s.name == "overlap") o.overlap = c == "da" ? OverlapMode::da : OverlapMode::serial;
        if (s.name == "transfer") o.transfer = c == "copy" ? TransferPath::copy : TransferPath::gather;
        break;
      }
      case Kind::text:
        if (text->empty()) fail("--" + std::string(s.name) + ": expected a file name, got an empty value");
        (s.name == "access" ? o.access : o.out) = *text;
        break;
      case Kind::hex64:
        if (!is_hex64(*text)) {
          fail("--" + std::string(s.name) + ": expected 64 hexadecimal digits, got '" + *text + "' (" +
               std::to_string(text->size()) + " characters)");
        }
        o.scenario_sha256 = *text;
        break;
      case Kind::flag: break;
    }
  }
  if (!o.self_test) check_supported(o);
  return command;
}

std::string usage_text() {
  std::string text =
      "ess-runner: executes DeepSeek-V3.2-Exp-shaped dense decode layers with ESS latent-cache offload on one\n"
      "GPU and writes a Chrome trace of every operation (see kernels/README.md).\n\n"
      "usage: ess-runner --layers L --hidden H ... --access FILE.esstrace --out TRACE.json [options]\n"
      "       ess-runner --self-test [--device N]\n\n";
  for (const Spec& s : specs()) {
    std::string left = "  --" + std::string(s.name);
    switch (s.kind) {
      case Kind::integer: left += " N"; break;
      case Kind::number: left += " X"; break;
      case Kind::choice: {
        std::string joined;
        for (const std::string_view c : s.choices) joined += (joined.empty() ? "" : "|") + std::string(c);
        left += " " + joined;
        break;
      }
      case Kind::text: left += " FILE"; break;
      case Kind::hex64: left += " HEX"; break;
      case Kind::flag: break;
    }
    left.resize(std::max<std::size_t>(left.size() + 1, 34), ' ');
    text += left + std::string(s.help);
    if (!s.fallback.empty()) text += " (default " + std::string(s.fallback) + ")";
    if (s.required) text += " (required)";
    text += "\n";
  }
  text += "  --help                          this text\n  --version                       the version\n";
  return text;
}

std::vector<std::pair<std::string, std::string>> config_fields(const RunnerOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto integer = [&](const char* name, std::int64_t v) { out.emplace_back(name, std::to_string(v)); };
  const auto text = [&](const char* name, const std::string& v) { out.emplace_back(name, bench::json_quote(v)); };
  integer("layers", o.layers);
  integer("hidden", o.hidden);
  integer("q-lora", o.q_lora);
  integer("kv-lora", o.kv_lora);
  integer("heads", o.heads);
  integer("qk-nope", o.qk_nope);
  integer("qk-rope", o.qk_rope);
  integer("v-head", o.v_head);
  integer("indexer-heads", o.indexer_heads);
  integer("indexer-dim", o.indexer_dim);
  integer("top-k", o.top_k);
  integer("ffn", o.ffn);
  integer("vocab", o.vocab);
  integer("batch", o.batch);
  integer("context", o.context);
  integer("steps", o.steps);
  integer("warmup-steps", o.warmup_steps);
  integer("pool-entries", o.pool_entries);
  integer("pinned-recent", o.pinned_recent);
  text("eviction", o.eviction);
  for (const PolicyParam* p : declared_params(eviction_policies())) {
    out.emplace_back(p->option(), bench::json_number(o.eviction_params.of(*p)));
  }
  text("overlap", to_string(o.overlap));
  text("transfer", to_string(o.transfer));
  text("access", o.access);
  out.emplace_back("scenario-sha256", o.scenario_sha256 ? bench::json_quote(*o.scenario_sha256) : "null");
  text("out", o.out);
  integer("device", o.device);
  out.emplace_back("self-test", o.self_test ? "true" : "false");
  return out;
}

}  // namespace ess::runner
