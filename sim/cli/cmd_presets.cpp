// `ess-sim presets [--json]`: list the built-in model, hardware and engine presets.
#include <memory>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/config/presets.h"

namespace ess {

void add_presets_command(CLI::App& app, CommandAction& action) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("presets", "List the built-in model, hardware and engine presets (scenarios/models, "
                                            "scenarios/hardware, scenarios/engines)");
  cmd->add_flag("--json", *json, "Print a JSON object {\"model\": [...], \"hardware\": [...], \"engine\": [...]}");
  cmd->callback([json, &action] {
    action = [json](std::ostream& out) {
      if (*json) {
        nlohmann::ordered_json doc;
        for (PresetKind kind : kPresetKinds) {
          auto& list = doc[std::string(to_string(kind))] = nlohmann::ordered_json::array();
          for (const auto* p : presets(kind)) {
            list.push_back({{"name", p->name}, {"path", p->path}, {"description", p->description}});
          }
        }
        out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return 0;
      }
      bool first = true;
      for (PresetKind kind : kPresetKinds) {
        if (!first) out << "\n";
        first = false;
        out << (kind == PresetKind::model ? "Models" : kind == PresetKind::engine ? "Engines" : "Hardware") << " (use as \"" << to_string(kind)
            << "\": \"NAME\" in a scenario):\n";
        std::size_t width = 0;
        for (const auto* p : presets(kind)) width = std::max(width, p->name.size());
        for (const auto* p : presets(kind)) {
          out << "  " << p->name << std::string(width - p->name.size() + 2, ' ') << p->description << "\n";
        }
      }
      return 0;
    };
  });
}

}  // namespace ess
