// The shipped profiles calibration/profiles/{a100-80gb-sxm,h100-sxm}-measured.json are
// recomputed from the public measurements in ../shared/data on every run. The recomputed profile
// must be byte-for-byte the shipped one (a stale profile fails: regenerate it with the command it
// records), and each model's cross-validated error must stay under the ceiling written here, so a
// regenerated profile cannot quietly get worse.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

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

// Recomputes a shipped profile from the inputs and options it records.
nlohmann::json recompute(const nlohmann::json& shipped) {
  const nlohmann::json& cal = shipped.at("calibration");
  std::vector<std::string> paths;
  std::string gpu;
  for (const auto& in : cal.at("inputs")) paths.push_back(in.at("path").get<std::string>());
  const std::string command = cal.at("command").get<std::string>();
  const auto at = command.find(" --gpu ");
  REQUIRE(at != std::string::npos);
  gpu = command.substr(at + 7, command.find(' ', at + 7) - (at + 7));
  ess::ReadOptions read;
  read.gpu = gpu;
  read.gpus_per_node = 8;
  const InRepositoryRoot root;
  const auto m = ess::read_measurements(paths, read);
  ess::CalibrateOptions o;
  o.base = cal.at("base").get<std::string>();
  o.name = shipped.at("name").get<std::string>();
  o.description = shipped.at("description").get<std::string>();
  o.folds = cal.at("cross_validation").at("folds").get<int>();
  o.seed = cal.at("cross_validation").at("seed").get<std::uint64_t>();
  o.command = command;
  return nlohmann::json::parse(ess::calibrate(m, o).profile.dump());
}

std::map<std::string, double> cv_medians(const nlohmann::json& profile) {
  std::map<std::string, double> out;
  for (const auto& m : profile.at("calibration").at("models")) {
    out[m.at("model").get<std::string>()] = m.at("cross_validated").at("median_abs").get<double>();
  }
  return out;
}

void check_profile(const std::string& name, const std::map<std::string, double>& ceilings) {
  const std::string path = std::string(ESS_SOURCE_DIR) + "/calibration/profiles/" + name + ".json";
  INFO(path);
  const nlohmann::json shipped = read_json(path);
  const nlohmann::json fresh = recompute(shipped);
  const auto medians = cv_medians(fresh);
  for (const auto& [model, ceiling] : ceilings) {
    INFO(model << ": 5-fold cross-validated median |error| " << medians.at(model) * 100 << "%, ceiling "
               << ceiling * 100 << "%");
    CHECK(medians.at(model) < ceiling);
  }
  INFO("the recomputed profile differs from the shipped one: regenerate it with its recorded command, from the "
       "repository root: " << shipped.at("calibration").at("command").get<std::string>());
  CHECK(fresh == shipped);
}

}  // namespace

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
                                      {"nvlink-p2p", 0.022}});
}
