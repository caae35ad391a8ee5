// `ess-sim launch --serve "vllm serve MODEL -tp 8 ..." --bench "vllm bench serve ..." --hardware
// NAME [--engine PRESET] [-o FILE] [--name NAME]`: an engine's launch and its benchmark client's
// command as a serving scenario (sim/config/launch_command.h), with what became of every flag.
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>

#include "sim/cli/commands.h"
#include "sim/config/launch_command.h"
#include "sim/config/scenario.h"
#include "sim/io/atomic_file.h"

namespace ess {

namespace {

std::string report_table(const std::vector<FlagReport>& report) {
  std::size_t width = 4;
  for (const auto& r : report) width = std::max(width, r.flag.size());
  std::ostringstream o;
  for (const auto& r : report) {
    o << "  " << std::left << std::setw(6) << r.command << std::setw(static_cast<int>(width) + 2) << r.flag << std::setw(9)
      << fate_name(r.fate) << r.effect << "\n";
  }
  return o.str();
}

}  // namespace

void add_launch_command(CLI::App& app, CommandAction& action) {
  struct Options {
    LaunchRequest q;
    std::string engine;
    std::string out;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "launch", "Turn an engine's launch command and its benchmark client's command into a serving scenario, "
                "saying what became of every flag (used, ignored and why, or assumed)");
  cmd->add_option("--serve", opts->q.serve,
                  "The launch, quoted: \"vllm serve MODEL -tp 8\", \"python3 -m sglang.launch_server --model-path MODEL "
                  "--tp 8\" or \"trtllm-serve MODEL --tp_size 8\"")
      ->required();
  cmd->add_option("--bench", opts->q.bench,
                  "The client, quoted: \"vllm bench serve ...\", \"python3 -m sglang.bench_serving ...\" or "
                  "\"python3 benchmarks/benchmark_serving.py ...\" (random dataset)")
      ->required();
  cmd->add_option("--hardware", opts->q.hardware, "Hardware preset or profile the launch runs on (`ess-sim presets`)")->required();
  cmd->add_option("--engine", opts->engine, "Engine preset of the launch's engine (default: its late-2025 preset), e.g. vllm-0.7");
  cmd->add_option("--name", opts->q.name, "The scenario's name")->capture_default_str();
  cmd->add_option("-o,--output", opts->out, "Write the scenario here (default: print it after the report)");
  cmd->callback([opts, &action] {
    action = [opts](std::ostream& out) {
      LaunchRequest q = opts->q;
      if (!opts->engine.empty()) q.engine = opts->engine;
      const LaunchTranslation t = translate_launch(q);
      const std::string text = format_resolved(t.scenario);
      out << "What became of each flag:\n" << report_table(t.report);
      if (opts->out.empty()) {
        out << "\n" << text;
      } else {
        write_file_atomically(opts->out, text);
        out << "\nwrote " << opts->out << ": run it with `ess-sim run " << opts->out << "`\n";
      }
      return 0;
    };
  });
}

}  // namespace ess
