#include "sim/offload/synthetic_access.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/base/error.h"

namespace ess {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InternalError("SyntheticAccessParams: " + message);
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

namespace {

std::uint64_t bit_of(std::int64_t p) { return std::uint64_t{1} << (static_cast<unsigned>(p) & 63U); }
std::size_t word_of(std::int64_t p) { return static_cast<std::size_t>(p >> 6); }

}  // namespace

SyntheticAccess::Stream& SyntheticAccess::advance(int step, int layer, int request, std::int64_t context) {
  if (layer < 0 || layer >= params_.layers) {
    throw InternalError("SyntheticAccess: layer " + std::to_string(layer) +
                        " outside [0, " + std::to_string(params_.layers) + ")");
  }
  if (request < 0) {
    throw InternalError("SyntheticAccess: negative request " + std::to_string(request));
  }
  if (context < 0 || context > std::numeric_limits<std::int32_t>::max()) {
    throw InternalError("SyntheticAccess: context " + std::to_string(context) +
                        " outside [0, 2^31)");
  }
  Stream& s = stream(layer, request);
  previous_window_begin_ = s.started ? s.window_begin : 0;
  previous_window_end_ = s.started ? s.window_end : 0;
  if (s.started && step <= s.last_step) {
    throw InternalError("SyntheticAccess: step " + std::to_string(step) +
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
  const auto words = static_cast<std::size_t>((context + 63) / 64);
  if (s.bits.size() < words) s.bits.resize(std::max(words, s.bits.size() + s.bits.size() / 8), 0);
  if (now_bits_.size() < words) now_bits_.resize(std::max(words, now_bits_.size() + now_bits_.size() / 8), 0);
  dropped_.clear();
  drawn_.clear();

  if (m == boundary) {
    take_every_position(s, m);
  } else {
    std::int64_t chosen = retain(s, step, layer, boundary, m);
    chosen = draw_long_range(s, context, recent, m, chosen);
    (void)fill_crowded(s, boundary, m, chosen);
    sort_drawn(words);
  }
  merge_picks(s);
  s.window_begin = boundary;
  s.window_end = context;
  return s;
}

void SyntheticAccess::take_every_position(const Stream& s, std::int64_t m) {
  std::int64_t next = 0;  // positions [0, m) not picked before are drawn
  for (const std::int32_t p : s.picks) {
    if (p >= m) {
      dropped_.push_back(p);
      continue;
    }
    for (; next < p; ++next) drawn_.push_back(static_cast<std::int32_t>(next));
    next = p + 1;
  }
  for (; next < m; ++next) drawn_.push_back(static_cast<std::int32_t>(next));
}

std::int64_t SyntheticAccess::retain(Stream& s, int step, int layer, std::int64_t boundary, std::int64_t m) {
  // One draw per pick, in position order. Picks at or past the boundary (only if the context
  // shrank) are dropped without a draw.
  const double keep = step < 0 ? params_.prefill_retention : params_.retention[static_cast<std::size_t>(layer)];
  std::int64_t chosen = 0;
  dropped_.resize(s.picks.size());
  std::size_t dropped = 0;
  for (const std::int32_t p : s.picks) {
    if (p >= boundary) {
      dropped_[dropped++] = p;
      continue;
    }
    // Branch-free: the outcome is random, so a branch would mispredict often.
    const bool kept = (s.rng.uniform() < keep) & (chosen < m);
    dropped_[dropped] = p;
    dropped += static_cast<std::size_t>(!kept);
    chosen += static_cast<std::int64_t>(kept);
  }
  dropped_.resize(dropped);
  return chosen;
}

std::int64_t SyntheticAccess::draw_long_range(Stream& s, std::int64_t context, std::int64_t recent, std::int64_t m,
                                              std::int64_t chosen) {
  // Inverse-CDF sampling of the power law over x = d + 1 in [recent + 1, context + 1), rejecting
  // positions picked at the previous call (s.bits, kept or dropped) or drawn now (now_bits_).
  const double alpha = params_.distance_exponent;
  const double a = static_cast<double>(recent + 1);
  const double b = static_cast<double>(context + 1);
  const bool log_uniform = std::abs(alpha - 1.0) < 1e-12;
  const double log2_ratio = std::log2(b / a);
  const Exp2Fraction& exp2f = exp2_fraction();
  const double pa = log_uniform ? 0.0 : std::pow(a, 1.0 - alpha);
  const double pb = log_uniform ? 0.0 : std::pow(b, 1.0 - alpha);
  const double inv = log_uniform ? 0.0 : 1.0 / (1.0 - alpha);
  const std::uint64_t* const previous = s.bits.data();
  std::uint64_t* const now = now_bits_.data();
  // Enough attempts for any realistic density; past it, fill_crowded fills deterministically.
  std::int64_t attempts = 16 * (m - chosen) + 1024;
  drawn_.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, m - chosen)));
  std::size_t drawn = 0;
  while (chosen < m && attempts-- > 0) {
    const double u = s.rng.uniform();
    double x = 0.0;
    if (log_uniform) {  // x = a (b/a)^u = a 2^(u log2(b/a))
      const double y = u * log2_ratio;
      const auto whole = static_cast<unsigned>(y);  // y < 31: contexts are below 2^31
      x = a * exp2f(y - static_cast<double>(whole)) * static_cast<double>(std::uint64_t{1} << whole);
    } else {
      x = std::pow(pa + u * (pb - pa), inv);
    }
    const std::int64_t d = std::clamp(static_cast<std::int64_t>(x) - 1, recent, context - 1);
    const std::int64_t p = context - 1 - d;
    // Branch-free rejection of positions drawn now or picked at the previous call.
    const std::uint64_t taken = (previous[word_of(p)] | now[word_of(p)]) & bit_of(p);
    now[word_of(p)] |= taken ^ bit_of(p);
    drawn_[drawn] = static_cast<std::int32_t>(p);
    drawn += static_cast<std::size_t>(taken == 0);
    chosen += static_cast<std::int64_t>(taken == 0);
  }
  drawn_.resize(drawn);
  return chosen;
}

