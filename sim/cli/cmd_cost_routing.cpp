// `ess-sim cost routing`: the expert-load model (sim/graph/expert_routing.h) on one layout, or
// `--fit TABLE`: its two sigmas fitted to published load statistics, with every column compared.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/routing_fit.h"
#include "sim/cli/cost_common.h"
#include "sim/config/config_error.h"
#include "sim/config/scenario.h"

namespace ess {

namespace {

struct RoutingOptions {
  std::string fit;
  std::string model = "deepseek-v3.2-exp";
  int ep = 32;
  std::int64_t redundant = 0;
  std::string eplb = "off";
  std::int64_t tokens_per_rank = 128;
  double skew = kDefaultExpertSkew;
  double drift = kDefaultExpertDrift;
  RoutingFitOptions run;
  bool json = false;
};

std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

nlohmann::ordered_json stats_json(const ExpertLoadStats& s) {
  return {{"rank_mean", s.rank_mean}, {"rank_std", s.rank_std}, {"rank_imbalance", s.rank_imbalance},
          {"slot_mean", s.slot_mean}, {"slot_std", s.slot_std}, {"slot_imbalance", s.slot_imbalance}};
}

int print_fit(const RoutingOptions& o, std::ostream& out) {
  const auto rows = read_expert_load_table(o.fit);
  const RoutingFit fit = fit_routing(rows, o.run);
  if (o.json) {
    nlohmann::ordered_json j = {{"table", o.fit}, {"skew", fit.skew}, {"drift", fit.drift}, {"rows", nlohmann::ordered_json::array()}};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      j["rows"].push_back({{"config", rows[i].config}, {"measured", stats_json(rows[i].measured)},
                           {"predicted", stats_json(fit.predicted[i])}});
    }
    out << j.dump() << "\n";
    return 0;
  }
  out << "expert load fitted to " << o.fit << " (" << o.run.layers << " layers x " << o.run.passes << " passes, seed "
      << o.run.seed << ")\n";
  out << "  workload.expert_skew  = " << num("%.4f", fit.skew) << "   (sigma of each expert's long-run popularity)\n";
  out << "  workload.expert_drift = " << num("%.4f", fit.drift) << "   (sigma of its change from pass to pass)\n";
  out << "  fitted: rank imbalance (without EPLB: skew and drift together; with EPLB: drift); the rest are checks\n\n";
  out << "  config              column           measured  predicted   error\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ExpertLoadStats& m = rows[i].measured;
    const ExpertLoadStats& p = fit.predicted[i];
    const std::pair<const char*, std::pair<double, double>> cols[] = {
        {"rank std", {m.rank_std, p.rank_std}},       {"rank imbalance", {m.rank_imbalance, p.rank_imbalance}},
        {"slot std", {m.slot_std, p.slot_std}},       {"slot imbalance", {m.slot_imbalance, p.slot_imbalance}}};
    for (const auto& [name, v] : cols) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-19s %-15s %9.3f %10.3f %+6.1f%%\n", rows[i].config.c_str(), name, v.first,
                    v.second, 100.0 * (v.second - v.first) / v.first);
      out << line;
    }
  }
  return 0;
}

int print_layout(const RoutingOptions& o, std::ostream& out) {
  const ModelConfig m = load_moe_model_preset(o.model);
  ExpertLoadLayout layout;
  layout.routed = m.moe->routed_experts;
  layout.top_k = static_cast<int>(m.moe->experts_per_token);
  layout.ranks = o.ep;
  layout.slots = layout.routed + o.redundant;
  layout.tokens = o.tokens_per_rank * o.ep;
  if (layout.slots % o.ep != 0) {
    throw ConfigError("--ep " + std::to_string(o.ep), "",
                      "must divide the " + std::to_string(layout.slots) + " physical experts (" +
                          std::to_string(layout.routed) + " routed + " + std::to_string(o.redundant) + " redundant)");
  }
  const bool eplb = o.eplb == "on";
  if (o.redundant > 0 && !eplb) {
    throw ConfigError("--redundant " + std::to_string(o.redundant), "", "redundant experts need --eplb on");
  }
  const RoutingParams params{o.skew, o.drift, eplb};
  const ExpertLoadStats s = expert_load_stats(layout, params, o.run.layers, o.run.passes, o.run.seed);
  if (o.json) {
    nlohmann::ordered_json j = {{"model", m.name}, {"ep", o.ep}, {"slots", layout.slots}, {"eplb", eplb},
                                {"tokens_per_rank", o.tokens_per_rank}, {"skew", o.skew}, {"drift", o.drift}};
    j["stats"] = stats_json(s);
    out << j.dump() << "\n";
    return 0;
  }
  out << "expert load: " << m.name << " (" << layout.routed << " experts, top-" << layout.top_k << "), EP" << o.ep << ", "
      << layout.slots << " slots, EPLB " << o.eplb << ", " << o.tokens_per_rank << " tokens per rank, skew "
      << num("%.3f", o.skew) << ", drift " << num("%.3f", o.drift) << "\n";
  out << "  per rank: mean " << num("%.1f", s.rank_mean) << " copies, std " << num("%.1f", s.rank_std)
      << ", hottest rank +" << num("%.1f", 100.0 * s.rank_imbalance) << "% over the mean\n";
  out << "  per slot: mean " << num("%.1f", s.slot_mean) << " copies, std " << num("%.1f", s.slot_std)
      << ", hottest slot +" << num("%.1f", 100.0 * s.slot_imbalance) << "% over the mean\n";
  out << "  (the all-to-all and the experts of a step wait for the hottest rank)\n";
  return 0;
}

}  // namespace

void cost_cli::add_cost_routing_command(CLI::App* cost, CommandAction& action) {
  auto o = std::make_shared<RoutingOptions>();
  auto* cmd = cost->add_subcommand(
      "routing", "Expert load across the ranks of an expert-parallel group under skewed routing, with or without EPLB "
                 "(sim/graph/README.md, \"Expert load\"); --fit TABLE fits the skew and drift to published statistics");
  cmd->add_option("--fit", o->fit, "Fit workload.expert_skew and workload.expert_drift to an expert-load table (e.g. "
                                   "calibration/data/public/trtllm/ep_load_imbalance.csv) and compare every column");
  cmd->add_option("--model", o->model, "MoE model preset (default deepseek-v3.2-exp)");
  cmd->add_option("--ep", o->ep, "Ranks of the expert-parallel group (default 32)")->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--redundant", o->redundant, "Redundant expert slots (default 0; need --eplb on)")
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--eplb", o->eplb, "on or off (default off)")->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--tokens-per-rank", o->tokens_per_rank, "Tokens each rank routes per pass (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--skew", o->skew, "workload.expert_skew (default: the scenario default)")->check(CLI::Range(0.0, 4.0));
  cmd->add_option("--drift", o->drift, "workload.expert_drift (default: the scenario default)")->check(CLI::Range(0.0, 4.0));
  cmd->add_option("--layers", o->run.layers, "MoE layers simulated (default 58)")->check(CLI::Range(1, 1000));
  cmd->add_option("--passes", o->run.passes, "Passes per layer (default 8)")->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", o->run.seed, "Seed (default 1)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) { return o->fit.empty() ? print_layout(*o, out) : print_fit(*o, out); };
  });
}

}  // namespace ess
