// `ess-sim calibrate` end to end through the CLI: exit codes, no partial output on error, and a
// written profile that `cost --hardware PATH` accepts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

#include "../scratch_dir.h"
#include "sim/cli/cli.h"

namespace {

const std::string kPublic = std::string(ESS_SOURCE_DIR) + "/calibration/data/public/";

}  // namespace

TEST_CASE("calibrate writes a profile that cost --hardware accepts, and nothing on bad input") {
  ess::test::ScratchDir dir("ess-calibrate-cli");
  const std::string profile = (dir.path() / "a100.json").string();
  std::ostringstream out;
  std::ostringstream err;
  // Bad input: a missing measurement file. Exit 2, a message naming it, no profile, nothing on stdout.
  CHECK(ess::run_cli({"calibrate", (dir.path() / "missing.csv").string(), "--base", "a100-80gb-sxm", "-o", profile},
                     out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("missing.csv") && Catch::Contains("no such file"));
  CHECK(out.str().empty());
  CHECK_FALSE(std::filesystem::exists(profile));
  // An unknown base preset: exit 2 with a did-you-mean.
  err.str("");
  CHECK(ess::run_cli({"calibrate", kPublic + "vidur/network_a100_dgx_send_recv.csv", "--base", "a100", "-o", profile},
                     out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("did you mean"));
  CHECK_FALSE(std::filesystem::exists(profile));
  // The NCCL send/recv table alone: the P2P model is fitted, the rest kept from the base.
  out.str("");
  REQUIRE(ess::run_cli({"calibrate", kPublic + "vidur/network_a100_dgx_send_recv.csv", "--base", "a100-80gb-sxm",
                        "-o", profile},
                       out, err) == 0);
  CHECK_THAT(out.str(), Catch::Contains("nvlink-p2p") && Catch::Contains("base values kept: pcie-copy"));
  REQUIRE(std::filesystem::exists(profile));
  out.str("");
  CHECK(ess::run_cli({"cost", "allreduce", "--hardware", profile, "--gpus", "8", "--bytes", "1MiB", "--json"}, out, err) == 0);
  CHECK_THAT(out.str(), Catch::StartsWith("{\"seconds\":"));
}
