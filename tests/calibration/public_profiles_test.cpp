// The shipped profiles calibration/profiles/*-measured.json are recomputed from the public
// measurements in calibration/data/public/ (and, for the transferred ones, from the profiles they
// transfer from) on every run, with the command each records. The recomputed profile must match the shipped one (a stale profile fails: regenerate it
// with the command it records), and each model's cross-validated error must stay under the
// ceiling written here, so a regenerated profile cannot quietly get worse.
//
// "Match" allows for the CPU: glibc picks its exp/log/pow per CPU, so the last digits of a fit and
// of its errors differ between an Intel and an AMD machine. Structure, strings and integers must be
// equal; the written parameters (rounded to 4 digits, parameters under their physical floors
// exactly 0: models/fit.h) within 1e-6 relative; the error summaries within 1e-4 relative (1e-9
// absolute near 0), far below the 0.1% the README quotes and far above libm's differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/calibrate.h"
#include "calibration/measurements.h"

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// The words /bin/sh makes of `command` (a recorded `ess-sim calibrate ...` line): the line is run
// as the arguments of printf, which prints each word followed by a NUL.
std::vector<std::string> shell_words(const std::string& command) {
  const std::string script = "printf '%s\\0' " + command;
  const std::string quoted = ess::shell_command({"/bin/sh", "-c", script});
  FILE* pipe = popen(quoted.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  std::vector<std::string> words;
  std::size_t start = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\0') {
      words.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  }
  return words;
}

// Runs in the repository root, where the recorded (relative) input paths resolve.
class InRepositoryRoot {
 public:
  InRepositoryRoot() : old_(std::filesystem::current_path()) { std::filesystem::current_path(ESS_SOURCE_DIR); }
  ~InRepositoryRoot() { std::filesystem::current_path(old_); }
  InRepositoryRoot(const InRepositoryRoot&) = delete;
  InRepositoryRoot& operator=(const InRepositoryRoot&) = delete;

 private:
  std::filesystem::path old_;
};

// The options of a recorded `ess-sim calibrate [FILES...] --base B [--gpu G] [--transfer P]...
// [--description D] --folds K --seed S -o OUT` command, as sh splits it.
struct Command {
  std::vector<std::string> files;
  std::map<std::string, std::string> options;
  std::vector<std::string> transfer;  // --transfer, in order
};

Command parse_command(const std::string& line) {
  const std::vector<std::string> words = shell_words(line);
  REQUIRE(words.size() >= 3);
  CHECK(words[0] == "ess-sim");
  CHECK(words[1] == "calibrate");
  Command c;
  std::size_t i = 2;
  for (; i < words.size() && words[i].rfind("-", 0) != 0; ++i) c.files.push_back(words[i]);
  for (; i + 1 < words.size(); i += 2) {
    INFO(words[i]);
    if (words[i] == "--transfer") {
      c.transfer.push_back(words[i + 1]);
    } else {
      CHECK(c.options.emplace(words[i], words[i + 1]).second);
    }
  }
  CHECK(i == words.size());  // every option has its value
  return c;
}

// Recomputes a shipped profile from the command it records.
nlohmann::json recompute(const nlohmann::json& shipped, const Command& command) {
  const nlohmann::json& cal = shipped.at("calibration");
  ess::ReadOptions read;
  if (command.options.count("--gpu") > 0) read.gpu = command.options.at("--gpu");
  read.gpus_per_node = 8;
  const InRepositoryRoot root;
  const auto m = command.files.empty() ? ess::MeasurementSet{} : ess::read_measurements(command.files, read);
  ess::CalibrateOptions o;
  o.base = command.options.at("--base");
  o.name = std::filesystem::path(command.options.at("-o")).stem().string();
  o.description = command.options.at("--description");
  o.folds = std::stoi(command.options.at("--folds"));
  o.seed = std::stoull(command.options.at("--seed"));
  o.command = cal.at("command").get<std::string>();
  o.transfer = command.transfer;
  return nlohmann::json::parse(ess::calibrate(m, o).profile.dump());
}

