// What the `ess-sim cost` subcommands share across their files (cmd_cost.cpp, cmd_cost_routing.cpp, cmd_cost_prefill.cpp).
#pragma once

#include <string>

#include "sim/cli/commands.h"
#include "sim/config/model_config.h"

namespace ess {

// A model preset by name; ConfigError naming --model with a "did you mean" when unknown.
[[nodiscard]] ModelConfig load_model_preset(const std::string& name);
// The same for an MoE operator: a model with a dense MLP is refused.
[[nodiscard]] ModelConfig load_moe_model_preset(const std::string& name);

// `cost routing` (cmd_cost_routing.cpp).
void add_cost_routing_command(CLI::App* cost, CommandAction& action);
// `cost prefill` (cmd_cost_prefill.cpp).
void add_cost_prefill_command(CLI::App* cost, CommandAction& action);

}  // namespace ess
