// `ess-sim cost dispatch | combine`: the MoE expert-parallel all-to-alls, uniform routing.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/alltoall.h"
#include "sim/cli/cost_common.h"
#include "sim/config/scenario.h"

namespace ess::cost_cli {

namespace {

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

// What the text and JSON reports show.
struct AlltoallReport {
  const Hardware& hw;
  const std::string& op;
  bool dispatch = false;
  const std::optional<ModelConfig>& m;
  int ep = 0;
  std::int64_t top_k = 0;
  std::int64_t hidden = 0;
  DType dtype = DType::bf16;
  Bytes per_copy;
  const ExpertAlltoallShape& shape;
  const ExpertAlltoallCost& c;
  int nodes = 1;
  std::string bound;
};

void print_alltoall_json(std::ostream& out, const AlltoallReport& r) {
  const AlltoallPorts ports = alltoall_ports(r.hw);
  nlohmann::ordered_json s = {{"expert_parallel", r.ep}, {"gpus_per_node", r.hw.gpu.count}, {"nodes", r.nodes},
                              {"tokens", r.shape.tokens}, {"experts_per_token", r.top_k},
                              {"bytes_per_copy", r.per_copy.value()}};
  if (r.hidden > 0) s["hidden"] = r.hidden;
  if (r.hidden > 0 && !r.dispatch) s["dtype"] = std::string(to_string(r.dtype));
  if (r.m) s["model"] = r.m->name;
  const ExpertAlltoallCost& c = r.c;
  print_json(out, nlohmann::ordered_json{
                      {"seconds", c.time.value()},
                      {"op", r.op},
                      {"bound", r.bound},
                      {"copies", c.copies},
                      {"fractions", {{"self", c.self_fraction}, {"intranode", c.intranode_fraction}, {"internode", c.internode_fraction}}},
                      {"intranode", port_json("nvswitch", c.intranode, c.intranode_bytes, ports.nvswitch)},
                      {"internode", port_json("nic", c.internode, c.internode_bytes, ports.nic)},
                      {"shape", s},
                      {"hardware", {{"name", r.hw.name}}}});
}

void print_alltoall_text(std::ostream& out, const AlltoallReport& r) {
  const AlltoallPorts ports = alltoall_ports(r.hw);
  const ExpertAlltoallCost& c = r.c;
  const std::string& bound = r.bound;
  out << r.op << " (MoE all-to-all) on " << r.hw.name << ": EP " << r.ep << " (" << r.nodes << (r.nodes == 1 ? " node" : " nodes")
      << " of " << r.hw.gpu.count << " GPUs), " << r.shape.tokens << " tokens x " << r.top_k << " experts per GPU, "
      << human_count(r.per_copy.value(), "B") << " per copy\n";
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
}

int run_expert_alltoall(const ExpertAlltoallOptions& o, const std::string& op, bool dispatch, std::ostream& out) {
  const Hardware hw = load_hardware_preset(o.hardware);
  std::optional<ModelConfig> m;
  const int ep = static_cast<int>(std::min<std::int64_t>(o.expert_parallel.value, 1 << 20));
  if (o.expert_parallel.value > (1 << 20)) bad_option("--expert-parallel", "must be at most 1048576");
  if (o.model.given()) {
    m = load_moe_model_preset(o.model.value);
    if (m->moe->routed_experts % ep != 0) {
      bad_option("--expert-parallel " + std::to_string(ep), "must divide the " + std::to_string(m->moe->routed_experts) +
                                                                " routed experts of " + m->name);
    }
  }
  if (o.hidden.given() && o.bytes_per_copy.given()) bad_option("--bytes-per-copy", "give --hidden or --bytes-per-copy, not both");
  if (o.bytes_per_copy.given() && o.dtype.given()) bad_option("--dtype", "sets the copy size from --hidden; not with --bytes-per-copy");
  const bool has = m.has_value();
  Resolver r("cost " + op, has);
  const std::int64_t top_k = r.count(o.experts_per_token, if_model(has, has ? m->moe->experts_per_token : 0));
  if (has && o.experts_per_token.given() && top_k > m->moe->routed_experts) {
    bad_option("--experts-per-token " + std::to_string(top_k),
               "exceeds the " + std::to_string(m->moe->routed_experts) + " routed experts of " + m->name);
  }
  Bytes per_copy(1.0);
  std::int64_t hidden = 0;
  DType dtype = has ? m->activation_dtype : DType::bf16;
  if (o.dtype.given()) dtype = *parse_dtype(o.dtype.value);
  if (o.bytes_per_copy.given()) {
    per_copy = r.size(o.bytes_per_copy, std::nullopt);
  } else {
    hidden = r.count(o.hidden, if_model(has, has ? m->hidden : 0));
    if (hidden > 0) per_copy = dispatch ? dispatch_bytes_per_copy(hidden) : combine_bytes_per_copy(hidden, dtype);
  }
  r.finish();
  const ExpertAlltoallShape shape{ep, hw.gpu.count, o.tokens.value, top_k, per_copy};
  const ExpertAlltoallCost c = expert_alltoall(shape, hw);
  const int nodes = ep > hw.gpu.count ? ep / hw.gpu.count : 1;
  const std::string bound = c.time.value() <= 0 ? "none" : (c.internode > c.intranode ? "nic" : "nvswitch");
  const AlltoallReport report{hw, op, dispatch, m, ep, top_k, hidden, dtype, per_copy, shape, c, nodes, bound};
  if (o.json) {
    print_alltoall_json(out, report);
  } else {
    print_alltoall_text(out, report);
  }
  return 0;
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
    action = [o, op, dispatch](std::ostream& out) { return run_expert_alltoall(*o, op, dispatch, out); };
  });
}

}  // namespace

void add_cost_dispatch_command(CLI::App* cost, CommandAction& action) {
  add_expert_alltoall_command(cost, action, /*dispatch=*/true);
}

void add_cost_combine_command(CLI::App* cost, CommandAction& action) {
  add_expert_alltoall_command(cost, action, /*dispatch=*/false);
}

}  // namespace ess::cost_cli
