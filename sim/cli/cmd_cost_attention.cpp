// `ess-sim cost attention`: decode attention on one GPU (sparse MLA, dense MLA or GQA) as a simulation prices it.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/attention.h"
#include "models/mla_kernels.h"
#include "sim/cli/cost_common.h"
#include "sim/config/scenario.h"

namespace ess::cost_cli {

namespace {

struct AttentionOptions {
  std::string hardware;
  Given<std::string> model;
  Given<std::string> kind;
  bool json = false;
  Given<std::int64_t> requests, queries, context, tensor_parallel;
  Given<std::int64_t> heads, qk_dim, v_dim, selected, kv_heads, head_dim;
  Given<std::string> entry_bytes, kv_dtype, dtype, mla_kernel;
};

// What every kind of attention is given: the batch, the context and the tensor-parallel split.
struct AttentionCall {
  const AttentionOptions& o;
  const std::optional<ModelConfig>& m;
  const Hardware& hw;
  std::string kind;  // sparse-mla, dense-mla or gqa
  std::int64_t requests = 0;
  std::int64_t queries = 0;
  std::int64_t context = 0;
  std::int64_t tp = 1;
};

// A priced attention: the kernel, its op name and title, and the MMA type whose peak it read.
struct PricedAttention {
  KernelCost cost;
  std::string op;
  std::string title;
  DType peak = DType::bf16;
};

// The model's heads split over the tensor-parallel GPUs (which must divide them).
std::int64_t per_gpu(std::int64_t total, std::int64_t tp, const std::string& name) {
  if (total > 0 && total % tp != 0) {
    bad_option("--tensor-parallel " + std::to_string(tp),
               "must divide the " + std::to_string(total) + " " + name + " (as parallelism.tensor_parallel must)");
  }
  return total / tp;
}

void add_attention_options(CLI::App* cmd, AttentionOptions& o) {
  add_common_hardware(cmd, o.hardware, o.json);
  add_text(cmd, "--model", o.model, "Model preset: fills the kind, heads, dimensions, entry size and top-k");
  add_text(cmd, "--kind", o.kind, "sparse-mla, dense-mla or gqa (default: the model's)");
  o.kind.option->check(CLI::IsMember({"sparse-mla", "dense-mla", "gqa"}));
  add_count(cmd, "--requests", o.requests,
            "Requests this GPU's attention serves (in a simulation: batch_per_gpu x tensor_parallel)");
  o.requests.option->required();
  add_count(cmd, "--queries-per-request", o.queries, "Query tokens per request: the MTP depth (default 1)");
  add_count(cmd, "--context", o.context, "Cached tokens per request");
  o.context.option->required();
  add_count(cmd, "--tensor-parallel", o.tensor_parallel, "GPUs the heads are split over (default 1)");
  add_count(cmd, "--heads", o.heads, "Attention (query) heads of the model, before --tensor-parallel splits them");
  add_count(cmd, "--qk-dim", o.qk_dim, "MLA: query-key dimension per head, kv_lora_rank + qk_rope_head_dim (576)");
  add_count(cmd, "--v-dim", o.v_dim, "MLA: value dimension per head in the latent space, kv_lora_rank (512)");
  add_text(cmd, "--entry-bytes", o.entry_bytes, "MLA: one latent cache entry, a size such as 656B");
  add_count(cmd, "--selected", o.selected,
            "Sparse MLA: entries each query token attends to (default the indexer's top_k; at most --context)");
  const std::vector<std::string> kernels = mla_kernel_names();
  add_text(cmd, "--mla-kernel", o.mla_kernel,
           "MLA: the decode kernel (models/mla_kernels.h: its row tile and MMA type; default " + kernels.front() +
               ", the engine presets')");
  o.mla_kernel.option->check(CLI::IsMember(kernels));
  add_count(cmd, "--kv-heads", o.kv_heads, "GQA: key/value heads of the model");
  add_count(cmd, "--head-dim", o.head_dim, "GQA: dimension per head");
  add_text(cmd, "--kv-dtype", o.kv_dtype, "GQA: K/V cache format, bf16, fp16 or fp8 (default the model's cache_dtype)");
  o.kv_dtype.option->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  add_text(cmd, "--dtype", o.dtype, "GQA: format of q, the output and the math, bf16 or fp16 (default the model's activations)");
  o.dtype.option->check(CLI::IsMember({"bf16", "fp16"}));
}

// The kind (--kind, else the model's), checked against the model, and the options it does not use refused.
std::string attention_kind(const AttentionOptions& o, const std::optional<ModelConfig>& m) {
  std::string kind = o.kind.value;
  if (!o.kind.given()) {
    if (!m) bad_option("cost attention", "needs --kind (sparse-mla, dense-mla or gqa) or --model PRESET");
    kind = m->attention.kind == AttentionKind::gqa ? "gqa" : (m->indexer ? "sparse-mla" : "dense-mla");
  }
  const bool mla = kind != "gqa";
  if (m && mla != (m->attention.kind == AttentionKind::mla)) {
    bad_option("--kind " + kind, m->name + " has " + (mla ? "GQA" : "MLA") + " attention; use --kind " +
                                     (mla ? "gqa" : (m->indexer ? "sparse-mla" : "dense-mla")) + " or no --kind");
  }
  if (mla) {
    refuse_unused({o.kv_heads.option, o.head_dim.option, o.kv_dtype.option, o.dtype.option},
                  "applies to --kind gqa, not " + kind);
  } else {
    refuse_unused({o.qk_dim.option, o.v_dim.option, o.entry_bytes.option, o.selected.option, o.mla_kernel.option},
                  "applies to MLA (--kind sparse-mla or dense-mla), not gqa");
  }
  if (kind == "dense-mla") refuse_unused({o.selected.option}, "applies to --kind sparse-mla, not dense-mla");
  return kind;
}

PricedAttention price_mla(const AttentionCall& a, Resolver& r, std::int64_t model_heads, nlohmann::ordered_json& shape) {
  const AttentionOptions& o = a.o;
  const bool has = a.m.has_value();
  const bool sparse = a.kind == "sparse-mla";
  const MlaConfig mla = has ? a.m->attention.mla : MlaConfig{};
  const std::int64_t qk = r.count(o.qk_dim, if_model(has, mla.kv_lora_rank + mla.qk_rope_head_dim));
  const std::int64_t v = r.count(o.v_dim, if_model(has, mla.kv_lora_rank));
  const Bytes entry = r.size(o.entry_bytes, has ? std::optional<Bytes>(a.m->attention.cache_bytes_per_token) : std::nullopt);
  std::int64_t selected = a.context;
  if (sparse) {
    selected = r.count(o.selected, has && a.m->indexer ? std::optional<std::int64_t>(a.m->indexer->top_k) : std::nullopt);
  }
  r.finish();
  selected = std::min(selected, a.context);  // a context shorter than the top-k selects every entry
  const std::int64_t heads = per_gpu(model_heads, a.tp, "heads");
  const MlaKernel& k = o.mla_kernel.given() ? *find_mla_kernel(o.mla_kernel.value) : mla_kernels().front();
  const MlaShape s{a.requests, a.queries, heads, qk, v, entry, k.row_tile, k.mma};
  PricedAttention p;
  p.peak = k.mma;
  p.cost = sparse ? sparse_mla_attention(s, selected, a.hw) : dense_mla_attention(s, a.context, a.hw);
  p.op = sparse ? "sparse_mla_attention" : "dense_mla_attention";
  shape["heads_per_gpu"] = heads;
  shape["qk_dim"] = qk;
  shape["v_dim"] = v;
  shape["entry_bytes"] = entry.value();
  shape["mla_kernel"] = std::string(k.name);
  shape["row_tile"] = k.row_tile;
  shape["mma_dtype"] = std::string(to_string(k.mma));
  if (sparse) shape["selected"] = selected;
  p.title = (sparse ? "sparse MLA" : "dense MLA") + std::string(" attention: ") + std::to_string(a.requests) +
            " requests x " + std::to_string(a.queries) + " query tokens, " + std::to_string(heads) + " heads, qk " +
            std::to_string(qk) + " / v " + std::to_string(v) + ", " +
            (sparse ? std::to_string(selected) + " of " : std::string()) + std::to_string(a.context) + " entries of " +
            human_count(entry.value(), "B");
  return p;
}

PricedAttention price_gqa(const AttentionCall& a, Resolver& r, std::int64_t model_heads, nlohmann::ordered_json& shape) {
  const AttentionOptions& o = a.o;
  const bool has = a.m.has_value();
  const GqaConfig g = has ? a.m->attention.gqa : GqaConfig{};
  const std::int64_t kv_total = r.count(o.kv_heads, if_model(has, g.kv_heads));
  const std::int64_t head_dim = r.count(o.head_dim, if_model(has, g.head_dim));
  r.finish();
  const DType kv_dtype = o.kv_dtype.given() ? dtype_of(o.kv_dtype.value) : (has ? a.m->attention.cache_dtype : DType::bf16);
  const DType compute = o.dtype.given() ? dtype_of(o.dtype.value) : (has ? a.m->activation_dtype : DType::bf16);
  const std::int64_t heads = per_gpu(model_heads, a.tp, "heads");
  // As the builder: each GPU keeps kv_heads / tp heads, or one replicated when tp > kv_heads.
  const std::int64_t kv_local = std::max<std::int64_t>(1, kv_total / a.tp);
  if (model_heads % kv_total != 0) {
    bad_option("--heads " + std::to_string(model_heads), "must be a multiple of the " + std::to_string(kv_total) + " kv heads");
  }
  if (kv_total % a.tp != 0 && a.tp % kv_total != 0) {
    bad_option("--tensor-parallel " + std::to_string(a.tp),
               "must divide or be divided by the " + std::to_string(kv_total) + " kv heads (as in a scenario)");
  }
  PricedAttention p;
  p.peak = compute;
  p.cost = gqa_attention({a.requests, a.queries, heads, kv_local, head_dim, a.context, kv_dtype, compute}, a.hw);
  p.op = "gqa_attention";
  shape["heads_per_gpu"] = heads;
  shape["kv_heads_per_gpu"] = kv_local;
  shape["head_dim"] = head_dim;
  shape["kv_dtype"] = std::string(to_string(kv_dtype));
  shape["dtype"] = std::string(to_string(compute));
  p.title = "GQA attention: " + std::to_string(a.requests) + " requests x " + std::to_string(a.queries) + " query tokens, " +
            std::to_string(heads) + " / " + std::to_string(kv_local) + " kv heads of " + std::to_string(head_dim) + ", " +
            std::to_string(a.context) + " tokens, " + std::string(to_string(kv_dtype)) + " cache";
  return p;
}

int run_attention(const AttentionOptions& o, std::ostream& out) {
  const Hardware hw = load_hardware_preset(o.hardware);
  const std::optional<ModelConfig> m =
      o.model.given() ? std::optional<ModelConfig>(load_model_preset(o.model.value)) : std::nullopt;
  const std::string kind = attention_kind(o, m);
  const bool has = m.has_value();
  Resolver r("cost attention --kind " + kind, has);
  const AttentionCall a{o,
                        m,
                        hw,
                        kind,
                        o.requests.value,
                        o.queries.given() ? o.queries.value : 1,
                        o.context.value,
                        o.tensor_parallel.given() ? o.tensor_parallel.value : 1};
  const std::int64_t model_heads = r.count(o.heads, if_model(has, has ? m->attention.heads : 0));
  nlohmann::ordered_json shape = {{"kind", kind}, {"requests", a.requests}, {"queries_per_request", a.queries},
                                  {"context", a.context}, {"tensor_parallel", a.tp}};
  const PricedAttention p = kind != "gqa" ? price_mla(a, r, model_heads, shape) : price_gqa(a, r, model_heads, shape);
  // The kernel classes models/attention.cpp prices each variant with.
  const KernelSource src = kind == "sparse-mla"
                               ? kernel_source(p.peak, "hardware.kernels.sparse_attention", hw.kernels.sparse_attention)
                               : kernel_source(p.peak, "hardware.kernels.attention", hw.kernels.attention);
  if (m) shape["model"] = m->name;
  if (o.json) {
    print_json(out, kernel_json(p.op, p.cost, hw, src, shape));
  } else {
    print_kernel(out, p.title, hw.name, p.cost);
    print_uses(out, hw, src);
  }
  return 0;
}

}  // namespace

void add_cost_attention_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<AttentionOptions>();
  auto* cmd = cost->add_subcommand(
      "attention", "Decode attention on one GPU: sparse MLA (V3.2-Exp), dense MLA (V3) or GQA (Llama), as a simulation prices it");
  add_attention_options(cmd, *o);
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) { return run_attention(*o, out); };
  });
}

}  // namespace ess::cost_cli
