#include "kernels/bench/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <system_error>

#include "sim/base/text.h"

namespace ess::bench {

namespace {

constexpr std::array<std::string_view, 8> kSuiteNames = {
    "gemm", "norm", "copy", "gather", "interference", "d2d", "p2p", "collectives"};

constexpr std::array<std::string_view, 8> kOptionNames = {
    "--out", "--only", "--quick", "--device", "--max-seconds", "--gemm-shapes", "--help", "--version"};

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  const std::string best = closest_name(word, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}


std::vector<Suite> parse_suite_list(std::string_view list) {
  std::array<bool, kAllSuites.size()> chosen{};
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view name =
        list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (name.empty()) {
      throw OptionError("--only: empty measurement name in '" + std::string(list) +
                        "' (expected a comma-separated list of: " + join_names(kSuiteNames) + ")");
    }
    const std::optional<Suite> suite = parse_suite(name);
    if (!suite) {
      throw OptionError("--only: unknown measurement '" + std::string(name) + "'" +
                        did_you_mean(name, kSuiteNames) + "; known: " + join_names(kSuiteNames));
    }
    const auto index = static_cast<std::size_t>(*suite);
    if (chosen[index]) {
      throw OptionError("--only: '" + std::string(name) + "' is listed twice");
    }
    chosen[index] = true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<Suite> suites;
  for (const Suite s : kAllSuites) {
    if (chosen[static_cast<std::size_t>(s)]) suites.push_back(s);
  }
  return suites;
}

int parse_device(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw OptionError("--device: expected a CUDA device index (an integer >= 0), got '" +
                      std::string(text) + "'");
  }
  return value;
}

double parse_seconds(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || !(value > 0.0)) {
    throw OptionError("--max-seconds: expected a number of seconds > 0, got '" + std::string(text) +
                      "'");
  }
  return value;
}

}  // namespace

std::string_view to_string(Suite s) { return kSuiteNames[static_cast<std::size_t>(s)]; }

std::optional<Suite> parse_suite(std::string_view name) {
  for (std::size_t i = 0; i < kSuiteNames.size(); ++i) {
    if (kSuiteNames[i] == name) return kAllSuites[i];
  }
  return std::nullopt;
}

std::string closest_name(std::string_view word, std::span<const std::string_view> candidates) {
  // A third of the word's length allows one slip in a short name ("gemn") and two or three in a
  // long one ("colectives"), without offering "p2p" for "xyz".
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string_view c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

bool Options::runs(Suite s) const {
  return std::find(suites.begin(), suites.end(), s) != suites.end();
}

Command parse_command_line(std::span<const std::string_view> args) {
  Command command;
  Options& o = command.options;
  std::array<bool, kOptionNames.size()> seen{};
  bool have_only = false;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h") arg = "--help";
    if (arg.substr(0, 2) != "--") {
      throw OptionError("unexpected argument '" + std::string(arg) +
                        "' (ess-bench takes only options; see --help)");
    }
    // "--name value" and "--name=value" are both accepted.
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const auto known = std::find(kOptionNames.begin(), kOptionNames.end(), name);
    if (known == kOptionNames.end()) {
      throw OptionError("unknown option '" + std::string(name) + "'" +
                        did_you_mean(name, kOptionNames) + "; see --help");
    }
    const auto index = static_cast<std::size_t>(known - kOptionNames.begin());
    if (seen[index]) throw OptionError(std::string(name) + " is given twice");
    seen[index] = true;

    const bool is_flag = name == "--quick" || name == "--help" || name == "--version";
    if (is_flag) {
      if (inline_value) throw OptionError(std::string(name) + " takes no value");
      if (name == "--quick") o.quick = true;
      if (name == "--help") command.action = Action::help;
      if (name == "--version" && command.action != Action::help) command.action = Action::version;
      continue;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= args.size()) throw OptionError(std::string(name) + " needs a value");
      value = args[++i];
    }
    if (name == "--out") {
      if (value.empty()) throw OptionError("--out: expected a file name, got ''");
      o.out = std::string(value);
    } else if (name == "--only") {
      o.suites = parse_suite_list(value);
      have_only = true;
    } else if (name == "--device") {
      o.device = parse_device(value);
    } else if (name == "--max-seconds") {
      o.max_seconds = parse_seconds(value);
    } else if (name == "--gemm-shapes") {
      if (value.empty()) throw OptionError("--gemm-shapes: expected a file name, got ''");
      o.gemm_shapes = std::string(value);
    }
  }

  if (!have_only) o.suites.assign(kAllSuites.begin(), kAllSuites.end());
  if (command.action == Action::run && o.out.empty()) {
    throw OptionError("--out FILE.json is required");
  }
  return command;
}

std::string usage() {
  return "usage: ess-bench --out FILE.json [--only LIST] [--quick] [--device N] [--max-seconds S]\n"
         "                 [--gemm-shapes FILE.csv]\n"
         "\n"
         "Measures GEMMs, norms, copies, scattered-row gathers, device and peer copies and NCCL\n"
         "collectives on CUDA GPUs, and writes them as ess-sim/measurements/v1 JSON.\n"
         "\n"
         "  --out FILE.json    where to write the measurements (written whole or not at all)\n"
         "  --only LIST        comma-separated subset of: gemm, norm, copy, gather, interference,\n"
         "                     d2d, p2p, collectives (default: all)\n"
         "  --quick            a reduced sweep for a smoke test (well under a minute)\n"
         "  --device N         the CUDA device to measure (default 0)\n"
         "  --max-seconds S    stop starting new samples after S seconds; the rest are skipped\n"
         "                     and listed in environment.method\n"
         "  --gemm-shapes FILE.csv  weight GEMMs to measure first, ahead of the built-in list\n"
         "                     (validate/data/prepared/gemm-shapes.csv; format in kernels/README.md)\n"
         "  --version          print the version and exit\n"
         "  --help, -h         print this help and exit\n";
}

std::string join_names(std::span<const std::string_view> names) {
  std::string out;
  for (const std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace ess::bench
