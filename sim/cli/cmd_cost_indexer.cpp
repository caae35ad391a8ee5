// `ess-sim cost indexer`: lightning-indexer scoring, then its top-k selection (DeepSeek-V3.2-Exp).
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/attention.h"
#include "sim/cli/cost_common.h"
#include "sim/config/scenario.h"

namespace ess::cost_cli {

namespace {

struct IndexerOptions {
  std::string hardware;
  Given<std::string> model;
  bool json = false;
  Given<std::int64_t> requests, queries, context, heads, head_dim, top_k;
  Given<std::string> key_bytes;
};

}  // namespace

void add_cost_indexer_command(CLI::App* cost, CommandAction& action) {
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

}  // namespace ess::cost_cli