// Where `fresh` differs from `shipped` beyond the tolerances above, one line per difference.
void differences(const nlohmann::json& fresh, const nlohmann::json& shipped, const std::string& pointer,
                 std::vector<std::string>& out) {
  const bool error_summary = pointer.rfind("/calibration/models", 0) == 0;
  const auto differ = [&](const std::string& what) { out.push_back(pointer + ": " + what); };
  if (fresh.is_number() && shipped.is_number() && (fresh.is_number_float() || shipped.is_number_float())) {
    const double a = fresh.get<double>();
    const double b = shipped.get<double>();
    const double relative = error_summary ? 1e-4 : 1e-6;
    const double absolute = error_summary ? 1e-9 : 0.0;
    if (!(std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)) + absolute)) {
      differ("recomputed " + fresh.dump() + ", shipped " + shipped.dump());
    }
    return;
  }
  if (fresh.type() != shipped.type() && !(fresh.is_number_integer() && shipped.is_number_integer())) {
    differ("recomputed " + std::string(fresh.type_name()) + ", shipped " + shipped.type_name());
    return;
  }
  if (fresh.is_object()) {
    for (const auto& [key, value] : shipped.items()) {
      if (!fresh.contains(key)) differ("key \"" + key + "\" only in the shipped profile");
    }
    for (const auto& [key, value] : fresh.items()) {
      if (!shipped.contains(key)) {
        differ("key \"" + key + "\" only in the recomputed profile");
      } else {
        differences(value, shipped.at(key), pointer + "/" + key, out);
      }
    }
  } else if (fresh.is_array()) {
    if (fresh.size() != shipped.size()) {
      differ(std::to_string(fresh.size()) + " elements recomputed, " + std::to_string(shipped.size()) + " shipped");
      return;
    }
    for (std::size_t i = 0; i < fresh.size(); ++i) differences(fresh[i], shipped[i], pointer + "/" + std::to_string(i), out);
  } else if (fresh != shipped) {
    differ("recomputed " + fresh.dump() + ", shipped " + shipped.dump());
  }
}

std::map<std::string, double> cv_medians(const nlohmann::json& profile) {
  std::map<std::string, double> out;
  for (const auto& m : profile.at("calibration").at("models")) {
    // Models with nothing to hold out (one figure per parameter, or reported only) have none.
    if (m.at("cross_validated").is_null()) continue;
    out[m.at("model").get<std::string>()] = m.at("cross_validated").at("median_abs").get<double>();
  }
  return out;
}

void check_profile(const std::string& name, const std::map<std::string, double>& ceilings) {
  const std::string path = std::string(ESS_SOURCE_DIR) + "/calibration/profiles/" + name + ".json";
  INFO(path);
  const nlohmann::json shipped = read_json(path);
  const std::string line = shipped.at("calibration").at("command").get<std::string>();
  INFO("recorded command: " << line);
  // The recorded command is what sh would run: its words are the profile's own inputs and options.
  const Command command = parse_command(line);
  std::vector<std::string> inputs;
  for (const auto& in : shipped.at("calibration").at("inputs")) inputs.push_back(in.at("path").get<std::string>());
  CHECK(command.files == inputs);
  CHECK(command.options.at("--base") == shipped.at("calibration").at("base").get<std::string>());
  CHECK(command.options.at("--description") == shipped.at("description").get<std::string>());
  CHECK(command.options.at("-o") == "calibration/profiles/" + name + ".json");
  std::vector<std::string> donors;
  if (shipped.at("calibration").contains("transferred")) {
    for (const auto& t : shipped.at("calibration").at("transferred")) donors.push_back(t.at("path").get<std::string>());
  }
  CHECK(command.transfer == donors);

  const nlohmann::json fresh = recompute(shipped, command);
  const auto medians = cv_medians(fresh);
  for (const auto& [model, ceiling] : ceilings) {
    INFO(model << ": 5-fold cross-validated median |error| " << medians.at(model) * 100 << "%, ceiling "
               << ceiling * 100 << "%");
    CHECK(medians.at(model) < ceiling);
  }
  std::vector<std::string> diffs;
  differences(fresh, shipped, "", diffs);
  std::string listed;
  for (std::size_t i = 0; i < diffs.size() && i < 20; ++i) listed += "\n  " + diffs[i];
  INFO("the recomputed profile differs from the shipped one in " << diffs.size() << " places:" << listed
                                                                 << "\nregenerate it from the repository root with "
                                                                    "its recorded command (above)");
  CHECK(diffs.empty());
}

}  // namespace

