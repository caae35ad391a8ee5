#include "models/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "models/check.h"
#include "sim/base/error.h"

namespace ess {

double median(std::vector<double> v) {
  if (v.empty()) throw InternalError("median of no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ErrorSummary summarize_errors(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.size() != measured.size() || measured.empty()) {
    throw InternalError("summarize_errors: need as many predictions as measurements, and at least one (got " +
                        std::to_string(predicted.size()) + " and " + std::to_string(measured.size()) + ")");
  }
  std::vector<double> signed_err(measured.size());
  std::vector<double> abs_err(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!(measured[i] > 0.0)) {
      throw InputError("summarize_errors: measured value " + std::to_string(i) + " must be > 0 (got " +
                       check::number(measured[i]) + ")");
    }
    if (!std::isfinite(predicted[i])) {
      throw InternalError("summarize_errors: prediction " + std::to_string(i) + " is not a finite number (got " +
                          check::number(predicted[i]) + "): the model is broken for this point");
    }
    signed_err[i] = (predicted[i] - measured[i]) / measured[i];
    abs_err[i] = std::abs(signed_err[i]);
  }
  ErrorSummary s;
  s.points = measured.size();
  s.bias = median(signed_err);
  std::sort(abs_err.begin(), abs_err.end());
  s.median_abs = median(abs_err);
  const auto rank = static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(abs_err.size())));
  s.p95_abs = abs_err[std::max<std::size_t>(rank, 1) - 1];
  s.max_abs = abs_err.back();
  return s;
}

Eigen::VectorXd relative_nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& y) {
  const Eigen::Index rows = a.rows();
  const Eigen::Index cols = a.cols();
  if (y.size() != rows) throw InternalError("relative_nonnegative_least_squares: A and y differ in rows");
  if (rows < cols) {
    throw FitError("too few points (" + std::to_string(rows) + ") for " + std::to_string(cols) + " parameters");
  }
  // Row i scaled by 1/y_i turns the relative residual into an ordinary one: (A x)_i / y_i - 1.
  // Columns differ in scale by up to ~1e15 (seconds vs seconds per byte): normalise them so that
  // the rank test and the solver compare like with like.
  Eigen::MatrixXd b = a;
  for (Eigen::Index i = 0; i < rows; ++i) {
    if (!(y[i] > 0.0)) throw InputError("relative_nonnegative_least_squares: y must be > 0");
    b.row(i) /= y[i];
  }
  const Eigen::VectorXd norms = b.colwise().norm();
  for (Eigen::Index j = 0; j < cols; ++j) {
    if (!(norms[j] > 0.0)) throw FitError("a model term is zero at every point, so the data cannot determine it");
    b.col(j) /= norms[j];
  }
  {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(b);
    qr.setThreshold(1e-10);
    if (qr.rank() < cols) {
      throw FitError("the points do not separate the model's terms (rank " + std::to_string(qr.rank()) + " of " +
                     std::to_string(cols) + "): measure a wider range of sizes");
    }
  }
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(rows);
  // Lawson and Hanson's active-set NNLS ("Solving Least Squares Problems", 1974, chapter 23):
  // columns enter the passive set by the largest gradient, and leave it when a step would make
  // their coefficient negative, so the result is the constrained minimum.
  std::vector<bool> passive(static_cast<std::size_t>(cols), false);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(cols);
  const auto solve_passive = [&]() {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < cols; ++j) {
      if (passive[static_cast<std::size_t>(j)]) idx.push_back(j);
    }
    Eigen::MatrixXd sub(rows, static_cast<Eigen::Index>(idx.size()));
    for (std::size_t k = 0; k < idx.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = b.col(idx[k]);
    const Eigen::VectorXd sol = sub.colPivHouseholderQr().solve(ones);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(cols);
    for (std::size_t k = 0; k < idx.size(); ++k) z[idx[k]] = sol[static_cast<Eigen::Index>(k)];
    return z;
  };
  constexpr double kTol = 1e-12;
  for (int outer = 0; outer < 3 * static_cast<int>(cols) + 10; ++outer) {
    const Eigen::VectorXd w = b.transpose() * (ones - b * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < cols; ++j) {
      if (!passive[static_cast<std::size_t>(j)] && w[j] > kTol && (best < 0 || w[j] > w[best])) best = j;
    }
    if (best < 0) break;
    passive[static_cast<std::size_t>(best)] = true;
    for (int inner = 0; inner <= static_cast<int>(cols); ++inner) {
      const Eigen::VectorXd z = solve_passive();
      bool feasible = true;
      double alpha = 1.0;
      for (Eigen::Index j = 0; j < cols; ++j) {
        if (passive[static_cast<std::size_t>(j)] && z[j] <= 0.0) {
          feasible = false;
          alpha = std::min(alpha, x[j] / (x[j] - z[j]));
        }
      }
      if (feasible) {
        x = z;
        break;
      }
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < cols; ++j) {
        if (passive[static_cast<std::size_t>(j)] && x[j] <= kTol) {
          passive[static_cast<std::size_t>(j)] = false;
          x[j] = 0.0;
        }
      }
    }
  }
  for (Eigen::Index j = 0; j < cols; ++j) x[j] = std::max(0.0, x[j]) / norms[j];
  return x;
}