std::int64_t SyntheticAccess::fill_crowded(const Stream& s, std::int64_t boundary, std::int64_t m, std::int64_t chosen) {
  const std::uint64_t* const previous = s.bits.data();
  std::uint64_t* const now = now_bits_.data();
  for (std::int64_t p = boundary - 1; chosen < m && p >= 0; --p) {
    if (((previous[word_of(p)] | now[word_of(p)]) & bit_of(p)) == 0) {
      now[word_of(p)] |= bit_of(p);
      drawn_.push_back(static_cast<std::int32_t>(p));
      ++chosen;
    }
  }
  if (chosen < m) {
    // Every position below the boundary is picked before or drawn now: keep dropped picks
    // again, nearest first (the dropped list is ascending, so from its end).
    for (std::size_t i = dropped_.size(); chosen < m && i-- > 0;) {
      if (dropped_[i] >= boundary) continue;
      dropped_.erase(dropped_.begin() + static_cast<std::ptrdiff_t>(i));
      ++chosen;
    }
    // Kept picks stay in s.bits and s.picks: nothing else to do for them.
  }
  return chosen;
}

void SyntheticAccess::sort_drawn(std::size_t words) {
  std::uint64_t* const now = now_bits_.data();
  // A sort when few, a scan of the bitmap when many.
  if (drawn_.size() * 16 < words) {
    std::sort(drawn_.begin(), drawn_.end());
    for (const std::int32_t p : drawn_) now[word_of(p)] = 0;
  } else {
    drawn_.clear();
    for (std::size_t w = 0; w < words; ++w) {
      for (std::uint64_t bits = now[w]; bits != 0; bits &= bits - 1) {
        drawn_.push_back(static_cast<std::int32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
      }
      now[w] = 0;
    }
  }
}

void SyntheticAccess::merge_picks(Stream& s) {
  for (const std::int32_t p : dropped_) s.bits[word_of(p)] &= ~bit_of(p);
  for (const std::int32_t p : drawn_) s.bits[word_of(p)] |= bit_of(p);
  merged_.clear();
  merged_.reserve(s.picks.size() + drawn_.size());
  std::size_t d = 0;
  std::size_t a = 0;
  for (const std::int32_t p : s.picks) {
    if (d < dropped_.size() && dropped_[d] == p) {
      ++d;
      continue;
    }
    while (a < drawn_.size() && drawn_[a] < p) merged_.push_back(drawn_[a++]);
    merged_.push_back(p);
  }
  while (a < drawn_.size()) merged_.push_back(drawn_[a++]);
  s.picks.swap(merged_);
}

void SyntheticAccess::select(int step, int layer, int request, std::int64_t context,
                             std::vector<std::int64_t>& out) {
  const Stream& s = advance(step, layer, request, context);
  out.clear();
  out.reserve(s.picks.size() + static_cast<std::size_t>(s.window_end - s.window_begin));
  for (const std::int32_t p : s.picks) out.push_back(p);
  for (std::int64_t p = s.window_begin; p < s.window_end; ++p) out.push_back(p);
}

void SyntheticAccess::select_delta(int step, int layer, int request, std::int64_t context, SelectionDelta& out) {
  // The previous selection is P + Wp (picks, all below the previous window Wp = [pb, pc)); the new
  // one is N + Wn with N = (P - dropped) + drawn, all below Wn = [b, c). A first call has empty P, Wp.
  const Stream& s = advance(step, layer, request, context);
  const std::int64_t pb = previous_window_begin_;
  const std::int64_t pc = previous_window_end_;
  const std::int64_t b = s.window_begin;
  const std::int64_t c = s.window_end;
  const auto in = [](std::int64_t x, std::int64_t lo, std::int64_t hi) { return x >= lo && x < hi; };
  const auto drawn = [this](std::int64_t x) {
    return std::binary_search(drawn_.begin(), drawn_.end(), static_cast<std::int32_t>(x));
  };
  const auto dropped = [this](std::int64_t x) {
    return std::binary_search(dropped_.begin(), dropped_.end(), static_cast<std::int32_t>(x));
  };
  out.selected = static_cast<std::int64_t>(s.picks.size()) + (c - b);
  // removed: dropped picks not in Wn (all below pb), then Wp positions in neither Wn nor drawn.
  out.removed.clear();
  for (const std::int32_t p : dropped_) {
    if (!in(p, b, c)) out.removed.push_back(p);
  }
  for (std::int64_t p = pb; p < pc; ++p) {
    if (in(p, b, c)) {
      p = c - 1;  // skip the overlap of the two windows
      continue;
    }
    if (!drawn(p)) out.removed.push_back(p);
  }
  // added: drawn picks not in Wp (all below b), then Wn positions in neither Wp nor P.
  out.added.clear();
  for (const std::int32_t p : drawn_) {
    if (!in(p, pb, pc)) out.added.push_back(p);
  }
  for (std::int64_t p = b; p < c; ++p) {
    if (in(p, pb, pc)) {
      p = pc - 1;
      continue;
    }
    if (!dropped(p)) out.added.push_back(p);  // P's positions at or past b are all dropped
  }
}

std::string SyntheticAccess::store_key() const {
  const auto& p = params_;
  return nlohmann::json{"synthetic", p.layers, p.top_k, p.recent_window, p.distance_exponent, p.seed, p.retention,
                        p.prefill_retention}
      .dump();
}

}  // namespace ess
