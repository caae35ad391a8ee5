#include "calibration/routing_fit.h"

#include <cmath>
#include <functional>

#include "calibration/csv_table.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

using measurement::CsvTable;
using measurement::IntRange;

constexpr std::int64_t kDeepSeekRoutedExperts = 256;
constexpr int kDeepSeekTopK = 8;

// The x in [lo, hi] where f(x) = target, f increasing; 20 halvings (4e-6 of the bracket).
double bisect(const std::function<double(double)>& f, double target, double lo, double hi) {
  for (int i = 0; i < 20; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

std::vector<ExpertLoadRow> read_expert_load_table(const std::string& path) {
  std::string text;
  if (const ReadProblem p = read_whole_file(path, text); p != ReadProblem::none) {
    throw MeasurementError(path, "", describe(p));
  }
  auto rows = measurement::parse_csv(text, path);
  if (rows.empty()) throw MeasurementError(path, "", "is empty; expected an expert-load table with a header");
  const CsvTable t(std::move(rows), path);
  const std::vector<std::string> known = {"config",    "ep",       "slots",          "eplb",     "rank_mean",
                                          "rank_std",  "rank_imbalance", "slot_mean", "slot_std", "slot_imbalance"};
  t.require_known(known, "expert-load");
  const IntRange ranks{2, 1 << 16, "ranks"};
  const IntRange slots{kDeepSeekRoutedExperts, 1 << 20, "physical expert slots"};
  std::vector<ExpertLoadRow> out;
  bool with = false;
  bool without = false;
  for (const auto& r : t.rows()) {
    ExpertLoadRow row;
    row.line = r.line;
    row.config = t.text(r, t.column("config"));
    row.layout.routed = kDeepSeekRoutedExperts;
    row.layout.top_k = kDeepSeekTopK;
    row.layout.ranks = static_cast<int>(t.integer(r, t.column("ep"), ranks));
    row.layout.slots = t.integer(r, t.column("slots"), slots);
    const std::size_t eplb = t.column("eplb");
    if (t.text(r, eplb) != "on" && t.text(r, eplb) != "off") {
      t.fail(r, eplb, "expected on or off, got \"" + measurement::shown(t.text(r, eplb)) + "\"");
    }
    row.eplb = t.text(r, eplb) == "on";
    if (row.layout.slots % row.layout.ranks != 0) t.fail(r, t.column("slots"), "must be a multiple of ep");
    if (!row.eplb && row.layout.slots != kDeepSeekRoutedExperts) {
      t.fail(r, t.column("slots"), "a row without EPLB has no redundant slots (256)");
    }
    const auto positive = [&](const char* col) {
      const double v = t.number(r, t.column(col));
      if (!(v > 0)) t.fail(r, t.column(col), "expected a number > 0");
      return v;
    };
    row.measured = {positive("rank_mean"), positive("rank_std"), positive("rank_imbalance"),
                    positive("slot_mean"), positive("slot_std"), positive("slot_imbalance")};
    const double tokens = row.measured.rank_mean * row.layout.ranks / kDeepSeekTopK;
    if (tokens < 1 || tokens > 1e7) t.fail(r, t.column("rank_mean"), "gives an implausible token count per pass");
    row.layout.tokens = static_cast<std::int64_t>(std::llround(tokens));
    (row.eplb ? with : without) = true;
    out.push_back(row);
  }
  if (!with || !without) {
    throw MeasurementError(path, "", "needs a row with eplb off and one with eplb on (the fit needs both)");
  }
  return out;
}

RoutingFit fit_routing(const std::vector<ExpertLoadRow>& rows, const RoutingFitOptions& o) {
  const auto imbalance = [&](bool eplb, double skew, double drift) {
    std::vector<double> v;
    for (const auto& r : rows) {
      if (r.eplb != eplb) continue;
      v.push_back(expert_load_stats(r.layout, RoutingParams{skew, drift, r.eplb}, o.layers, o.passes, o.seed).rank_imbalance);
    }
    return mean_of(v);
  };
  const auto measured = [&](bool eplb) {
    std::vector<double> v;
    for (const auto& r : rows) {
      if (r.eplb == eplb) v.push_back(r.measured.rank_imbalance);
    }
    return mean_of(v);
  };
  constexpr double kMaxSigma = 4.0;
  const double total = bisect([&](double s) { return imbalance(false, s, 0.0); }, measured(false), 0.0, kMaxSigma);
  const double drift = bisect([&](double d) { return imbalance(true, std::sqrt(std::max(0.0, total * total - d * d)), d); },
                              measured(true), 0.0, total);
  RoutingFit fit;
  fit.drift = drift;
  fit.skew = std::sqrt(std::max(0.0, total * total - drift * drift));
  for (const auto& r : rows) {
    fit.predicted.push_back(expert_load_stats(r.layout, RoutingParams{fit.skew, fit.drift, r.eplb}, o.layers, o.passes, o.seed));
  }
  return fit;
}

}  // namespace ess