int first_near_best(std::span<const double> costs) {
  double best = std::numeric_limits<double>::infinity();
  for (const double c : costs) {
    if (std::isfinite(c)) best = std::min(best, c);
  }
  if (!std::isfinite(best)) return -1;
  const double tolerance = kSameMinimumRelative * std::abs(best);
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (std::isfinite(costs[i]) && costs[i] <= best + tolerance) return static_cast<int>(i);
  }
  return -1;  // unreachable: best itself qualifies
}

std::vector<std::size_t> selected_points(std::span<const std::size_t> use, std::size_t n, const char* what) {
  std::vector<std::size_t> idx(use.begin(), use.end());
  if (idx.empty()) {
    idx.resize(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
  }
  for (const std::size_t i : idx) {
    if (i >= n) {
      throw InternalError(std::string(what) + ": point index " + std::to_string(i) + " out of range (" +
                          std::to_string(n) + " points)");
    }
  }
  return idx;
}

LmResult levenberg_marquardt(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals,
                             Eigen::VectorXd x0, int max_iterations) {
  LmResult out;
  out.x = std::move(x0);
  Eigen::VectorXd r = residuals(out.x);
  double cost = 0.5 * r.squaredNorm();
  double lambda = 1e-3;
  const Eigen::Index p = out.x.size();
  for (int it = 0; it < max_iterations; ++it) {
    out.iterations = it + 1;
    Eigen::MatrixXd jac(r.size(), p);
    for (Eigen::Index j = 0; j < p; ++j) {
      Eigen::VectorXd xh = out.x;
      const double h = 1e-7 * std::max(1.0, std::abs(out.x[j]));
      xh[j] += h;
      jac.col(j) = (residuals(xh) - r) / h;
    }
    const Eigen::MatrixXd jtj = jac.transpose() * jac;
    const Eigen::VectorXd jtr = jac.transpose() * r;
    bool accepted = false;
    while (lambda < 1e12) {
      Eigen::MatrixXd damped = jtj;
      damped.diagonal() += lambda * (jtj.diagonal().array() + 1e-12).matrix();
      const Eigen::VectorXd step = damped.ldlt().solve(-jtr);
      const Eigen::VectorXd x_new = out.x + step;
      const Eigen::VectorXd r_new = residuals(x_new);
      const double cost_new = 0.5 * r_new.squaredNorm();
      if (std::isfinite(cost_new) && cost_new < cost) {
        const double decrease = (cost - cost_new) / std::max(cost, std::numeric_limits<double>::min());
        out.x = x_new;
        r = r_new;
        cost = cost_new;
        lambda = std::max(lambda / 3.0, 1e-12);
        accepted = true;
        if (decrease < 1e-12) {
          out.cost = cost;
          return out;
        }
        break;
      }
      lambda *= 4.0;
    }
    if (!accepted) break;
  }
  out.cost = cost;
  return out;
}

std::vector<int> kfold_assignment(std::size_t n, int folds, std::uint64_t seed) {
  if (folds < 2 || static_cast<std::size_t>(folds) > n) {
    throw InternalError("k-fold cross-validation needs 2 <= folds <= points (got " + std::to_string(folds) +
                        " folds for " + std::to_string(n) + " points)");
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Fisher-Yates with splitmix64 (Steele, Lea, Flood 2014): deterministic on every platform,
  // unlike std::shuffle whose algorithm the standard leaves open.
  std::uint64_t state = seed;
  const auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(next() % i);
    std::swap(order[i - 1], order[j]);
  }
  std::vector<int> fold(n);
  for (std::size_t r = 0; r < n; ++r) fold[order[r]] = static_cast<int>(r % static_cast<std::size_t>(folds));
  return fold;
}

std::vector<int> grouped_kfold_assignment(std::span<const std::size_t> groups, int folds, std::uint64_t seed) {
  std::vector<std::size_t> ids(groups.begin(), groups.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // Folds of the distinct groups (sorted, so the result does not depend on point order), then
  // every point takes its group's fold.
  const std::vector<int> group_fold = kfold_assignment(ids.size(), folds, seed);
  std::vector<int> fold(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto at = std::lower_bound(ids.begin(), ids.end(), groups[i]) - ids.begin();
    fold[i] = group_fold[static_cast<std::size_t>(at)];
  }
  return fold;
}

}  // namespace ess
