#include "sim/sweep/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/base/error.h"
#include "sim/config/json_text.h"

namespace ess {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes 3rd ed.,
// betacf); converges quickly for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 10000;
  constexpr double kEpsilon = 1e-15;
  constexpr double kTiny = 1e-300;  // keeps a denominator off zero
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < kEpsilon) break;
  }
  return h;
}

// A resolved document without its sources: each {"value", "source"} leaf replaced by its value.
nlohmann::ordered_json values_only(const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    if (j.size() == 2 && j.contains("value") && j.contains("source")) return j.at("value");
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& item : j.items()) out[item.key()] = values_only(item.value());
    return out;
  }
  if (j.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& e : j) out.push_back(values_only(e));
    return out;
  }
  return j;
}

void differences(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, const std::string& at,
                 std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& item : a.items()) {
      const std::string path = pointer_append(at, item.key());
      if (!b.contains(item.key())) {
        out.push_back(path);
      } else {
        differences(item.value(), b.at(item.key()), path, out);
      }
    }
    for (const auto& item : b.items()) {
      if (!a.contains(item.key())) out.push_back(pointer_append(at, item.key()));
    }
    return;
  }
  if (a != b) out.push_back(at.empty() ? "/" : at);
}

void collect_metrics(const nlohmann::ordered_json& j, const std::string& prefix,
                     std::vector<std::pair<std::string, double>>& out) {
  for (const auto& item : j.items()) {
    const std::string name = prefix.empty() ? item.key() : prefix + "." + item.key();
    const auto& v = item.value();
    if (v.is_object()) {
      collect_metrics(v, name, out);
    } else if (v.is_number()) {  // not booleans, strings, nulls or arrays
      out.emplace_back(name, v.get<double>());
    }
  }
}

double mean_of_present(const std::vector<double>& v) {
  double sum = 0.0;
  std::size_t n = 0;
  for (const double x : v) {
    if (std::isnan(x)) continue;
    sum += x;
    ++n;
  }
  return n == 0 ? kNaN : sum / static_cast<double>(n);
}

nlohmann::ordered_json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

std::string format(const char* pattern, double v) {
  if (!std::isfinite(v)) return "n/a";
  char text[64];
  std::snprintf(text, sizeof text, pattern, v);
  return text;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0.0 && x <= 1.0)) {
    throw InternalError("regularized_incomplete_beta: expected a, b > 0 and x in [0, 1]");
  }
  if (x == 0.0 || x == 1.0) return x;
  // ln of x^a (1 - x)^b / B(a, b).
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, double dof) {
  if (!(dof > 0)) throw InternalError("student_t_cdf: expected dof > 0");
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  const double tail = 0.5 * regularized_incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(p > 0.0 && p < 1.0)) throw InternalError("student_t_quantile: expected p in (0, 1)");
  if (!(dof > 0)) throw InternalError("student_t_quantile: expected dof > 0");
  if (p < 0.5) return -student_t_quantile(1.0 - p, dof);
  if (p == 0.5) return 0.0;
  double lo = 0.0, hi = 1.0;
  while (student_t_cdf(hi, dof) < p) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e300) return std::numeric_limits<double>::infinity();
  }
  for (int i = 0; i < 2000 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw InternalError("paired_difference: expected a confidence in (0, 1)");
  }
  std::vector<double> d, base;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) continue;
    d.push_back(b[i] - a[i]);
    base.push_back(a[i]);
  }
  PairedDifference r;
  r.n = d.size();
  if (r.n == 0) {
    r.mean = r.ci_low = r.ci_high = r.relative = kNaN;
    return r;
  }
  const double n = static_cast<double>(r.n);
  double sum = 0.0;
  for (const double x : d) sum += x;
  r.mean = sum / n;
  const double base_mean = mean_of_present(base);
  if (base_mean != 0.0) {
    r.relative = r.mean / std::fabs(base_mean);
  } else {
    r.relative = r.mean == 0.0 ? 0.0 : kNaN;
  }
  if (r.n < 2) {
    r.ci_low = r.ci_high = kNaN;
    return r;
  }
  double ss = 0.0;
  for (const double x : d) ss += (x - r.mean) * (x - r.mean);
  const double half = student_t_quantile(0.5 + confidence / 2.0, n - 1.0) * std::sqrt(ss / (n - 1.0)) / std::sqrt(n);
  r.ci_low = r.mean - half;
  r.ci_high = r.mean + half;
  r.significant = r.ci_low > 0.0 || r.ci_high < 0.0;
  return r;
}

