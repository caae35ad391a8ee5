// `ess-sim calibrate MEASUREMENTS... --base HW -o PROFILE.json [--gpu TEXT] [--name N] [--folds K]`:
// fit the cost models to measurements, print the per-model error table, write a hardware profile.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "calibration/measurements.h"
#include "models/fit.h"
#include "sim/base/error.h"
#include "sim/cli/cli.h"
#include "sim/cli/commands.h"
#include "sim/config/scenario.h"
#include "sim/io/atomic_file.h"

namespace ess {

void add_calibrate_command(CLI::App& app, CommandAction& action) {
  struct Options {
    std::vector<std::string> files;
    std::string base;
    std::string output;
    std::string gpu;
    std::string name;
    std::string description;
    std::vector<std::string> transfer;
    int folds = 5;
    std::uint64_t seed = 1;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Fit the cost models to measurements (ess-bench JSON, Vidur or Liger CSV, the DeepSeek tables), print each model's fit and k-fold "
      "cross-validated error, and write a hardware profile usable wherever a preset is");
  cmd->add_option("MEASUREMENTS", o->files,
                  "Measurement files (see calibration/README.md); none when every value comes from --transfer");
  cmd->add_option("--base", o->base, "Hardware preset or profile the profile starts from (datasheet facts, values "
                                     "no measurement covers)")
      ->required();
  cmd->add_option("-o,--output", o->output, "Profile file to write (e.g. calibration/profiles/h200-sxm-measured.json)")
      ->required();
  cmd->add_option("--gpu", o->gpu, "Use only rows measured on a GPU whose name contains this text (e.g. A100)");
  cmd->add_option("--name", o->name, "Profile name (default: <base>-measured)");
  cmd->add_option("--transfer", o->transfer,
                  "Profile of another GPU whose fitted efficiencies, ramps and overheads carry over (repeatable, "
                  "first wins; calibration/README.md, transfer rules)")
      ->allow_extra_args(false);
  cmd->add_option("--description", o->description, "Profile description (default: generated)");
  cmd->add_option("--folds", o->folds, "k of the k-fold cross-validation (default 5)")->check(CLI::Range(2, 100));
  cmd->add_option("--seed", o->seed, "Seed of the fold assignment (default 1)");
  cmd->add_flag("--json", o->json, "Print the profile instead of the error table");
  cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      ReadOptions read;
      read.gpu = o->gpu;
      read.gpus_per_node = load_hardware_preset(o->base).gpu.count;
      if (o->files.empty() && o->transfer.empty()) {
        throw MeasurementError("calibrate", "", "no measurement files given (and no --transfer profile)");
      }
      const MeasurementSet measurements = o->files.empty() ? MeasurementSet{} : read_measurements(o->files, read);
      CalibrateOptions options;
      options.base = o->base;
      options.name = o->name.empty() ? std::filesystem::path(o->output).stem().string() : o->name;
      options.description = o->description;
      options.folds = o->folds;
      options.seed = o->seed;
      options.transfer = o->transfer;
      // The command as a POSIX sh line (every argument quoted as needed), so that pasting it
      // from the profile reruns exactly this calibration.
      std::vector<std::string> words{"ess-sim", "calibrate"};
      words.insert(words.end(), o->files.begin(), o->files.end());
      words.insert(words.end(), {"--base", o->base});
      if (!o->gpu.empty()) words.insert(words.end(), {"--gpu", o->gpu});
      if (!o->name.empty()) words.insert(words.end(), {"--name", o->name});
      for (const auto& t : o->transfer) words.insert(words.end(), {"--transfer", t});
      if (!o->description.empty()) words.insert(words.end(), {"--description", o->description});
      words.insert(words.end(), {"--folds", std::to_string(o->folds), "--seed", std::to_string(o->seed), "-o", o->output});
      options.command = shell_command(words);
      const Calibration c = [&] {
        try {
          return calibrate(measurements, options);
        } catch (const FitError& e) {  // data that cannot determine a model: bad input, named as such
          throw InputError(std::string("cannot calibrate: ") + e.what());
        }
      }();
      const std::string text = c.profile.dump(2) + "\n";
      write_file_atomically(o->output, text);
      if (o->json) {
        out << text;
      } else {
        out << format_calibration_report(c) << "\n  wrote " << o->output << "\n";
      }
      return 0;
    };
  });
}

}  // namespace ess
