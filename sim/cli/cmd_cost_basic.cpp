// `ess-sim cost gemm | norm | copy | allreduce | alltoall`: one kernel or transfer of a given size,
// priced by its cost model (`--json` prints only the seconds).
#include <memory>
#include <string>

#include "models/collective.h"
#include "models/copy.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "sim/cli/cost_common.h"
#include "sim/config/scenario.h"

namespace ess::cost_cli {

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

void add_basic_options(CLI::App* cmd, const std::shared_ptr<CostOptions>& o) {
  cmd->add_option("--hardware", o->hardware,
                  "Hardware preset (see `ess-sim presets`) or hardware profile file (e.g. calibration/profiles/X.json)")
      ->required();
  cmd->add_flag("--json", o->json, "Print only {\"seconds\": ...}");
}

// `cost allreduce` or `cost alltoall` (alpha-beta).
void add_collective_command(CLI::App* cost, CommandAction& action, const std::string& op) {
  auto o = std::make_shared<CostOptions>();
  auto* cmd = cost->add_subcommand(op, op == "allreduce" ? "All-reduce of a per-GPU buffer (alpha-beta)"
                                                         : "All-to-all of a per-GPU buffer (alpha-beta)");
  add_basic_options(cmd, o);
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

}  // namespace

void add_cost_gemm_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<CostOptions>();
  auto* gemm_cmd = cost->add_subcommand("gemm", "Dense GEMM: [m x k] x [k x n]");
  add_basic_options(gemm_cmd, o);
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
}

void add_cost_norm_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<CostOptions>();
  auto* norm_cmd = cost->add_subcommand("norm", "RMSNorm or LayerNorm over tokens x hidden");
  add_basic_options(norm_cmd, o);
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
}

void add_cost_copy_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<CostOptions>();
  auto* copy_cmd = cost->add_subcommand("copy", "Host<->device copy over PCIe, split into equal chunks (one "
                                                "cudaMemcpyAsync each)");
  add_basic_options(copy_cmd, o);
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
}

void add_cost_allreduce_command(CLI::App* cost, CommandAction& action) { add_collective_command(cost, action, "allreduce"); }

void add_cost_alltoall_command(CLI::App* cost, CommandAction& action) { add_collective_command(cost, action, "alltoall"); }

}  // namespace ess::cost_cli