std::vector<std::pair<std::string, double>> result_metrics(const nlohmann::ordered_json& results) {
  std::vector<std::pair<std::string, double>> out;
  if (!results.is_object()) return out;
  nlohmann::ordered_json without_seed = results;
  without_seed.erase("seed");
  collect_metrics(without_seed, "", out);
  return out;
}

std::vector<std::string> resolved_differences(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  nlohmann::ordered_json va = values_only(a), vb = values_only(b);
  for (const char* free_text : {"name", "description"}) {
    if (va.is_object()) va.erase(free_text);
    if (vb.is_object()) vb.erase(free_text);
  }
  std::vector<std::string> out;
  differences(va, vb, "", out);
  return out;
}

bool is_policy_path(const std::string& pointer) {
  for (const std::string section : {"/cache", "/serving", "/execution"}) {
    if (pointer == section || pointer.rfind(section + "/", 0) == 0) return true;
  }
  return false;
}

std::string scenario_label(std::size_t index) {
  if (index < 26) return std::string(1, static_cast<char>('A' + index));
  return "S" + std::to_string(index + 1);
}

Comparison compare_results(std::vector<ComparedScenario> scenarios, std::vector<std::uint64_t> seeds,
                           const std::vector<std::vector<nlohmann::ordered_json>>& results, double confidence,
                           std::int64_t steps) {
  if (results.size() != scenarios.size()) throw InternalError("compare_results: one result row per scenario");
  for (const auto& row : results) {
    if (row.size() != seeds.size()) throw InternalError("compare_results: one result per seed");
  }
  Comparison c;
  c.seeds = std::move(seeds);
  c.scenarios = std::move(scenarios);
  c.confidence = confidence;
  c.steps = steps;
  const std::size_t ns = c.scenarios.size(), nseeds = c.seeds.size();

  std::vector<MetricComparison> all;
  std::map<std::string, std::size_t> index;
  for (std::size_t s = 0; s < ns; ++s) {
    for (std::size_t k = 0; k < nseeds; ++k) {
      for (const auto& [name, value] : result_metrics(results[s][k])) {
        auto it = index.find(name);
        if (it == index.end()) {
          it = index.emplace(name, all.size()).first;
          MetricComparison m;
          m.name = name;
          m.samples.assign(ns, std::vector<double>(nseeds, kNaN));
          all.push_back(std::move(m));
        }
        all[it->second].samples[s][k] = value;
      }
    }
  }
  for (auto& m : all) {
    bool constant = true;
    const double first = m.samples[0][0];
    for (const auto& row : m.samples) {
      for (const double v : row) constant = constant && !std::isnan(v) && v == first;
    }
    if (constant) {
      c.constants.emplace_back(m.name, first);
      continue;
    }
    for (const auto& row : m.samples) m.means.push_back(mean_of_present(row));
    for (std::size_t s = 1; s < ns; ++s) m.diffs.push_back(paired_difference(m.samples[0], m.samples[s], confidence));
    c.metrics.push_back(std::move(m));
  }
  return c;
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
  nlohmann::ordered_json j;
  j["seeds"] = c.seeds;
  j["scenarios"] = nlohmann::ordered_json::array();
  j["labels"] = nlohmann::ordered_json::array();
  for (const auto& s : c.scenarios) {
    j["scenarios"].push_back(s.file);
    j["labels"].push_back(s.label);
  }
  j["confidence"] = c.confidence;
  j["steps"] = c.steps > 0 ? nlohmann::ordered_json(c.steps) : nlohmann::ordered_json(nullptr);
  j["differs"] = nlohmann::ordered_json::object();
  for (std::size_t s = 1; s < c.scenarios.size(); ++s) j["differs"][c.scenarios[s].label] = c.scenarios[s].differs;
  j["metrics"] = nlohmann::ordered_json::array();
  for (const auto& m : c.metrics) {
    nlohmann::ordered_json mj;
    mj["name"] = m.name;
    mj["values"] = nlohmann::ordered_json::array();
    for (const double v : m.means) mj["values"].push_back(number_or_null(v));
    mj["samples"] = nlohmann::ordered_json::array();
    for (const auto& row : m.samples) {
      nlohmann::ordered_json r = nlohmann::ordered_json::array();
      for (const double v : row) r.push_back(number_or_null(v));
      mj["samples"].push_back(std::move(r));
    }
    mj["diffs"] = nlohmann::ordered_json::array();
    for (const auto& d : m.diffs) {
      mj["diffs"].push_back({{"n", d.n},
                             {"mean", number_or_null(d.mean)},
                             {"ci_low", number_or_null(d.ci_low)},
                             {"ci_high", number_or_null(d.ci_high)},
                             {"relative", number_or_null(d.relative)},
                             {"significant", d.significant}});
    }
    j["metrics"].push_back(std::move(mj));
  }
  j["constants"] = nlohmann::ordered_json::object();
  for (const auto& [name, value] : c.constants) j["constants"][name] = value;
  return j;
}

