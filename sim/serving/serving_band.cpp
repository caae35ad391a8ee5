#include "sim/serving/serving_band.h"

#include <cmath>
#include <cstdio>

namespace ess {

double MetricBand::sigma() const { return std::hypot(calibration, engine.value_or(0.0)); }

ServingBand serving_band(const Scenario& s, const ServingRun& run) {
  ServingBand b;
  for (const auto& band : s.hardware_bands) b.calibrated = b.calibrated || band.has_value();
  double time = 0.0;
  double sigma = 0.0;
  for (const ServingStep& step : run.steps) {
    time += step.time;
    sigma += step.sigma;
  }
  // ln(t (1 + r)) - ln(t) = r to first order: a relative sigma is a sigma of the logarithm.
  const double decode = time > 0.0 ? sigma / time : 0.0;
  double first_token = decode;
  if (run.prefill && run.prefill->busy_s > 0.0) first_token = run.prefill->sigma_s / run.prefill->busy_s;
  const EngineConfig::ServingError& e = s.engine.serving_error;
  b.ttft = {first_token, e.ttft};
  b.tpot = {decode, e.tpot};
  b.throughput = {decode, e.throughput};
  return b;
}

namespace {

nlohmann::ordered_json metric_json(const MetricBand& m, double mean, const char* low, const char* high) {
  const double sigma = m.sigma();
  return {{"sigma", sigma},
          {"calibration", m.calibration},
          {"engine", m.engine ? nlohmann::ordered_json(*m.engine) : nlohmann::ordered_json(nullptr)},
          {low, mean * std::exp(-sigma)},
          {high, mean * std::exp(sigma)}};
}

// A sigma of ln(x) as the one-sigma range of x around its value: "-41%/+70%".
std::string range(const nlohmann::ordered_json& sigma) {
  const double v = sigma.get<double>();
  char buf[48];
  std::snprintf(buf, sizeof buf, "-%.0f%%/+%.0f%%", 100.0 * (1.0 - std::exp(-v)), 100.0 * (std::exp(v) - 1.0));
  return buf;
}

std::string number(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v.get<double>());
  return buf;
}

}  // namespace

nlohmann::ordered_json serving_band_json(const ServingBand& b, double ttft_mean_s, double tpot_mean_s,
                                         double output_tokens_per_s) {
  return {{"kind", "one sigma of ln(simulated / measured): calibration band and engine model error in quadrature"},
          {"calibrated", b.calibrated},
          {"ttft", metric_json(b.ttft, ttft_mean_s, "mean_low_s", "mean_high_s")},
          {"tpot", metric_json(b.tpot, tpot_mean_s, "mean_low_s", "mean_high_s")},
          {"output_throughput", metric_json(b.throughput, output_tokens_per_s, "low_tokens_per_s", "high_tokens_per_s")}};
}

std::string serving_band_text(const nlohmann::ordered_json& band) {
  const auto& t = band.at("ttft");
  const auto& p = band.at("tpot");
  const auto& o = band.at("output_throughput");
  std::string out = "TTFT " + range(t.at("sigma")) + ", TPOT " + range(p.at("sigma")) + ", throughput " + range(o.at("sigma")) +
                    " (sigma of ln: calibration " +
                    (band.at("calibrated").get<bool>() ? number(t.at("calibration")) + " / " + number(p.at("calibration")) + " / " +
                                                              number(o.at("calibration"))
                                                        : std::string("none, uncalibrated hardware")) +
                    "; engine model " + number(t.at("engine")) + " / " + number(p.at("engine")) + " / " + number(o.at("engine")) + ")";
  if (t.at("engine").is_null() || p.at("engine").is_null() || o.at("engine").is_null()) {
    out += "; unknown: no serving benchmark measured it, so the band is too narrow";
  }
  return out;
}

}  // namespace ess
