// The calibration bands of a profile (sim/config/profile.h): sigma from each fitted model's
// cross-validated error, transfers widened by the leave-one-GPU-out error, nothing for the rest.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/config/presets.h"
#include "sim/config/profile.h"

namespace {

using ess::ParamSet;

nlohmann::json doc() {
  return nlohmann::json::parse(R"({
    "calibration": {
      "models": [
        {"model": "gemm", "fields": ["hardware.kernels.gemm.compute_efficiency", "hardware.kernels.gemm.kernel_overhead"],
         "cross_validated": {"points": 18, "median_abs": 0.10}},
        {"model": "attention", "fields": ["hardware.kernels.attention.memory_efficiency"], "cross_validated": null},
        {"model": "expert-alltoall", "fields": ["hardware.collectives.alltoall_latency"],
         "cross_validated": {"points": 12, "median_abs": 0.02}}
      ],
      "transferred": [
        {"name": "donor", "fields": ["kernels.gemm.compute_ramp", "kernels.grouped_gemm.compute_efficiency",
                                     "pcie.gather_h2d_efficiency"]},
        {"name": "unknown", "fields": ["kernels.memory_bound.memory_efficiency"]}
      ]
    }
  })");
}

ess::CalibrationBands make_donor() {
  ess::CalibrationBands d{};
  d[static_cast<std::size_t>(ParamSet::grouped_gemm)] = ess::ParamBand{0.05, "donor's grouped gemm"};
  d[static_cast<std::size_t>(ParamSet::gemm)] = ess::ParamBand{0.5, "donor's gemm"};
  return d;
}

const ess::CalibrationBands* donor_bands() {
  static ess::CalibrationBands b = make_donor();
  return &b;
}

const std::optional<ess::ParamBand>& band(const ess::CalibrationBands& b, ParamSet p) {
  return b[static_cast<std::size_t>(p)];
}

}  // namespace

TEST_CASE("bands: hardware fields map to the parameter sets the cost models read", "[config][bands]") {
  CHECK(ess::param_set_of_field("hardware.kernels.gemm.compute_efficiency") == ParamSet::gemm);
  CHECK(ess::param_set_of_field("kernels.grouped_gemm.transition") == ParamSet::grouped_gemm);
  CHECK(ess::param_set_of_field("hardware.kernels.gemm_measured") == ParamSet::gemm_measured);
  CHECK(ess::param_set_of_field("hardware.collectives.alltoall_nvlink_efficiency") == ParamSet::alltoall);
  CHECK(ess::param_set_of_field("collectives.allreduce_latency") == ParamSet::allreduce);
  CHECK(ess::param_set_of_field("pcie.h2d_call_overhead") == ParamSet::pcie_copy);
  CHECK(ess::param_set_of_field("pcie.gather_d2h_efficiency") == ParamSet::pcie_gather);
  CHECK(ess::param_set_of_field("nvlink.latency") == ParamSet::nvlink);
  CHECK(ess::param_set_of_field("gpu.hbm_bandwidth") == ParamSet::none);
  CHECK(ess::param_set_of_field("kernels.topk_passes") == ParamSet::none);
}

TEST_CASE("bands: fitted, transferred, and none where nothing validated a set", "[config][bands]") {
  const auto b = ess::calibration_bands(doc(), [](const std::string& name) {
    return name == "donor" ? donor_bands() : nullptr;
  });
  REQUIRE(band(b, ParamSet::gemm));
  CHECK(band(b, ParamSet::gemm)->sigma == Approx(1.4826 * 0.10));  // fitted here: the donor's 0.5 is not used
  CHECK_THAT(band(b, ParamSet::gemm)->source, Catch::Contains("fitted on this GPU"));
  CHECK(band(b, ParamSet::alltoall)->sigma == Approx(1.4826 * 0.02));
  CHECK_FALSE(band(b, ParamSet::attention));  // no cross-validation: no band
  REQUIRE(band(b, ParamSet::grouped_gemm));
  CHECK(band(b, ParamSet::grouped_gemm)->sigma ==
        Approx(std::sqrt(0.05 * 0.05 + ess::kTransferSigma * ess::kTransferSigma)));
  CHECK_THAT(band(b, ParamSet::grouped_gemm)->source, Catch::Contains("transferred from donor"));
  CHECK_FALSE(band(b, ParamSet::pcie_gather));   // the donor has no band for it
  CHECK_FALSE(band(b, ParamSet::memory_bound));  // an unknown donor
  CHECK_FALSE(band(b, ParamSet::nvlink));
  CHECK(ess::calibration_bands(nlohmann::json::object(), nullptr) == ess::CalibrationBands{});
}

TEST_CASE("bands: the shipped profiles carry them, transfers included, and datasheet presets have none", "[config][bands]") {
  const auto* h800 = ess::find_preset(ess::PresetKind::hardware, "h800-sxm-measured");
  const auto* h200 = ess::find_preset(ess::PresetKind::hardware, "h200-sxm-measured");
  const auto* sheet = ess::find_preset(ess::PresetKind::hardware, "h200-sxm");
  REQUIRE((h800 && h200 && sheet));
  const auto& fitted = band(h800->calibration.bands, ParamSet::grouped_gemm);
  const auto& moved = band(h200->calibration.bands, ParamSet::grouped_gemm);
  REQUIRE((fitted && moved));
  CHECK(moved->sigma == Approx(std::sqrt(fitted->sigma * fitted->sigma + ess::kTransferSigma * ess::kTransferSigma)));
  CHECK_THAT(moved->source, Catch::Contains("h800-sxm-measured"));
  for (const auto& b : sheet->calibration.bands) CHECK_FALSE(b.has_value());
}
