// `ess-sim cost <op> --hardware H ...`: price one operation with the cost models.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/alltoall.h"
#include "models/attention.h"
#include "models/collective.h"
#include "models/copy.h"
#include "models/gemm.h"
#include "models/mla_kernels.h"
#include "models/norm.h"
#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/cost_common.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/model_config.h"
#include "sim/config/presets.h"
#include "sim/config/quantity.h"
#include "sim/config/reader.h"
#include "sim/config/scenario.h"
#include "sim/config/utf8.h"

namespace ess {

namespace {

struct CostOptions {
  std::string hardware;
  bool json = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";
  std::string kind = "rms";
  std::int64_t tokens = 0, hidden = 0;
  std::string direction;
  std::string bytes;
  std::int64_t chunks = 1;
  int gpus = 0;
};

// "1048576", "1MiB" or "64MB" -> bytes, for the option `option` (errors name it).
Bytes parse_bytes_argument(const std::string& text, const std::string& option = "--bytes") {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const double v = std::strtod(text.c_str(), nullptr);  // no exception on overflow: inf, refused below
    if (!std::isfinite(v)) throw ConfigError(option + " " + text, "", "is too large for a number of bytes");
    return Bytes(v);
  }
  const auto parsed = parse_quantity(text, Dimension::bytes);
  if (!parsed.value) throw ConfigError(option + " " + text, "", parsed.error + " (or a plain number of bytes)");
  if (!std::isfinite(*parsed.value)) throw ConfigError(option + " " + text, "", "must be a finite size");
  if (*parsed.value < 0) throw ConfigError(option + " " + text, "", "must be >= 0");
  return Bytes(*parsed.value);
}

// Seconds with 4 significant digits in the largest unit that keeps the number >= 1.
std::string human_time(Seconds t) {
  const double s = t.value();
  const char* unit = "s";
  double v = s;
  if (s < 1e-6) {
    unit = "ns";
    v = s * 1e9;
  } else if (s < 1e-3) {
    unit = "us";
    v = s * 1e6;
  } else if (s < 1.0) {
    unit = "ms";
    v = s * 1e3;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

std::string human_count(double v, const char* unit) {
  char buf[64];
  const char* prefix = "";
  double x = v;
  if (v >= 1e12) {
    prefix = "T";
    x = v / 1e12;
  } else if (v >= 1e9) {
    prefix = "G";
    x = v / 1e9;
  } else if (v >= 1e6) {
    prefix = "M";
    x = v / 1e6;
  } else if (v >= 1e3) {
    prefix = "k";
    x = v / 1e3;
  }
  std::snprintf(buf, sizeof buf, "%.4g %s%s", x, prefix, unit);
  return buf;
}

void print_seconds_json(std::ostream& out, Seconds t) { out << nlohmann::json{{"seconds", t.value()}}.dump() << "\n"; }

void print_kernel(std::ostream& out, const std::string& what, const std::string& hardware, const KernelCost& c) {
  out << what << " on " << hardware << "\n";
  if (c.measured) {
    out << "  time      " << human_time(c.time) << "  (measured on this GPU: the profile's GEMM table, interpolated in m)\n";
    out << "  roofline  " << human_time(std::max(c.compute, c.memory) + c.overhead) << "  (" << to_string(c.bound)
        << "-bound; used for shapes the table does not cover)\n";
  } else {
    out << "  time      " << human_time(c.time) << "  (" << to_string(c.bound) << "-bound)\n";
  }
  out << "  compute   " << human_time(c.compute) << "  for " << human_count(c.flops.value(), "FLOP") << "\n";
  out << "  memory    " << human_time(c.memory) << "  for " << human_count(c.bytes.value(), "B") << " of HBM traffic\n";
  out << "  overhead  " << human_time(c.overhead) << "\n";
}

void print_transfer(std::ostream& out, const std::string& what, const std::string& hardware, Seconds t, Bytes bytes) {
  out << what << " on " << hardware << "\n";
  out << "  time      " << human_time(t) << "\n";
  if (t.value() > 0) out << "  effective " << human_count(bytes.value() / t.value(), "B/s") << "\n";
}

DType dtype_of(const std::string& name) { return *parse_dtype(name); }

void add_common(CLI::App* cmd, const std::shared_ptr<CostOptions>& o) {
  cmd->add_option("--hardware", o->hardware,
                  "Hardware preset (see `ess-sim presets`) or hardware profile file (e.g. calibration/profiles/X.json)")
      ->required();
  cmd->add_flag("--json", o->json, "Print only {\"seconds\": ...}");
}

CLI::Option* add_count(CLI::App* cmd, const std::string& name, std::int64_t& target, const std::string& help) {
  return cmd->add_option(name, target, help)->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
}


// ---- The operators of the decode step: attention, indexer, grouped GEMM, dispatch and combine ----
//
// Their options are named after the model's quantities; `--model PRESET` fills every one that a
// model determines, and an option given explicitly wins over the model's value. The shapes are the
// ones sim/graph/decode_step.cpp passes to the same model functions, so `cost` prices exactly what a
// simulation prices.

constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

[[noreturn]] void bad_option(const std::string& what, const std::string& message) { throw ConfigError(what, "", message); }

// An option that may be left to the model preset: given() says whether the user wrote it.
template <class T>
struct Given {
  T value{};
  CLI::Option* option = nullptr;
  [[nodiscard]] bool given() const { return option != nullptr && option->count() > 0; }
  [[nodiscard]] std::string name() const { return option->get_name(); }
};

void add_count(CLI::App* cmd, const std::string& name, Given<std::int64_t>& target, const std::string& help) {
  target.option = cmd->add_option(name, target.value, help)->check(CLI::Range(std::int64_t{1}, kMaxCount));
}
void add_text(CLI::App* cmd, const std::string& name, Given<std::string>& target, const std::string& help) {
  target.option = cmd->add_option(name, target.value, help);
}

// Collects the options that neither the command line nor the model gave, to name them all at once.
class Resolver {
 public:
  Resolver(std::string command, bool has_model) : command_(std::move(command)), has_model_(has_model) {}

  // The option's value, else the model's, else 0 and the option is recorded as missing.
  std::int64_t count(const Given<std::int64_t>& o, std::optional<std::int64_t> from_model) {
    if (o.given()) return o.value;
    if (from_model) return *from_model;
    missing_.push_back(o.name());
    return 0;
  }
  // A size with a unit ("656B"), > 0.
  Bytes size(const Given<std::string>& o, std::optional<Bytes> from_model) {
    if (o.given()) {
      const Bytes b = parse_bytes_argument(o.value, o.name());
      if (!(b.value() > 0)) bad_option(o.name() + " " + o.value, "must be > 0 B");
      return b;
    }
    if (from_model) return *from_model;
    missing_.push_back(o.name());
    return Bytes(1.0);
  }
  // Throws ConfigError naming every missing option.
  void finish() const {
    if (missing_.empty()) return;
    std::string list;
    for (std::size_t i = 0; i < missing_.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == missing_.size() ? " and " : ", ") + missing_[i];
    }
    bad_option(command_, "needs " + list +
                             (has_model_ ? " (the model does not give them)" : " (or --model PRESET to take them from a model)"));
  }

 private:
  std::string command_;
  bool has_model_;
  std::vector<std::string> missing_;
};

// Refuses options that do not apply to what is being priced ("--kv-heads applies to gqa only").
void refuse_unused(const std::vector<const CLI::Option*>& options, const std::string& why) {
  for (const auto* o : options) {
    if (o->count() > 0) bad_option(o->get_name(), why);
  }
}

std::string number(double v) { return shortest_number(v); }

// Which hardware fields a kernel's roofline read: the peak of `peak_dtype` (none for a bytes-only
// kernel), the HBM bandwidth and the parameter set `params` ("hardware.kernels.attention").
struct KernelSource {
  std::optional<DType> peak_dtype;
  std::string params;
  RooflineParams p;
  std::optional<double> topk_passes;
};

KernelSource kernel_source(std::optional<DType> peak, const std::string& params, const RooflineParams& p) {
  return {peak, params, p, std::nullopt};
}

void print_uses(std::ostream& out, const Hardware& hw, const KernelSource& k) {
  const char* next = "            ";
  const char* indent = "  uses      ";
  if (k.peak_dtype) {
    const double peak = hw.gpu.peak_compute.at(*k.peak_dtype, hw.gpu.kind).value();
    out << indent << "hardware.gpu.peak_compute." << to_string(*k.peak_dtype) << " "
        << format_quantity(peak, Dimension::flops_per_second) << " x " << k.params << ".compute_efficiency "
        << number(k.p.compute_efficiency) << " (compute_ramp " << human_count(k.p.compute_ramp.value(), "FLOP") << ")\n";
    indent = next;
  }
  out << indent << "hardware.gpu.hbm_bandwidth " << format_quantity(hw.gpu.hbm_bandwidth.value(), Dimension::bytes_per_second)
      << " x " << k.params << ".memory_efficiency " << number(k.p.memory_efficiency) << " (memory_ramp "
      << human_count(k.p.memory_ramp.value(), "B") << ")\n";
  out << next << k.params << ".kernel_overhead " << human_time(k.p.kernel_overhead);
  if (k.p.transition > 0) out << "; roofs combined as a p-norm, " << k.params << ".transition " << number(k.p.transition);
  out << "\n";
  if (k.topk_passes) out << next << "hardware.kernels.topk_passes " << number(*k.topk_passes) << "\n";
}

nlohmann::ordered_json field(const std::string& name, double value) { return {{"field", name}, {"value", value}}; }

// {"seconds", "op", "bound", "compute_s", "memory_s", "overhead_s", "flops", "bytes", "shape", "hardware"}.
nlohmann::ordered_json kernel_json(const std::string& op, const KernelCost& c, const Hardware& hw,
                                   const KernelSource& k, nlohmann::ordered_json shape) {
  nlohmann::ordered_json used = nlohmann::ordered_json::object();
  used["name"] = hw.name;
  if (k.peak_dtype) {
    used["peak_compute"] = field("hardware.gpu.peak_compute." + std::string(to_string(*k.peak_dtype)),
                                 hw.gpu.peak_compute.at(*k.peak_dtype, hw.gpu.kind).value());
  }
  used["hbm_bandwidth"] = field("hardware.gpu.hbm_bandwidth", hw.gpu.hbm_bandwidth.value());
  used["kernel"] = {{"field", k.params},
                    {"compute_efficiency", k.p.compute_efficiency},
                    {"compute_ramp", k.p.compute_ramp.value()},
                    {"memory_efficiency", k.p.memory_efficiency},
                    {"memory_ramp", k.p.memory_ramp.value()},
                    {"kernel_overhead", k.p.kernel_overhead.value()},
                    {"transition", k.p.transition}};
  if (k.topk_passes) used["topk_passes"] = field("hardware.kernels.topk_passes", *k.topk_passes);
  return {{"seconds", c.time.value()},
          {"op", op},
          {"bound", std::string(to_string(c.bound))},
          {"compute_s", c.compute.value()},
          {"memory_s", c.memory.value()},
          {"overhead_s", c.overhead.value()},
          {"flops", c.flops.value()},
          {"bytes", c.bytes.value()},
          {"shape", std::move(shape)},
          {"hardware", std::move(used)}};
}

// --hardware and --json of the operator subcommands below.
void add_common_hardware(CLI::App* cmd, std::string& hardware, bool& json) {
  cmd->add_option("--hardware", hardware,
                  "Hardware preset (see `ess-sim presets`) or hardware profile file (e.g. calibration/profiles/X.json)")
      ->required();
  cmd->add_flag("--json", json,
                "Print one JSON object: seconds, the parts of the time, FLOP and bytes, and the hardware fields used");
}

void print_json(std::ostream& out, const nlohmann::ordered_json& j) { out << j.dump() << "\n"; }

std::optional<std::int64_t> if_model(bool has, std::int64_t v) { return has ? std::optional<std::int64_t>(v) : std::nullopt; }

// ---- cost attention ----

struct AttentionOptions {
  std::string hardware;
  Given<std::string> model;
  Given<std::string> kind;
  bool json = false;
  Given<std::int64_t> requests, queries, context, tensor_parallel;
  Given<std::int64_t> heads, qk_dim, v_dim, selected, kv_heads, head_dim;
  Given<std::string> entry_bytes, kv_dtype, dtype, mla_kernel;
};

void add_attention_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<AttentionOptions>();
  auto* cmd = cost->add_subcommand(
      "attention", "Decode attention on one GPU: sparse MLA (V3.2-Exp), dense MLA (V3) or GQA (Llama), as a simulation prices it");
  add_common_hardware(cmd, o->hardware, o->json);
  add_text(cmd, "--model", o->model, "Model preset: fills the kind, heads, dimensions, entry size and top-k");
  add_text(cmd, "--kind", o->kind, "sparse-mla, dense-mla or gqa (default: the model's)");
  o->kind.option->check(CLI::IsMember({"sparse-mla", "dense-mla", "gqa"}));
  add_count(cmd, "--requests", o->requests,
            "Requests this GPU's attention serves (in a simulation: batch_per_gpu x tensor_parallel)");
  o->requests.option->required();
  add_count(cmd, "--queries-per-request", o->queries, "Query tokens per request: the MTP depth (default 1)");
  add_count(cmd, "--context", o->context, "Cached tokens per request");
  o->context.option->required();
  add_count(cmd, "--tensor-parallel", o->tensor_parallel, "GPUs the heads are split over (default 1)");
  add_count(cmd, "--heads", o->heads, "Attention (query) heads of the model, before --tensor-parallel splits them");
  add_count(cmd, "--qk-dim", o->qk_dim, "MLA: query-key dimension per head, kv_lora_rank + qk_rope_head_dim (576)");
  add_count(cmd, "--v-dim", o->v_dim, "MLA: value dimension per head in the latent space, kv_lora_rank (512)");
  add_text(cmd, "--entry-bytes", o->entry_bytes, "MLA: one latent cache entry, a size such as 656B");
  add_count(cmd, "--selected", o->selected,
            "Sparse MLA: entries each query token attends to (default the indexer's top_k; at most --context)");
  {
    const std::vector<std::string> kernels = mla_kernel_names();
    add_text(cmd, "--mla-kernel", o->mla_kernel,
             "MLA: the decode kernel (models/mla_kernels.h: its row tile and MMA type; default " + kernels.front() +
                 ", the engine presets')");
    o->mla_kernel.option->check(CLI::IsMember(kernels));
  }
  add_count(cmd, "--kv-heads", o->kv_heads, "GQA: key/value heads of the model");
  add_count(cmd, "--head-dim", o->head_dim, "GQA: dimension per head");
  add_text(cmd, "--kv-dtype", o->kv_dtype, "GQA: K/V cache format, bf16, fp16 or fp8 (default the model's cache_dtype)");
  o->kv_dtype.option->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  add_text(cmd, "--dtype", o->dtype, "GQA: format of q, the output and the math, bf16 or fp16 (default the model's activations)");
  o->dtype.option->check(CLI::IsMember({"bf16", "fp16"}));
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const std::optional<ModelConfig> m =
          o->model.given() ? std::optional<ModelConfig>(load_model_preset(o->model.value)) : std::nullopt;
      std::string kind = o->kind.value;
      if (!o->kind.given()) {
        if (!m) bad_option("cost attention", "needs --kind (sparse-mla, dense-mla or gqa) or --model PRESET");
        kind = m->attention.kind == AttentionKind::gqa ? "gqa" : (m->indexer ? "sparse-mla" : "dense-mla");
      }
      const bool mla = kind != "gqa";
      if (m && mla != (m->attention.kind == AttentionKind::mla)) {
        bad_option("--kind " + kind, m->name + " has " + (mla ? "GQA" : "MLA") + " attention; use --kind " +
                                         (mla ? "gqa" : (m->indexer ? "sparse-mla" : "dense-mla")) + " or no --kind");
      }
      const std::string what = "cost attention --kind " + kind;
      if (mla) {
        refuse_unused({o->kv_heads.option, o->head_dim.option, o->kv_dtype.option, o->dtype.option},
                      "applies to --kind gqa, not " + kind);
      } else {
        refuse_unused({o->qk_dim.option, o->v_dim.option, o->entry_bytes.option, o->selected.option, o->mla_kernel.option},
                      "applies to MLA (--kind sparse-mla or dense-mla), not gqa");
      }
      if (kind == "dense-mla") refuse_unused({o->selected.option}, "applies to --kind sparse-mla, not dense-mla");

      const bool has = m.has_value();
      Resolver r(what, has);
      const std::int64_t requests = o->requests.value;
      const std::int64_t queries = o->queries.given() ? o->queries.value : 1;
      const std::int64_t context = o->context.value;
      const std::int64_t tp = o->tensor_parallel.given() ? o->tensor_parallel.value : 1;
      const std::int64_t model_heads = r.count(o->heads, if_model(has, has ? m->attention.heads : 0));
      const auto per_gpu = [&](std::int64_t total, const std::string& name) {
        if (total > 0 && total % tp != 0) {
          bad_option("--tensor-parallel " + std::to_string(tp),
                     "must divide the " + std::to_string(total) + " " + name + " (as parallelism.tensor_parallel must)");
        }
        return total / tp;
      };
      nlohmann::ordered_json shape = {{"kind", kind}, {"requests", requests}, {"queries_per_request", queries},
                                      {"context", context}, {"tensor_parallel", tp}};
      KernelCost c;
      std::string op;
      std::string title;
      DType mla_mma = DType::bf16;  // the MLA kernel's MMA input type
      if (mla) {
        const MlaConfig a = has ? m->attention.mla : MlaConfig{};
        const std::int64_t qk = r.count(o->qk_dim, if_model(has, a.kv_lora_rank + a.qk_rope_head_dim));
        const std::int64_t v = r.count(o->v_dim, if_model(has, a.kv_lora_rank));
        const Bytes entry = r.size(o->entry_bytes, has ? std::optional<Bytes>(m->attention.cache_bytes_per_token) : std::nullopt);
        std::int64_t selected = context;
        if (kind == "sparse-mla") {
          selected = r.count(o->selected, has && m->indexer ? std::optional<std::int64_t>(m->indexer->top_k) : std::nullopt);
        }
        r.finish();
        selected = std::min(selected, context);  // a context shorter than the top-k selects every entry
        const std::int64_t heads = per_gpu(model_heads, "heads");
        const MlaKernel& k = o->mla_kernel.given() ? *find_mla_kernel(o->mla_kernel.value) : mla_kernels().front();
        const MlaShape s{requests, queries, heads, qk, v, entry, k.row_tile, k.mma};
        mla_mma = k.mma;
        c = kind == "sparse-mla" ? sparse_mla_attention(s, selected, hw) : dense_mla_attention(s, context, hw);
        op = kind == "sparse-mla" ? "sparse_mla_attention" : "dense_mla_attention";
        shape["heads_per_gpu"] = heads;
        shape["qk_dim"] = qk;
        shape["v_dim"] = v;
        shape["entry_bytes"] = entry.value();
        shape["mla_kernel"] = std::string(k.name);
        shape["row_tile"] = k.row_tile;
        shape["mma_dtype"] = std::string(to_string(k.mma));
        if (kind == "sparse-mla") shape["selected"] = selected;
        title = (kind == "sparse-mla" ? "sparse MLA" : "dense MLA") + std::string(" attention: ") + std::to_string(requests) +
                " requests x " + std::to_string(queries) + " query tokens, " + std::to_string(heads) + " heads, qk " +
                std::to_string(qk) + " / v " + std::to_string(v) + ", " +
                (kind == "sparse-mla" ? std::to_string(selected) + " of " : std::string()) + std::to_string(context) +
                " entries of " + human_count(entry.value(), "B");
      } else {
        const GqaConfig g = has ? m->attention.gqa : GqaConfig{};
        const std::int64_t kv_total = r.count(o->kv_heads, if_model(has, g.kv_heads));
        const std::int64_t head_dim = r.count(o->head_dim, if_model(has, g.head_dim));
        r.finish();
        const DType kv_dtype = o->kv_dtype.given() ? dtype_of(o->kv_dtype.value) : (has ? m->attention.cache_dtype : DType::bf16);
        const DType compute = o->dtype.given() ? dtype_of(o->dtype.value) : (has ? m->activation_dtype : DType::bf16);
        const std::int64_t heads = per_gpu(model_heads, "heads");
        // As the builder: each GPU keeps kv_heads / tp heads, or one replicated when tp > kv_heads.
        const std::int64_t kv_local = std::max<std::int64_t>(1, kv_total / tp);
        if (model_heads % kv_total != 0) {
          bad_option("--heads " + std::to_string(model_heads), "must be a multiple of the " + std::to_string(kv_total) + " kv heads");
        }
        if (kv_total % tp != 0 && tp % kv_total != 0) {
          bad_option("--tensor-parallel " + std::to_string(tp),
                     "must divide or be divided by the " + std::to_string(kv_total) + " kv heads (as in a scenario)");
        }
        c = gqa_attention({requests, queries, heads, kv_local, head_dim, context, kv_dtype, compute}, hw);
        op = "gqa_attention";
        shape["heads_per_gpu"] = heads;
        shape["kv_heads_per_gpu"] = kv_local;
        shape["head_dim"] = head_dim;
        shape["kv_dtype"] = std::string(to_string(kv_dtype));
        shape["dtype"] = std::string(to_string(compute));
        title = "GQA attention: " + std::to_string(requests) + " requests x " + std::to_string(queries) + " query tokens, " +
                std::to_string(heads) + " / " + std::to_string(kv_local) + " kv heads of " + std::to_string(head_dim) + ", " +
                std::to_string(context) + " tokens, " + std::string(to_string(kv_dtype)) + " cache";
      }
      // The kernel classes models/attention.cpp prices each variant with.
      const DType peak = mla ? mla_mma : (o->dtype.given() ? dtype_of(o->dtype.value) : (has ? m->activation_dtype : DType::bf16));
      const KernelSource src = kind == "sparse-mla"
                                   ? kernel_source(peak, "hardware.kernels.sparse_attention", hw.kernels.sparse_attention)
                                   : kernel_source(peak, "hardware.kernels.attention", hw.kernels.attention);
      if (m) shape["model"] = m->name;
      if (o->json) {
        print_json(out, kernel_json(op, c, hw, src, shape));
      } else {
        print_kernel(out, title, hw.name, c);
        print_uses(out, hw, src);
      }
      return 0;
    };
  });
}

