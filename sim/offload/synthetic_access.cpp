#include "sim/offload/synthetic_access.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace ess {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("SyntheticAccessParams: " + message);
}

bool in_unit(double v) { return v >= 0.0 && v <= 1.0; }

// 2^f for f in [0, 1) by linear interpolation in a 256-step table: relative error below 1e-6,
// several times faster than std::exp in the draw loop (which runs ~10^7 times per simulation).
class Exp2Fraction {
 public:
  Exp2Fraction() {
    for (std::size_t i = 0; i <= kSteps; ++i) {
      table_[i] = std::exp2(static_cast<double>(i) / static_cast<double>(kSteps));
    }
  }
  [[nodiscard]] double operator()(double f) const {
    const double scaled = f * static_cast<double>(kSteps);
    const auto i = static_cast<std::size_t>(scaled);
    const double t = scaled - static_cast<double>(i);
    return table_[i] + (table_[i + 1] - table_[i]) * t;
  }

 private:
  static constexpr std::size_t kSteps = 256;
  double table_[kSteps + 1]{};
};

const Exp2Fraction& exp2_fraction() {
  static const Exp2Fraction table;
  return table;
}

}  // namespace

void validate(const SyntheticAccessParams& params) {
  require(params.layers >= 1, "layers must be >= 1, got " + std::to_string(params.layers));
  require(params.top_k >= 1, "top_k must be >= 1, got " + std::to_string(params.top_k));
  require(params.recent_window >= 0,
          "recent_window must be >= 0, got " + std::to_string(params.recent_window));
  require(std::isfinite(params.distance_exponent) && params.distance_exponent >= 0.0,
          "distance_exponent must be a finite number >= 0");
  require(in_unit(params.prefill_retention), "prefill_retention must be in [0, 1]");
  require(in_unit(params.best_retention), "best_retention must be in [0, 1]");
  require(in_unit(params.edge_retention), "edge_retention must be in [0, 1]");
  require(in_unit(params.best_depth), "best_depth must be in [0, 1]");
  for (const VolatileLayer& v : params.volatile_layers) {
    require(in_unit(v.depth), "volatile_layers depth must be in [0, 1]");
    require(in_unit(v.retention), "volatile_layers retention must be in [0, 1]");
  }
  if (!params.retention.empty()) {
    require(params.retention.size() == static_cast<std::size_t>(params.layers),
            "retention has " + std::to_string(params.retention.size()) + " values for " +
                std::to_string(params.layers) + " layers");
    for (std::size_t l = 0; l < params.retention.size(); ++l) {
      require(in_unit(params.retention[l]),
              "retention[" + std::to_string(l) + "] must be in [0, 1]");
    }
  }
}

std::vector<double> default_retention_profile(const SyntheticAccessParams& params) {
  SyntheticAccessParams checked = params;
  checked.retention.clear();
  validate(checked);
  const double v_best = 1.0 - params.best_retention;
  const double v_edge = 1.0 - params.edge_retention;
  const double span = std::max(params.best_depth, 1.0 - params.best_depth);
  std::vector<double> retention(static_cast<std::size_t>(params.layers));
  for (int l = 0; l < params.layers; ++l) {
    const double x = params.layers == 1 ? 0.0 : static_cast<double>(l) / (params.layers - 1);
    const double t = span > 0.0 ? (x - params.best_depth) / span : 0.0;
    const double u = t * t;
    // Geometric interpolation of volatility; linear if one end is zero (no ratio exists).
    const double v = v_best > 0.0 && v_edge > 0.0 ? v_best * std::pow(v_edge / v_best, u)
                                                  : v_best + (v_edge - v_best) * u;
    retention[static_cast<std::size_t>(l)] = std::clamp(1.0 - v, 0.0, 1.0);
  }
  for (const VolatileLayer& vl : params.volatile_layers) {
    const auto l = static_cast<std::size_t>(std::lround(vl.depth * (params.layers - 1)));
    retention[l] = vl.retention;
  }
  return retention;
}

SyntheticAccess::SyntheticAccess(SyntheticAccessParams params)
    : params_(std::move(params)), root_(params_.seed) {
  validate(params_);
  if (params_.retention.empty()) params_.retention = default_retention_profile(params_);
  streams_.resize(static_cast<std::size_t>(params_.layers));
}

SyntheticAccess::Stream& SyntheticAccess::stream(int layer, int request) {
  auto& row = streams_[static_cast<std::size_t>(layer)];
  const auto r = static_cast<std::size_t>(request);
  if (r >= row.size()) row.resize(r + 1);
  Stream& s = row[r];
  if (!s.started) {
    const std::uint64_t id =
        (static_cast<std::uint64_t>(layer) << 32) | static_cast<std::uint64_t>(request);
    s.rng = root_.fork(id);
  }
  return s;
}

