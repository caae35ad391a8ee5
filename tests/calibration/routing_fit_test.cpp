// The expert-load fit (calibration/routing_fit.h) on TensorRT-LLM's published load statistics, and
// its reader's errors.
#include <catch2/catch.hpp>

#include <fstream>

#include "calibration/measurements.h"
#include "calibration/routing_fit.h"
#include "sim/config/scenario.h"
#include "tests/scratch_dir.h"

namespace {

const std::string kTable = std::string(ESS_SOURCE_DIR) + "/calibration/data/public/trtllm/ep_load_imbalance.csv";

}  // namespace

TEST_CASE("The scenario's expert-load defaults are the fit to the bundled table") {
  const auto rows = ess::read_expert_load_table(kTable);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].layout.tokens == 4096);  // 1024 copies a rank x 32 ranks / top-8
  ess::RoutingFitOptions o;
  o.layers = 29;  // a quarter of the shipped fit's draws (58 x 8): +-5% on the skew across seeds
  o.passes = 2;
  const auto fit = ess::fit_routing(rows, o);
  CHECK(fit.skew == Approx(ess::kDefaultExpertSkew).epsilon(0.1));
  CHECK(fit.drift == Approx(ess::kDefaultExpertDrift).epsilon(0.3));
  // The fitted columns come back; the rank spread is a check the fit did not see.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(rows[i].config);
    CHECK(fit.predicted[i].rank_imbalance == Approx(rows[i].measured.rank_imbalance).epsilon(0.15));
    CHECK(fit.predicted[i].rank_std == Approx(rows[i].measured.rank_std).epsilon(0.15));
  }
}

TEST_CASE("An expert-load table needs both kinds of rows and valid cells") {
  ess::test::ScratchDir dir("routing_fit");
  const auto write = [&](const std::string& body) {
    const std::string path = (dir.path() / "t.csv").string();
    std::ofstream(path) << "config,ep,slots,eplb,rank_mean,rank_std,rank_imbalance,slot_mean,slot_std,slot_imbalance\n"
                        << body;
    return path;
  };
  CHECK_THROWS_WITH(ess::read_expert_load_table(write("a,32,256,off,1024,491,1.5,128,164,10\n")),
                    Catch::Contains("needs a row with eplb off and one with eplb on"));
  CHECK_THROWS_WITH(ess::read_expert_load_table(write("a,32,256,maybe,1024,491,1.5,128,164,10\n")),
                    Catch::Contains("line 2") && Catch::Contains("expected on or off"));
  CHECK_THROWS_WITH(ess::read_expert_load_table(write("a,32,288,off,1024,491,1.5,128,164,10\n")),
                    Catch::Contains("without EPLB has no redundant slots"));
  CHECK_THROWS_WITH(ess::read_expert_load_table(write("a,30,256,off,1024,491,1.5,128,164,10\n")),
                    Catch::Contains("multiple of ep"));
  CHECK_THROWS_WITH(ess::read_expert_load_table(write("a,32,256,off,1024,-4,1.5,128,164,10\n")),
                    Catch::Contains("rank_std") && Catch::Contains("> 0"));
  CHECK_THROWS_AS(ess::read_expert_load_table((dir.path() / "missing.csv").string()), ess::MeasurementError);
}