// ---- cost indexer: lightning-indexer scoring, then top-k ----

struct IndexerOptions {
  std::string hardware;
  Given<std::string> model;
  bool json = false;
  Given<std::int64_t> requests, queries, context, heads, head_dim, top_k;
  Given<std::string> key_bytes;
};

void add_indexer_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<IndexerOptions>();
  auto* cmd = cost->add_subcommand("indexer", "Lightning-indexer scoring and its top-k selection (DeepSeek-V3.2-Exp), as a "
                                              "simulation prices them");
  add_common_hardware(cmd, o->hardware, o->json);
  add_text(cmd, "--model", o->model, "Model preset with an indexer: fills heads, head dim, key size and top-k");
  add_count(cmd, "--requests", o->requests, "Requests on this GPU");
  o->requests.option->required();
  add_count(cmd, "--queries-per-request", o->queries, "Query tokens per request: the MTP depth (default 1)");
  add_count(cmd, "--context", o->context, "Cached tokens per request: scored by every query token");
  o->context.option->required();
  add_count(cmd, "--heads", o->heads, "Indexer heads (64 in V3.2-Exp)");
  add_count(cmd, "--head-dim", o->head_dim, "Indexer head dimension (128)");
  add_text(cmd, "--key-bytes", o->key_bytes, "Indexer key cache per token, a size such as 132B");
  add_count(cmd, "--top-k", o->top_k, "Entries selected per query token (2048)");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      std::optional<IndexerConfig> ix;
      std::string model_name;
      if (o->model.given()) {
        const ModelConfig m = load_model_preset(o->model.value);
        if (!m.indexer) {
          bad_option("--model " + o->model.value, m.name + " has no lightning indexer; give --heads, --head-dim, --key-bytes "
                                                            "and --top-k without --model");
        }
        ix = m.indexer;
        model_name = m.name;
      }
      const bool has = ix.has_value();
      Resolver r("cost indexer", has);
      const std::int64_t heads = r.count(o->heads, if_model(has, has ? ix->heads : 0));
      const std::int64_t head_dim = r.count(o->head_dim, if_model(has, has ? ix->head_dim : 0));
      const Bytes key = r.size(o->key_bytes, has ? std::optional<Bytes>(ix->cache_bytes_per_token) : std::nullopt);
      const std::int64_t top_k = r.count(o->top_k, if_model(has, has ? ix->top_k : 0));
      r.finish();
      const std::int64_t requests = o->requests.value;
      const std::int64_t queries = o->queries.given() ? o->queries.value : 1;
      const std::int64_t context = o->context.value;
      const KernelCost score = indexer_scoring({requests, queries, heads, head_dim, context, key}, hw);
      const KernelCost select = topk({requests * queries, context, top_k}, hw);
      const KernelSource score_src = kernel_source(DType::fp8, "hardware.kernels.indexer", hw.kernels.indexer);
      KernelSource select_src = kernel_source(std::nullopt, "hardware.kernels.memory_bound", hw.kernels.memory_bound);
      select_src.topk_passes = hw.kernels.topk_passes;
      const Seconds total = score.time + select.time;
      if (o->json) {
        nlohmann::ordered_json shape = {{"requests", requests}, {"queries_per_request", queries}, {"context", context},
                                        {"heads", heads}, {"head_dim", head_dim}, {"key_bytes", key.value()}};
        nlohmann::ordered_json j = {{"seconds", total.value()}, {"op", "indexer"}};
        if (!model_name.empty()) j["model"] = model_name;
        j["scoring"] = kernel_json("indexer_scoring", score, hw, score_src, shape);
        j["topk"] = kernel_json("topk", select, hw, select_src,
                                {{"rows", requests * queries}, {"candidates", context}, {"k", top_k}});
        print_json(out, j);
      } else {
        out << "indexer on " << hw.name << ": " << human_time(total) << " = scoring " << human_time(score.time) << " + top-k "
            << human_time(select.time) << "\n";
        print_kernel(out,
                     "indexer scoring: " + std::to_string(requests) + " requests x " + std::to_string(queries) + " query tokens, " +
                         std::to_string(heads) + " heads of " + std::to_string(head_dim) + ", " + std::to_string(context) +
                         " keys of " + human_count(key.value(), "B"),
                     hw.name, score);
        print_uses(out, hw, score_src);
        print_kernel(out,
                     "top-k: " + std::to_string(top_k) + " of " + std::to_string(context) + " in " +
                         std::to_string(requests * queries) + " rows",
                     hw.name, select);
        print_uses(out, hw, select_src);
      }
      return 0;
    };
  });
}