std::string comparison_table(const Comparison& c) {
  const std::size_t ns = c.scenarios.size();
  std::string seeds;
  for (std::size_t k = 0; k < c.seeds.size(); ++k) seeds += (k ? ", " : "") + std::to_string(c.seeds[k]);
  std::string text = "compare: " + std::to_string(ns) + " scenarios x " + std::to_string(c.seeds.size()) + " seed" +
                     (c.seeds.size() == 1 ? "" : "s") + " (" + seeds + "), " +
                     (c.steps > 0 ? std::to_string(c.steps) + " steps" : "each scenario's steps") +
                     ", common random numbers (the same seed gives every scenario the same random streams)\n";
  for (std::size_t s = 0; s < ns; ++s) {
    const auto& sc = c.scenarios[s];
    text += "  " + sc.label + " = " + sc.file;
    if (s > 0) {
      if (sc.differs.empty()) {
        text += " (the same resolved scenario as A)";
      } else {
        text += " (differs from A in";
        for (const auto& p : sc.differs) text += " " + p;
        text += ")";
      }
    }
    text += "\n";
  }
  text += "  X-A: the mean over the seeds of X - A, each seed's runs paired; CI: its " + format("%g", c.confidence * 100.0) +
          "% confidence interval (Student t, " +
          (c.seeds.size() > 2 ? std::to_string(c.seeds.size() - 1) + " degrees of freedom"
                              : c.seeds.size() == 2 ? "1 degree of freedom" : "n/a with one seed") +
          "); rel: (X-A) / |A|; *: the CI excludes 0\n\n";

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"metric", c.scenarios[0].label};
  for (std::size_t s = 1; s < ns; ++s) {
    const auto& l = c.scenarios[s].label;
    head.insert(head.end(), {l, l + "-A", "CI", "rel"});
  }
  rows.push_back(head);
  for (const auto& m : c.metrics) {
    std::vector<std::string> row = {m.name, format("%.6g", m.means[0])};
    for (std::size_t s = 1; s < ns; ++s) {
      const auto& d = m.diffs[s - 1];
      row.push_back(format("%.6g", m.means[s]));
      row.push_back(format("%+.4g", d.mean) + (d.significant ? " *" : ""));
      row.push_back(std::isfinite(d.ci_low) ? "[" + format("%.3g", d.ci_low) + ", " + format("%.3g", d.ci_high) + "]"
                                             : "n/a");
      row.push_back(std::isfinite(d.relative) ? format("%+.2f", d.relative * 100.0) + "%" : "n/a");
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      // The metric name left-aligned, numbers right-aligned.
      line += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  if (c.metrics.empty()) text += "(no metric differs between any two runs)\n";
  if (!c.constants.empty()) {
    text += "\n" + std::to_string(c.constants.size()) + " metrics equal in every run:\n ";
    std::size_t column = 1;
    constexpr std::size_t kLineWidth = 110;
    for (const auto& [name, value] : c.constants) {
      const std::string item = " " + name + "=" + format("%.6g", value);
      if (column + item.size() > kLineWidth && column > 1) {
        text += "\n ";
        column = 1;
      }
      text += item;
      column += item.size();
    }
    text += "\n";
  }
  return text;
}

}  // namespace ess