TEST_CASE("the profile comparison allows libm's last digits and nothing more", "[profiles]") {
  // The tolerance check itself must be able to fail.
  const auto diffs = [](const nlohmann::json& a, const nlohmann::json& b) {
    std::vector<std::string> out;
    differences(a, b, "", out);
    return out.size();
  };
  const nlohmann::json base = nlohmann::json::parse(R"({
    "hardware": {"kernels": {"gemm": {"compute_efficiency": {"value": 0.7512}}}},
    "calibration": {"models": [{"fit": {"median_abs": 0.055, "points": 4144}}]}})");
  nlohmann::json near = base;
  near["hardware"]["kernels"]["gemm"]["compute_efficiency"]["value"] = 0.7512 * (1 + 1e-9);
  near["calibration"]["models"][0]["fit"]["median_abs"] = 0.055 * (1 + 1e-8);
  CHECK(diffs(near, base) == 0);
  nlohmann::json value = base;
  value["hardware"]["kernels"]["gemm"]["compute_efficiency"]["value"] = 0.7513;  // one unit of the 4th digit
  CHECK(diffs(value, base) == 1);
  nlohmann::json error = base;
  error["calibration"]["models"][0]["fit"]["median_abs"] = 0.0551;
  CHECK(diffs(error, base) == 1);
  nlohmann::json count = base;
  count["calibration"]["models"][0]["fit"]["points"] = 4145;
  CHECK(diffs(count, base) == 1);
  nlohmann::json text = base;
  text["hardware"]["kernels"]["gemm"]["compute_efficiency"]["value"] = "0.7512";
  CHECK(diffs(text, base) == 1);
  nlohmann::json extra = base;
  extra["hardware"]["kernels"]["gemm"]["memory_ramp"] = "0B";
  CHECK(diffs(extra, base) == 1);
}

TEST_CASE("shell_command quotes every word so that /bin/sh gives it back unchanged", "[profiles]") {
  // The words a calibration command may hold: the apostrophe of "preset's" (unquoted in the
  // profiles before), spaces, sh's special characters, an empty word, a repository-relative path.
  const std::vector<std::string> words = {"ess-sim", "calibrate", "calibration/data/h100/measurements.json",
                                          "calibration/data/public/vidur/compute_a100_x.csv", "--description",
                                          "PCIe, gather and all-to-all are the base preset's", "it's 'quoted' \"twice\"",
                                          "$HOME `id` $(id) ; | & < > * ? [a] ~ # !", "back\\slash", "", "tab\there",
                                          "new\nline", "'", "''", "--gpu", "H100"};
  const std::string line = ess::shell_command(words);
  INFO(line);
  CHECK(shell_words(line) == words);
  // Words sh leaves alone are written as they are, so the common command stays readable.
  CHECK(ess::shell_command({"ess-sim", "calibrate", "calibration/data/public/a.csv", "--folds", "5", "-o", "p.json"}) ==
        "ess-sim calibrate calibration/data/public/a.csv --folds 5 -o p.json");
  CHECK(ess::shell_command({"preset's"}) == "'preset'\\''s'");
}

// Ceilings: the errors measured on 2026-11-30 rounded up by about half a point. The A100
// measured-GEMM ceiling of 5% is issue 5's acceptance criterion.
TEST_CASE("a100-80gb-sxm-measured is reproduced from the public data and its errors do not regress") {
  check_profile("a100-80gb-sxm-measured", {{"gemm", 0.060},
                                           {"gemm-measured", 0.050},
                                           {"memory-bound", 0.120},
                                           {"allreduce", 0.115},
                                           {"nvlink-p2p", 0.100}});
}

TEST_CASE("h100-sxm-measured is reproduced from the public data and its errors do not regress") {
  check_profile("h100-sxm-measured", {{"gemm", 0.068},
                                      {"gemm-measured", 0.050},
                                      {"memory-bound", 0.087},
                                      {"allreduce", 0.072},
                                      {"nvlink-p2p", 0.022},
                                      {"pcie-copy", 0.027},
                                      {"pcie-gather", 0.133}});
}

// DeepSeek's H800 kernels (2026-12-01): few points per model, so the ceilings are loose, but a
// regenerated profile that gets worse than this fails.
TEST_CASE("h800-sxm-measured is reproduced from DeepSeek's measurements and its errors do not regress") {
  check_profile("h800-sxm-measured", {{"gemm", 0.111},
                                      {"gemm-measured", 0.089},
                                      {"grouped-gemm", 0.062},
                                      {"sparse-attention", 0.115},
                                      {"expert-alltoall", 0.038}});
}

TEST_CASE("h200-sxm-measured and h20-measured are reproduced from the profiles they transfer from") {
  check_profile("h200-sxm-measured", {});
  check_profile("h20-measured", {});
}