// ---- cost grouped-gemm: the MoE experts' m-grouped GEMM ----

struct GroupedGemmOptions {
  std::string hardware;
  Given<std::string> model, projection, dtype;
  bool json = false;
  Given<std::int64_t> groups, m, n, k;
};

void add_grouped_gemm_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<GroupedGemmOptions>();
  auto* cmd = cost->add_subcommand("grouped-gemm", "MoE expert GEMM (DeepGEMM m-grouped): --groups weights of k x n, --m "
                                                   "rows spread over them");
  add_common_hardware(cmd, o->hardware, o->json);
  add_text(cmd, "--model", o->model, "MoE model preset: with --projection fills n, k and the dtype");
  add_text(cmd, "--projection", o->projection, "With --model: gate-up (n = 2 x expert_intermediate, k = hidden) or down "
                                               "(n = hidden, k = expert_intermediate)");
  o->projection.option->check(CLI::IsMember({"gate-up", "down"}));
  add_count(cmd, "--groups", o->groups, "Experts on this GPU that received at least one row (their weights are read)");
  o->groups.option->required();
  add_count(cmd, "--m", o->m,
            "Rows over all groups, spread evenly (each group padded to whole tiles): the routed (token, expert) pairs "
            "this GPU received");
  o->m.option->required();
  add_count(cmd, "--n", o->n, "Output features");
  add_count(cmd, "--k", o->k, "Input features");
  add_text(cmd, "--dtype", o->dtype, "bf16, fp16 or fp8 (default bf16, or the model's weight_dtype)");
  o->dtype.option->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      std::optional<ModelConfig> m;
      if (o->model.given()) {
        m = load_moe_model_preset(o->model.value);
        if (!o->projection.given() && !(o->n.given() && o->k.given())) {
          bad_option("cost grouped-gemm --model " + o->model.value, "needs --projection gate-up or down (or --n and --k)");
        }
      } else if (o->projection.given()) {
        bad_option("--projection", "needs --model PRESET (the projection's n and k are the model's)");
      }
      const bool has = m.has_value();
      const bool gate_up = o->projection.value == "gate-up";
      std::optional<std::int64_t> model_n;
      std::optional<std::int64_t> model_k;
      if (has && o->projection.given()) {
        model_n = gate_up ? 2 * m->moe->expert_intermediate : m->hidden;
        model_k = gate_up ? m->hidden : m->moe->expert_intermediate;
      }
      Resolver r("cost grouped-gemm", has);
      const std::int64_t n = r.count(o->n, model_n);
      const std::int64_t k = r.count(o->k, model_k);
      r.finish();
      const DType dtype = o->dtype.given() ? dtype_of(o->dtype.value) : (has ? m->weight_dtype : DType::bf16);
      const GroupedGemmShape shape{o->groups.value, o->m.value, n, k, dtype};
      const KernelCost c = grouped_gemm(shape, hw);
      const KernelSource src = kernel_source(dtype, "hardware.kernels.grouped_gemm", hw.kernels.grouped_gemm);
      if (o->json) {
        nlohmann::ordered_json s = {{"groups", shape.groups}, {"m", shape.m_total}, {"n", n}, {"k", k},
                                    {"dtype", std::string(to_string(dtype))}};
        if (has) s["model"] = m->name;
        if (o->projection.given()) s["projection"] = o->projection.value;
        print_json(out, kernel_json("grouped_gemm", c, hw, src, s));
      } else {
        print_kernel(out,
                     "grouped gemm: " + std::to_string(shape.groups) + " groups, m=" + std::to_string(shape.m_total) +
                         " rows in all, n=" + std::to_string(n) + " k=" + std::to_string(k) + " " + std::string(to_string(dtype)) +
                         (o->projection.given() ? " (" + m->name + " experts " + o->projection.value + ")" : std::string()),
                     hw.name, c);
        print_uses(out, hw, src);
      }
      return 0;
    };
  });
}

