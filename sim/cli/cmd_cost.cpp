// `ess-sim cost <op> --hardware H ...`: price one operation with the cost models. Each operation
// is a file (cmd_cost_*.cpp) and one line of kCostOperations.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/cli/commands.h"
#include "sim/cli/cost_common.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/utf8.h"

namespace ess {

namespace {

using AddCostOperation = void (*)(CLI::App* cost, CommandAction& action);

// The operations, in the order `ess-sim cost --help` lists them.
constexpr auto kCostOperations = std::to_array<AddCostOperation>({
    cost_cli::add_cost_gemm_command,
    cost_cli::add_cost_norm_command,
    cost_cli::add_cost_copy_command,
    cost_cli::add_cost_allreduce_command,
    cost_cli::add_cost_alltoall_command,
    cost_cli::add_cost_attention_command,
    cost_cli::add_cost_indexer_command,
    cost_cli::add_cost_grouped_gemm_command,
    cost_cli::add_cost_dispatch_command,
    cost_cli::add_cost_combine_command,
    cost_cli::add_cost_routing_command,
    cost_cli::add_cost_prefill_command,
});

}  // namespace

void add_cost_command(CLI::App& app, CommandAction& action) {
  auto* cost = app.add_subcommand("cost", "Price one operation with the cost models and print seconds");
  // At most one operation; none or an unknown one is answered below with the list and a "did you mean".
  cost->require_subcommand(0, 1);
  for (const AddCostOperation add : kCostOperations) add(cost, action);

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
