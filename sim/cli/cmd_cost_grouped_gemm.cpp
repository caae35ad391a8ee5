// `ess-sim cost grouped-gemm`: the MoE experts' m-grouped GEMM (DeepGEMM), each group padded to whole tiles.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/gemm.h"
#include "sim/cli/cost_common.h"
#include "sim/config/scenario.h"

namespace ess::cost_cli {

namespace {

struct GroupedGemmOptions {
  std::string hardware;
  Given<std::string> model, projection, dtype;
  bool json = false;
  Given<std::int64_t> groups, m, n, k;
};

}  // namespace

void add_cost_grouped_gemm_command(CLI::App* cost, CommandAction& action) {
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

}  // namespace ess::cost_cli