// ---- cost dispatch / cost combine: the MoE expert-parallel all-to-alls ----

struct ExpertAlltoallOptions {
  std::string hardware;
  Given<std::string> model, bytes_per_copy, dtype;
  bool json = false;
  Given<std::int64_t> expert_parallel, tokens, experts_per_token, hidden;
};

nlohmann::ordered_json port_json(const char* port, Seconds t, Bytes bytes, const AlltoallPort& p) {
  return {{"port", port},
          {"seconds", t.value()},
          {"bytes", bytes.value()},
          {"bandwidth", field(std::string(p.bandwidth_field), p.bandwidth.value())},
          {"latency", field(std::string(p.latency_field), p.latency.value())}};
}

void print_port(std::ostream& out, const char* label, Seconds t, Bytes bytes, const AlltoallPort& p) {
  out << "  " << label << human_time(t);
  if (bytes.value() > 0) {
    out << "  for " << human_count(bytes.value(), "B") << " each way: " << p.latency_field << " "
        << human_time(p.latency) << " + bytes / " << p.bandwidth_field << " " << human_count(p.bandwidth.value(), "B/s")
        << "\n";
  } else {
    out << "  (no traffic)\n";
  }
}

void add_expert_alltoall_command(CLI::App* cost, CommandAction& action, bool dispatch) {
  auto o = std::make_shared<ExpertAlltoallOptions>();
  const std::string op = dispatch ? "dispatch" : "combine";
  auto* cmd = cost->add_subcommand(
      op, dispatch ? "MoE dispatch: each GPU sends its tokens to their experts' GPUs (fp8 + scales), uniform routing"
                   : "MoE combine: the experts' outputs go back to their tokens' GPUs (activation dtype), uniform routing");
  add_common_hardware(cmd, o->hardware, o->json);
  add_text(cmd, "--model", o->model, "MoE model preset: fills --experts-per-token and --hidden (and the activation dtype)");
  add_count(cmd, "--expert-parallel", o->expert_parallel,
            "GPUs in the expert-parallel group (parallelism.expert_parallel); above the hardware's GPUs per node it "
            "spans whole nodes");
  o->expert_parallel.option->required();
  add_count(cmd, "--tokens", o->tokens, "Tokens per GPU (in a simulation: batch_per_gpu x MTP depth)");
  o->tokens.option->required();
  add_count(cmd, "--experts-per-token", o->experts_per_token, "Routed experts per token (8 in DeepSeek-V3)");
  add_count(cmd, "--hidden", o->hidden, "Hidden size: a copy is hidden x (1 + 4/128) B (dispatch) or hidden x B(dtype) (combine)");
  add_text(cmd, "--bytes-per-copy", o->bytes_per_copy, "Bytes per routed (token, expert) pair instead of --hidden, e.g. 7392B");
  if (!dispatch) {
    add_text(cmd, "--dtype", o->dtype, "Combine: format of the expert outputs, bf16, fp16 or fp32 (default the model's activations)");
    o->dtype.option->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  }
  cmd->callback([o, op, dispatch, &action] {
    action = [o, op, dispatch](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      std::optional<ModelConfig> m;
      const int ep = static_cast<int>(std::min<std::int64_t>(o->expert_parallel.value, 1 << 20));
      if (o->expert_parallel.value > (1 << 20)) bad_option("--expert-parallel", "must be at most 1048576");
      if (o->model.given()) {
        m = load_moe_model_preset(o->model.value);
        if (m->moe->routed_experts % ep != 0) {
          bad_option("--expert-parallel " + std::to_string(ep), "must divide the " + std::to_string(m->moe->routed_experts) +
                                                                    " routed experts of " + m->name);
        }
      }
      if (o->hidden.given() && o->bytes_per_copy.given()) bad_option("--bytes-per-copy", "give --hidden or --bytes-per-copy, not both");
      if (o->bytes_per_copy.given() && o->dtype.given()) bad_option("--dtype", "sets the copy size from --hidden; not with --bytes-per-copy");
      const bool has = m.has_value();
      Resolver r("cost " + op, has);
      const std::int64_t top_k = r.count(o->experts_per_token, if_model(has, has ? m->moe->experts_per_token : 0));
      if (has && o->experts_per_token.given() && top_k > m->moe->routed_experts) {
        bad_option("--experts-per-token " + std::to_string(top_k),
                   "exceeds the " + std::to_string(m->moe->routed_experts) + " routed experts of " + m->name);
      }
      Bytes per_copy(1.0);
      std::int64_t hidden = 0;
      DType dtype = has ? m->activation_dtype : DType::bf16;
      if (o->dtype.given()) dtype = *parse_dtype(o->dtype.value);
      if (o->bytes_per_copy.given()) {
        per_copy = r.size(o->bytes_per_copy, std::nullopt);
      } else {
        hidden = r.count(o->hidden, if_model(has, has ? m->hidden : 0));
        if (hidden > 0) per_copy = dispatch ? dispatch_bytes_per_copy(hidden) : combine_bytes_per_copy(hidden, dtype);
      }
      r.finish();
      const ExpertAlltoallShape shape{ep, hw.gpu.count, o->tokens.value, top_k, per_copy};
      const ExpertAlltoallCost c = expert_alltoall(shape, hw);
      const AlltoallPorts ports = alltoall_ports(hw);
      const int nodes = ep > hw.gpu.count ? ep / hw.gpu.count : 1;
      const std::string bound = c.time.value() <= 0 ? "none" : (c.internode > c.intranode ? "nic" : "nvswitch");
      if (o->json) {
        nlohmann::ordered_json s = {{"expert_parallel", ep}, {"gpus_per_node", hw.gpu.count}, {"nodes", nodes},
                                    {"tokens", shape.tokens}, {"experts_per_token", top_k},
                                    {"bytes_per_copy", per_copy.value()}};
        if (hidden > 0) s["hidden"] = hidden;
        if (hidden > 0 && !dispatch) s["dtype"] = std::string(to_string(dtype));
        if (has) s["model"] = m->name;
        print_json(out, nlohmann::ordered_json{
                            {"seconds", c.time.value()},
                            {"op", op},
                            {"bound", bound},
                            {"copies", c.copies},
                            {"fractions", {{"self", c.self_fraction}, {"intranode", c.intranode_fraction}, {"internode", c.internode_fraction}}},
                            {"intranode", port_json("nvswitch", c.intranode, c.intranode_bytes, ports.nvswitch)},
                            {"internode", port_json("nic", c.internode, c.internode_bytes, ports.nic)},
                            {"shape", s},
                            {"hardware", {{"name", hw.name}}}});
        return 0;
      }
      out << op << " (MoE all-to-all) on " << hw.name << ": EP " << ep << " (" << nodes << (nodes == 1 ? " node" : " nodes")
          << " of " << hw.gpu.count << " GPUs), " << shape.tokens << " tokens x " << top_k << " experts per GPU, "
          << human_count(per_copy.value(), "B") << " per copy\n";
      out << "  time      " << human_time(c.time) << "  (" << (bound == "nic" ? "NIC" : bound == "nvswitch" ? "NVSwitch" : "no traffic")
          << (bound == "none" ? "" : "-bound") << ")\n";
      char line[160];
      std::snprintf(line, sizeof line, "  copies    %.6g per GPU: %.4g%% stay on the GPU, %.4g%% to its node, %.4g%% to other nodes\n",
                    c.copies, 100 * c.self_fraction, 100 * c.intranode_fraction, 100 * c.internode_fraction);
      out << line;
      print_port(out, "nvswitch  ", c.intranode, c.intranode_bytes, ports.nvswitch);
      print_port(out, "nic       ", c.internode, c.internode_bytes, ports.nic);
      out << "  assumes   uniform routing (expected copies), ports uncontended, every GPU of the group at the barrier "
             "together\n";
      return 0;
    };
  });
}

}  // namespace