void SyntheticAccess::select(int step, int layer, int request, std::int64_t context,
                             std::vector<std::int64_t>& out) {
  if (layer < 0 || layer >= params_.layers) {
    throw std::invalid_argument("SyntheticAccess: layer " + std::to_string(layer) +
                                " outside [0, " + std::to_string(params_.layers) + ")");
  }
  if (request < 0) {
    throw std::invalid_argument("SyntheticAccess: negative request " + std::to_string(request));
  }
  if (context < 0 || context > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument("SyntheticAccess: context " + std::to_string(context) +
                                " outside [0, 2^31)");
  }
  Stream& s = stream(layer, request);
  if (s.started && step <= s.last_step) {
    throw std::invalid_argument("SyntheticAccess: step " + std::to_string(step) +
                                " after step " + std::to_string(s.last_step) + " for layer " +
                                std::to_string(layer) + ", request " + std::to_string(request) +
                                " (steps must increase)");
  }
  s.started = true;
  s.last_step = step;

  const std::int64_t n = std::min(params_.top_k, context);
  const std::int64_t recent = std::min(params_.recent_window, n);
  const std::int64_t boundary = context - recent;  // non-recent positions are < boundary
  const std::int64_t m = n - recent;               // non-recent picks wanted
  out.clear();
  out.reserve(static_cast<std::size_t>(n));

  if (m == boundary) {
    // Every non-recent position is needed (context <= top_k): nothing to draw.
    s.picks.resize(static_cast<std::size_t>(m));
    for (std::int64_t p = 0; p < m; ++p) s.picks[static_cast<std::size_t>(p)] = static_cast<std::int32_t>(p);
  } else {
    // Bitmaps over positions (a few KB, cache resident): picked at the previous step, chosen now.
    const auto words = static_cast<std::size_t>((context + 63) / 64);
    if (previous_bits_.size() < words) {
      previous_bits_.resize(words);
      chosen_bits_.resize(words);
    }
    std::fill_n(previous_bits_.begin(), words, 0);
    std::fill_n(chosen_bits_.begin(), words, 0);
    auto bit = [](std::int64_t p) { return std::uint64_t{1} << (static_cast<unsigned>(p) & 63U); };
    auto word = [](std::int64_t p) { return static_cast<std::size_t>(p >> 6); };

    // 2. Keep each previous pick with probability retention[layer] (prefill_retention in warm-up).
    const double keep =
        step < 0 ? params_.prefill_retention : params_.retention[static_cast<std::size_t>(layer)];
    std::int64_t chosen = 0;
    for (const std::int32_t p : s.picks) {
      if (p >= boundary) continue;  // only if the context shrank
      previous_bits_[word(p)] |= bit(p);
      // Branch-free: the outcome is random, so a branch would mispredict often.
      const bool kept = (s.rng.uniform() < keep) & (chosen < m);
      chosen_bits_[word(p)] |= bit(p) * static_cast<std::uint64_t>(kept);
      chosen += static_cast<std::int64_t>(kept);
    }

    // 3. Long-range picks by inverse-CDF sampling of the power law over x = d + 1 in
    // [recent + 1, context + 1), rejecting positions chosen now or picked at the previous step.
    const double alpha = params_.distance_exponent;
    const double a = static_cast<double>(recent + 1);
    const double b = static_cast<double>(context + 1);
    const bool log_uniform = std::abs(alpha - 1.0) < 1e-12;
    const double log2_ratio = std::log2(b / a);
    const Exp2Fraction& exp2f = exp2_fraction();
    const double pa = log_uniform ? 0.0 : std::pow(a, 1.0 - alpha);
    const double pb = log_uniform ? 0.0 : std::pow(b, 1.0 - alpha);
    const double inv = log_uniform ? 0.0 : 1.0 / (1.0 - alpha);
    // Enough attempts for any realistic density; past it, the scans below fill deterministically.
    std::int64_t attempts = 16 * (m - chosen) + 1024;
    while (chosen < m && attempts-- > 0) {
      const double u = s.rng.uniform();
      double x = 0.0;
      if (log_uniform) {  // x = a (b/a)^u = a 2^(u log2(b/a))
        const double y = u * log2_ratio;
        const auto whole = static_cast<unsigned>(y);  // y < 31: contexts are below 2^31
        x = a * exp2f(y - static_cast<double>(whole)) *
            static_cast<double>(std::uint64_t{1} << whole);
      } else {
        x = std::pow(pa + u * (pb - pa), inv);
      }
      const std::int64_t d = std::clamp(static_cast<std::int64_t>(x) - 1, recent, context - 1);
      const std::int64_t p = context - 1 - d;
      // Branch-free rejection of positions chosen now or picked at the previous step.
      const std::uint64_t taken = (previous_bits_[word(p)] | chosen_bits_[word(p)]) & bit(p);
      chosen_bits_[word(p)] |= taken ^ bit(p);
      chosen += static_cast<std::int64_t>(taken == 0);
    }
    // Fallbacks for crowded contexts: the nearest free positions, then the nearest dropped ones.
    for (std::int64_t p = boundary - 1; chosen < m && p >= 0; --p) {
      if (((previous_bits_[word(p)] | chosen_bits_[word(p)]) & bit(p)) == 0) {
        chosen_bits_[word(p)] |= bit(p);
        ++chosen;
      }
    }
    for (std::int64_t p = boundary - 1; chosen < m && p >= 0; --p) {
      if ((chosen_bits_[word(p)] & bit(p)) == 0) {
        chosen_bits_[word(p)] |= bit(p);
        ++chosen;
      }
    }

    // Ascending positions straight from the bitmap: no sort.
    s.picks.clear();
    for (std::size_t w = 0; w < words; ++w) {
      for (std::uint64_t bits = chosen_bits_[w]; bits != 0; bits &= bits - 1) {
        s.picks.push_back(static_cast<std::int32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
      }
    }
  }

  for (const std::int32_t p : s.picks) out.push_back(p);
  for (std::int64_t p = boundary; p < context; ++p) out.push_back(p);
}

}  // namespace ess