ModelConfig load_model_preset(const std::string& name) {
  const Preset* preset = find_preset(PresetKind::model, name);
  if (preset == nullptr) {
    const auto names = preset_names(PresetKind::model);
    bad_option("--model " + name,
               "unknown model preset \"" + name + "\"" + did_you_mean(name, names) + "; presets: " + quoted_list(names));
  }
  const Origins origins(preset->origin());
  ObjectReader r(preset->document, "", origins);
  return read_model(r);  // reads every key, finish() included
}

// A model preset for an MoE operator: one with a dense MLP is refused.
ModelConfig load_moe_model_preset(const std::string& name) {
  ModelConfig m = load_model_preset(name);
  if (!m.moe) bad_option("--model " + name, m.name + " has no experts (dense MLP)");
  return m;
}

void add_cost_command(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<CostOptions>();
  auto* cost = app.add_subcommand("cost", "Price one operation with the cost models and print seconds");
  // At most one operation; none or an unknown one is answered below with the list and a "did you mean".
  cost->require_subcommand(0, 1);

  auto* gemm_cmd = cost->add_subcommand("gemm", "Dense GEMM: [m x k] x [k x n]");
  add_common(gemm_cmd, o);
  add_count(gemm_cmd, "--m", o->m, "Rows of the activation (tokens)");
  add_count(gemm_cmd, "--n", o->n, "Output features");
  add_count(gemm_cmd, "--k", o->k, "Input features");
  gemm_cmd->add_option("--dtype", o->dtype, "bf16, fp16 or fp8")->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  gemm_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const GemmShape shape{o->m, o->n, o->k, dtype_of(o->dtype)};
      const KernelCost c = gemm(shape, hw);
      if (o->json) {
        print_seconds_json(out, c.time);
      } else {
        print_kernel(out,
                     "gemm m=" + std::to_string(o->m) + " n=" + std::to_string(o->n) + " k=" + std::to_string(o->k) +
                         " " + o->dtype,
                     hw.name, c);
      }
      return 0;
    };
  });

  auto* norm_cmd = cost->add_subcommand("norm", "RMSNorm or LayerNorm over tokens x hidden");
  add_common(norm_cmd, o);
  norm_cmd->add_option("--kind", o->kind, "rms or layer")->required()->check(CLI::IsMember({"rms", "layer"}));
  add_count(norm_cmd, "--tokens", o->tokens, "Tokens (rows)");
  add_count(norm_cmd, "--hidden", o->hidden, "Hidden size (columns)");
  norm_cmd->add_option("--dtype", o->dtype, "bf16 or fp16")->check(CLI::IsMember({"bf16", "fp16"}));
  norm_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const NormShape shape{o->tokens, o->hidden, dtype_of(o->dtype), o->kind == "rms" ? NormKind::rms : NormKind::layer};
      const KernelCost c = norm(shape, hw);
      if (o->json) {
        print_seconds_json(out, c.time);
      } else {
        print_kernel(out,
                     o->kind + "norm tokens=" + std::to_string(o->tokens) + " hidden=" + std::to_string(o->hidden) +
                         " " + o->dtype,
                     hw.name, c);
      }
      return 0;
    };
  });

  auto* copy_cmd = cost->add_subcommand("copy", "Host<->device copy over PCIe, split into equal chunks (one "
                                                "cudaMemcpyAsync each)");
  add_common(copy_cmd, o);
  copy_cmd->add_option("--direction", o->direction, "h2d or d2h")->required()->check(CLI::IsMember({"h2d", "d2h"}));
  copy_cmd->add_option("--bytes", o->bytes, "Total bytes: a number or a size such as 64MiB")->required();
  copy_cmd->add_option("--chunks", o->chunks, "Equal chunks, one copy call each (default 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  copy_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const Bytes bytes = parse_bytes_argument(o->bytes);
      const CopyDirection dir = o->direction == "h2d" ? CopyDirection::h2d : CopyDirection::d2h;
      const Seconds t = copy_time(dir, bytes, o->chunks, hw.pcie);
      if (o->json) {
        print_seconds_json(out, t);
      } else {
        print_transfer(out, o->direction + " copy of " + human_count(bytes.value(), "B") + " in " +
                                std::to_string(o->chunks) + " chunk(s)",
                       hw.name, t, bytes);
      }
      return 0;
    };
  });

  for (const char* name : {"allreduce", "alltoall"}) {
    const std::string op = name;
    auto* cmd = cost->add_subcommand(op, op == "allreduce" ? "All-reduce of a per-GPU buffer (alpha-beta)"
                                                           : "All-to-all of a per-GPU buffer (alpha-beta)");
    add_common(cmd, o);
    cmd->add_option("--gpus", o->gpus, "GPUs taking part")->required()->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--bytes", o->bytes, "Per-GPU buffer: a number or a size such as 64MiB")->required();
    cmd->callback([o, op, &action] {
      action = [o, op](std::ostream& out) {
        const Hardware hw = load_hardware_preset(o->hardware);
        const Bytes bytes = parse_bytes_argument(o->bytes);
        const Seconds t = op == "allreduce" ? allreduce_time(o->gpus, bytes, hw) : alltoall_time(o->gpus, bytes, hw);
        if (o->json) {
          print_seconds_json(out, t);
        } else {
          print_transfer(out, op + " of " + human_count(bytes.value(), "B") + " per GPU over " + std::to_string(o->gpus) +
                                  " GPUs",
                         hw.name, t, bytes);
        }
        return 0;
      };
    });
  }

  add_attention_command(cost, action);
  add_indexer_command(cost, action);
  add_grouped_gemm_command(cost, action);
  add_expert_alltoall_command(cost, action, /*dispatch=*/true);
  add_expert_alltoall_command(cost, action, /*dispatch=*/false);
  add_cost_routing_command(cost, action);
  add_cost_prefill_command(cost, action);

  // Words that name no operation stay with `cost` (allow_extras is set after the operations so
  // that they do not inherit it: an unknown option of `cost gemm` is still gemm's error).
  cost->allow_extras();
  cost->callback([cost, &action] {
    if (!cost->get_subcommands().empty()) return;
    std::vector<std::string> names;
    for (const auto* sub : cost->get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    std::string word;
    for (const auto& extra : cost->remaining()) {
      if (!extra.empty() && extra[0] != '-') {
        word = extra;
        break;
      }
    }
    const std::string message =
        word.empty() ? "cost needs an operation: " + quoted_list(names) + " (ess-sim cost --help)"
                     : "unknown cost operation \"" + printable(word) + "\"" + did_you_mean(printable(word), names) +
                           "; the operations are " + quoted_list(names) + " (ess-sim cost --help)";
    action = [message](std::ostream&) -> int { throw InputError(message); };
  });
}

}  // namespace ess
