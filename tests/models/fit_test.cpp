// The fitting tools (models/fit.h): error summaries, relative NNLS, Levenberg-Marquardt, k-fold
// assignment and cross-validation. Every expected value is worked out by hand in a comment.
#include "models/fit.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "models/collective.h"
#include "models/attention_fit.h"
#include "models/collective_fit.h"
#include "models/copy.h"
#include "models/gemm.h"
#include "models/gemm_fit.h"
#include "models/norm.h"
#include "models/norm_fit.h"
#include "models/transfer_fit.h"
#include "tests/models/test_hardware.h"
#include "sim/base/error.h"

using ess::FitError;
using Catch::Matchers::Contains;

namespace {

Approx rel(double expected, double tol = 1e-12) { return Approx(expected).epsilon(tol).margin(0.0); }

// Number of points in each fold 0..folds-1.
std::vector<std::size_t> fold_sizes(const std::vector<int>& fold, int folds) {
  std::vector<std::size_t> sizes(static_cast<std::size_t>(folds), 0);
  for (const int f : fold) {
    REQUIRE(f >= 0);
    REQUIRE(f < folds);
    ++sizes[static_cast<std::size_t>(f)];
  }
  return sizes;
}

}  // namespace

// --- summarize_errors ------------------------------------------------------------------------------

TEST_CASE("summarize_errors: median, nearest-rank p95, max and signed bias of four points", "[fit]") {
  const std::vector<double> predicted = {1.1, 0.9, 2.0, 1.0};
  const std::vector<double> measured = {1.0, 1.0, 1.0, 1.0};
  const ess::ErrorSummary s = ess::summarize_errors(predicted, measured);
  // e = {0.1, -0.1, 1, 0}; |e| sorted = {0, 0.1, 0.1, 1}
  CHECK(s.points == 4);
  // median |e| = (0.1 + 0.1) / 2 = 0.1
  CHECK(s.median_abs == rel(0.1, 1e-9));
  // nearest rank: ceil(0.95 * 4) = ceil(3.8) = 4 -> the 4th smallest = 1
  CHECK(s.p95_abs == rel(1.0, 1e-9));
  CHECK(s.max_abs == rel(1.0, 1e-9));
  // signed e sorted = {-0.1, 0, 0.1, 1}: median (0 + 0.1) / 2 = 0.05 (> 0: predicts too slow)
  CHECK(s.bias == rel(0.05, 1e-9));
}

TEST_CASE("summarize_errors: errors are relative to the measured value, not absolute", "[fit]") {
  // predicted {3, 10, 1.5}, measured {2, 20, 1}: e = {+0.5, -0.5, +0.5}; |e| all 0.5
  const std::vector<double> predicted = {3.0, 10.0, 1.5};
  const std::vector<double> measured = {2.0, 20.0, 1.0};
  const ess::ErrorSummary s = ess::summarize_errors(predicted, measured);
  CHECK(s.points == 3);
  CHECK(s.median_abs == rel(0.5));
  CHECK(s.max_abs == rel(0.5));
  // signed sorted {-0.5, 0.5, 0.5}: the middle one (odd count) = +0.5
  CHECK(s.bias == rel(0.5));
}

TEST_CASE("summarize_errors: p95 of 20 points is the 19th smallest, not the maximum", "[fit]") {
  // |e_i| = i / 100 for i = 1..20 (measured 1, predicted 1 + i/100).
  // Nearest rank: ceil(0.95 * 20) = 19 -> 0.19; max = 0.20; median = (0.10 + 0.11) / 2 = 0.105.
  std::vector<double> predicted;
  std::vector<double> measured;
  for (int i = 20; i >= 1; --i) {  // given in reverse order: the summary must sort
    predicted.push_back(1.0 + i / 100.0);
    measured.push_back(1.0);
  }
  const ess::ErrorSummary s = ess::summarize_errors(predicted, measured);
  CHECK(s.points == 20);
  CHECK(s.p95_abs == rel(0.19, 1e-9));
  CHECK(s.max_abs == rel(0.20, 1e-9));
  CHECK(s.median_abs == rel(0.105, 1e-9));
  CHECK(s.bias == rel(0.105, 1e-9));  // every error is positive
}

TEST_CASE("summarize_errors: a single exact point has zero error everywhere", "[fit]") {
  const std::vector<double> one = {2.5e-6};
  const ess::ErrorSummary s = ess::summarize_errors(one, one);
  CHECK(s.points == 1);
  CHECK(s.median_abs == 0.0);
  CHECK(s.p95_abs == 0.0);  // ceil(0.95) = 1 -> the only point
  CHECK(s.max_abs == 0.0);
  CHECK(s.bias == 0.0);
}

TEST_CASE("summarize_errors: mismatched, empty or non-positive measurements are rejected", "[fit][errors]") {
  const std::vector<double> two = {1.0, 2.0};
  const std::vector<double> three = {1.0, 2.0, 3.0};
  const std::vector<double> none;
  CHECK_THROWS_AS(ess::summarize_errors(two, three), ess::InternalError);
  CHECK_THROWS_AS(ess::summarize_errors(none, none), ess::InternalError);
  const std::vector<double> zero = {1.0, 0.0};
  const std::vector<double> negative = {1.0, -1.0};
  const std::vector<double> nan = {1.0, std::numeric_limits<double>::quiet_NaN()};
  CHECK_THROWS_WITH(ess::summarize_errors(two, zero), Contains("must be > 0"));
  CHECK_THROWS_AS(ess::summarize_errors(two, negative), ess::InputError);
  CHECK_THROWS_AS(ess::summarize_errors(two, nan), ess::InputError);
}

// --- relative_nonnegative_least_squares -------------------------------------------------------------

TEST_CASE("relative NNLS recovers known non-negative coefficients from exact data", "[fit]") {
  // y = 2 + 0.5 b at b = 1, 2, 3, 10: y = {2.5, 3, 3.5, 7}; an exact fit has zero residual.
  Eigen::MatrixXd a(4, 2);
  a << 1, 1, 1, 2, 1, 3, 1, 10;
  Eigen::VectorXd y(4);
  y << 2.5, 3.0, 3.5, 7.0;
  const Eigen::VectorXd x = ess::relative_nonnegative_least_squares(a, y);
  REQUIRE(x.size() == 2);
  CHECK(x[0] == rel(2.0, 1e-10));
  CHECK(x[1] == rel(0.5, 1e-10));
}

TEST_CASE("relative NNLS recovers coefficients of very different scales (seconds and seconds per byte)",
          "[fit]") {
  // time = 5 us + bytes / 25 GB/s: coefficients 5e-6 and 4e-11, 5 orders of magnitude apart.
  const double latency = 5e-6;
  const double per_byte = 1.0 / 25e9;
  const std::vector<double> bytes = {1e3, 1e5, 1e7, 1e9};
  Eigen::MatrixXd a(4, 2);
  Eigen::VectorXd y(4);
  for (int i = 0; i < 4; ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = bytes[static_cast<std::size_t>(i)];
    y[i] = latency + per_byte * bytes[static_cast<std::size_t>(i)];
  }
  const Eigen::VectorXd x = ess::relative_nonnegative_least_squares(a, y);
  CHECK(x[0] == rel(latency, 1e-9));
  CHECK(x[1] == rel(per_byte, 1e-9));
}

TEST_CASE("relative NNLS pins a coefficient the unconstrained fit makes negative to 0", "[fit]") {
  // Columns [1, b] at b = 1, 2 with y = {3, 2}: the unconstrained fit is exact with
  // x0 + x1 = 3, x0 + 2 x1 = 2 -> x1 = -1, x0 = 4 (a negative per-size term).
  // Constrained: x1 = 0 and x0 minimises (x0/3 - 1)^2 + (x0/2 - 1)^2:
  //   d/dx0: (x0/3 - 1)/3 + (x0/2 - 1)/2 = 0  ->  x0 (1/9 + 1/4) = 1/3 + 1/2  ->  x0 = (5/6)/(13/36) = 30/13.
  // KKT check that this is the constrained optimum: residuals r = {10/13 - 1, 15/13 - 1} = {-3/13, 2/13};
  // the gradient along x1 (scaled column {1/3, 2/2}) is -1/13 + 2/13 = 1/13 > 0, so x1 = 0 is right.
  Eigen::MatrixXd a(2, 2);
  a << 1, 1, 1, 2;
  Eigen::VectorXd y(2);
  y << 3.0, 2.0;
  const Eigen::VectorXd x = ess::relative_nonnegative_least_squares(a, y);
  CHECK(x[1] == 0.0);
  CHECK(x[0] == rel(30.0 / 13.0, 1e-10));
}

TEST_CASE("relative NNLS finds the constrained minimum with 3 columns (Lawson-Hanson frees pinned columns)", "[fit]") {
  // Columns [1, calls, bytes] (the copy model's shape), rows (1,1,1) x3, (1,2,1), (1,32,2),
  // y = {37, 29, 15, 15, 17}. An active set that only ever pins columns returned (0, 0, 12.6775),
  // cost sum((Ax)_i/y_i - 1)^2 = 1.0384, while (sum 1/y_i / sum 1/y_i^2, 0, 0) = (17.778, 0, 0) is
  // feasible and costs 0.4903. The constrained minimum costs no more than that, and satisfies the
  // KKT conditions: with B = diag(1/y) A and r = 1 - B x, the gradient g = B^T r is 0 where
  // x_j > 0 and <= 0 where x_j = 0.
  Eigen::MatrixXd a(5, 3);
  a << 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 32, 2;
  Eigen::VectorXd y(5);
  y << 37, 29, 15, 15, 17;
  const Eigen::VectorXd x = ess::relative_nonnegative_least_squares(a, y);
  Eigen::MatrixXd b = a;
  for (Eigen::Index i = 0; i < 5; ++i) b.row(i) /= y[i];
  const Eigen::VectorXd r = Eigen::VectorXd::Ones(5) - b * x;
  CHECK(r.squaredNorm() <= 0.4903 + 1e-4);
  const Eigen::VectorXd g = b.transpose() * r;
  for (Eigen::Index j = 0; j < 3; ++j) {
    INFO("column " << j << ": x " << x[j] << ", gradient " << g[j]);
    CHECK(x[j] >= 0.0);
    if (x[j] > 0.0) {
      CHECK(std::abs(g[j]) < 1e-9 * (1.0 + std::abs(b.col(j).norm())));
    } else {
      CHECK(g[j] <= 1e-9);
    }
  }
}

TEST_CASE("summarize_errors rejects a prediction that is not a finite number", "[fit]") {
  const std::vector<double> predicted = {std::nan(""), 1.5, 1.0};
  const std::vector<double> measured = {1.0, 1.0, 1.0};
  CHECK_THROWS_WITH(ess::summarize_errors(predicted, measured), Contains("prediction 0 is not a finite number"));
}

TEST_CASE("fits reject a point index out of range", "[fit]") {
  const std::vector<ess::CollectivePoint> points = {{2, 1e3, 1e-5}, {2, 1e6, 1e-4}};
  const std::vector<std::size_t> use = {0, 2};
  CHECK_THROWS_WITH(ess::fit_p2p(points, use), Contains("point index 2 out of range (2 points)"));
}

TEST_CASE("relative NNLS weights every point by 1/y: a small point counts as much as a large one", "[fit]") {
  // One column [1], y = {1, 100}: minimise (x - 1)^2 + (x/100 - 1)^2 ->
  //   (x - 1) + (x/100 - 1)/100 = 0 -> x (1 + 1e-4) = 1 + 1e-2 -> x = 1.01 / 1.0001.
  // (An absolute fit would give the mean, 50.5.)
  Eigen::MatrixXd a(2, 1);
  a << 1, 1;
  Eigen::VectorXd y(2);
  y << 1.0, 100.0;
  const Eigen::VectorXd x = ess::relative_nonnegative_least_squares(a, y);
  CHECK(x[0] == rel(1.01 / 1.0001, 1e-10));
}

TEST_CASE("relative NNLS rejects rank-deficient columns, zero columns and too few points", "[fit][errors]") {
  SECTION("a column proportional to another") {
    // Column 2 = 2 x column 1: the data cannot split the time between them.
    Eigen::MatrixXd a(3, 2);
    a << 1, 2, 2, 4, 3, 6;
    Eigen::VectorXd y(3);
    y << 1.0, 2.0, 3.0;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y), FitError);
    CHECK_THROWS_WITH(ess::relative_nonnegative_least_squares(a, y), Contains("rank 1 of 2"));
  }
  SECTION("every point the same size") {
    // Columns [1, b] with b = 7 everywhere: b is 7 x the constant column.
    Eigen::MatrixXd a(3, 2);
    a << 1, 7, 1, 7, 1, 7;
    Eigen::VectorXd y(3);
    y << 1.0, 1.1, 0.9;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y), FitError);
  }
  SECTION("a column that is zero at every point") {
    Eigen::MatrixXd a(3, 2);
    a << 1, 0, 1, 0, 1, 0;
    Eigen::VectorXd y(3);
    y << 1.0, 2.0, 3.0;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y), FitError);
    CHECK_THROWS_WITH(ess::relative_nonnegative_least_squares(a, y), Contains("zero at every point"));
  }
  SECTION("fewer points than columns") {
    Eigen::MatrixXd a(1, 2);
    a << 1, 2;
    Eigen::VectorXd y(1);
    y << 1.0;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y), FitError);
    CHECK_THROWS_WITH(ess::relative_nonnegative_least_squares(a, y), Contains("too few points (1) for 2 parameters"));
  }
  SECTION("y not positive, or of the wrong size") {
    Eigen::MatrixXd a(2, 1);
    a << 1, 1;
    Eigen::VectorXd y(2);
    y << 1.0, 0.0;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y), ess::InputError);
    Eigen::VectorXd y3(3);
    y3 << 1.0, 1.0, 1.0;
    CHECK_THROWS_AS(ess::relative_nonnegative_least_squares(a, y3), ess::InternalError);
  }
}

// --- levenberg_marquardt ---------------------------------------------------------------------------

TEST_CASE("Levenberg-Marquardt recovers an exponential decay from exact data", "[fit]") {
  // y(t) = 3 exp(-0.5 t) at t = 0..9; residual r_i = a exp(-b t_i) - y_i; start (1, 1).
  std::vector<double> t;
  std::vector<double> y;
  for (int i = 0; i < 10; ++i) {
    t.push_back(i);
    y.push_back(3.0 * std::exp(-0.5 * i));
  }
  const auto residuals = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(10);
    for (int i = 0; i < 10; ++i) {
      const auto u = static_cast<std::size_t>(i);
      r[i] = x[0] * std::exp(-x[1] * t[u]) - y[u];
    }
    return r;
  };
  Eigen::VectorXd x0(2);
  x0 << 1.0, 1.0;
  const ess::LmResult fit = ess::levenberg_marquardt(residuals, x0);
  CHECK(fit.x[0] == rel(3.0, 1e-6));
  CHECK(fit.x[1] == rel(0.5, 1e-6));
  CHECK(fit.cost < 1e-12);
  CHECK(fit.iterations >= 1);
  CHECK(fit.iterations <= 200);
  // Deterministic: the same start gives bit-identical parameters.
  const ess::LmResult again = ess::levenberg_marquardt(residuals, x0);
  CHECK(again.x[0] == fit.x[0]);
  CHECK(again.x[1] == fit.x[1]);
  CHECK(again.iterations == fit.iterations);
}

TEST_CASE("Levenberg-Marquardt recovers a rational (Michaelis-Menten) model", "[fit]") {
  // y = vmax s / (km + s), vmax = 2, km = 0.3, at s = 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2; start (1, 1).
  const std::vector<double> s = {0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2};
  const auto residuals = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(s.size()));
    for (std::size_t i = 0; i < s.size(); ++i) {
      r[static_cast<Eigen::Index>(i)] = x[0] * s[i] / (x[1] + s[i]) - 2.0 * s[i] / (0.3 + s[i]);
    }
    return r;
  };
  Eigen::VectorXd x0(2);
  x0 << 1.0, 1.0;
  const ess::LmResult fit = ess::levenberg_marquardt(residuals, x0);
  CHECK(fit.x[0] == rel(2.0, 1e-6));
  CHECK(fit.x[1] == rel(0.3, 1e-6));
}

TEST_CASE("Levenberg-Marquardt stops after max_iterations", "[fit]") {
  // The exponential decay above needs many steps from (1, 1); with one allowed, it takes one.
  const auto residuals = [](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(10);
    for (int i = 0; i < 10; ++i) r[i] = x[0] * std::exp(-x[1] * i) - 3.0 * std::exp(-0.5 * i);
    return r;
  };
  Eigen::VectorXd x0(2);
  x0 << 1.0, 1.0;
  const ess::LmResult one = ess::levenberg_marquardt(residuals, x0, 1);
  CHECK(one.iterations == 1);
  CHECK(one.cost > 1e-6);  // not converged yet
  // and the step it took lowered the cost below the start's: 0.5 sum (e^{-i} - 3 e^{-i/2})^2
  double start = 0.0;
  for (int i = 0; i < 10; ++i) start += 0.5 * std::pow(std::exp(-1.0 * i) - 3.0 * std::exp(-0.5 * i), 2);
  CHECK(one.cost < start);
}

// --- kfold_assignment ------------------------------------------------------------------------------

TEST_CASE("kfold_assignment: the splitmix64 shuffle of 4 points with seed 0, by hand", "[fit]") {
  // splitmix64 from state 0 (Steele, Lea, Flood 2014; the reference sequence): e220a8397b1dcdaf,
  // 6e789e6aa1b965f4, 06c45d188009454f.
  // Fisher-Yates on order {0,1,2,3}:
  //   i = 4: j = ...daf % 4 = 0xf % 4 = 3 -> swap(order[3], order[3]): {0,1,2,3}
  //   i = 3: j = 6e789e6aa1b965f4 % 3 = (sum of hex digits = 135) % 3 = 0 -> swap(order[2], order[0]): {2,1,0,3}
  //   i = 2: j = ...54f % 2 = 1 -> swap(order[1], order[1]): {2,1,0,3}
  // Dealt round-robin: fold[order[r]] = r % 2 -> fold[2] = 0, fold[1] = 1, fold[0] = 0, fold[3] = 1.
  CHECK(ess::kfold_assignment(4, 2, 0) == std::vector<int>{0, 1, 0, 1});
}

TEST_CASE("kfold_assignment: fold sizes differ by at most one and every fold is used", "[fit]") {
  for (const std::size_t n : {2u, 3u, 7u, 10u, 101u}) {
    for (const int folds : {2, 3, 5, 7}) {
      if (static_cast<std::size_t>(folds) > n) continue;
      INFO("n " << n << ", folds " << folds);
      const std::vector<int> fold = ess::kfold_assignment(n, folds, 42);
      REQUIRE(fold.size() == n);
      const auto sizes = fold_sizes(fold, folds);
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      CHECK(*lo >= 1);
      CHECK(*hi - *lo <= 1);
      // Round-robin dealing: the first n % folds folds get the extra point, e.g. n 10, folds 3 -> {4, 3, 3}.
      const auto k = static_cast<std::size_t>(folds);
      for (std::size_t f = 0; f < k; ++f) CHECK(sizes[f] == n / k + (f < n % k ? 1 : 0));
    }
  }
}

TEST_CASE("kfold_assignment: deterministic for a seed, different for another seed", "[fit]") {
  const auto a = ess::kfold_assignment(50, 5, 7);
  const auto b = ess::kfold_assignment(50, 5, 7);
  const auto c = ess::kfold_assignment(50, 5, 8);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(fold_sizes(c, 5) == std::vector<std::size_t>{10, 10, 10, 10, 10});
  // The shuffle does shuffle: not simply i % 5.
  std::vector<int> plain(50);
  for (std::size_t i = 0; i < 50; ++i) plain[i] = static_cast<int>(i % 5);
  CHECK(a != plain);
}

TEST_CASE("kfold_assignment rejects fewer than 2 folds or more folds than points", "[fit][errors]") {
  CHECK_THROWS_AS(ess::kfold_assignment(10, 1, 0), ess::InternalError);
  CHECK_THROWS_AS(ess::kfold_assignment(10, 0, 0), ess::InternalError);
  CHECK_THROWS_AS(ess::kfold_assignment(10, -3, 0), ess::InternalError);
  CHECK_THROWS_WITH(ess::kfold_assignment(3, 4, 0), Contains("4 folds for 3 points"));
  CHECK_THROWS_AS(ess::kfold_assignment(0, 2, 0), ess::InternalError);
  CHECK_NOTHROW(ess::kfold_assignment(3, 3, 0));  // folds == n: leave-one-out
  const auto loo = ess::kfold_assignment(3, 3, 0);
  CHECK(std::set<int>(loo.begin(), loo.end()) == std::set<int>{0, 1, 2});
}

TEST_CASE("grouped_kfold_assignment keeps every point of a group in one fold", "[fit]") {
  // Groups 5 (2 points), 7 (3), 9 (2), 11 (1), interleaved.
  const std::vector<std::size_t> groups = {5, 7, 9, 5, 7, 11, 9, 7};
  const std::vector<int> fold = ess::grouped_kfold_assignment(groups, 2, 3);
  REQUIRE(fold.size() == groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    for (std::size_t j = 0; j < groups.size(); ++j) {
      if (groups[i] == groups[j]) CHECK(fold[i] == fold[j]);
    }
  }
  // The 4 distinct groups are dealt 2 to each fold (kfold_assignment over the sorted ids).
  const std::vector<int> group_fold = ess::kfold_assignment(4, 2, 3);
  const std::vector<std::size_t> ids = {5, 7, 9, 11};
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto at = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), groups[i]) - ids.begin());
    CHECK(fold[i] == group_fold[at]);
  }
  // The point order does not matter: the same groups in another order get the same folds.
  const std::vector<std::size_t> reordered = {11, 9, 9, 7, 7, 7, 5, 5};
  const std::vector<int> fold2 = ess::grouped_kfold_assignment(reordered, 2, 3);
  for (std::size_t i = 0; i < reordered.size(); ++i) {
    const auto at = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), reordered[i]) - ids.begin());
    CHECK(fold2[i] == group_fold[at]);
  }
}

TEST_CASE("grouped_kfold_assignment needs at least as many groups as folds", "[fit][errors]") {
  const std::vector<std::size_t> groups = {1, 1, 1, 2, 2, 2};  // 6 points, 2 groups
  CHECK_THROWS_AS(ess::grouped_kfold_assignment(groups, 3, 0), ess::InternalError);
  CHECK_NOTHROW(ess::grouped_kfold_assignment(groups, 2, 0));
}

// --- cross_validate --------------------------------------------------------------------------------

TEST_CASE("cross_validate: a model that is exactly right has zero error, fitted and held out", "[fit]") {
  // y_i = 3 x_i; the model y = c x with c = mean of y/x over the training points (always 3).
  const std::vector<double> x = {1, 2, 5, 10, 20, 50};
  std::vector<double> y;
  for (const double v : x) y.push_back(3.0 * v);
  const std::function<double(std::span<const std::size_t>)> fit = [&](std::span<const std::size_t> train) {
    double c = 0.0;
    for (const std::size_t i : train) c += y[i] / x[i];
    return c / static_cast<double>(train.size());
  };
  const std::function<double(const double&, std::size_t)> predict = [&](const double& c, std::size_t i) {
    return c * x[i];
  };
  const ess::CrossValidated cv = ess::cross_validate<double>(y, 3, 1, fit, predict);
  CHECK(cv.folds == 3);
  CHECK(cv.fit.points == 6);
  CHECK(cv.cross_validated.points == 6);
  CHECK(cv.fit.max_abs < 1e-15);
  CHECK(cv.cross_validated.max_abs < 1e-15);
}

TEST_CASE("cross_validate: leave-one-out error of a constant model on {1, 2, 3, 4}, by hand", "[fit]") {
  // The model: the mean of the training points' measurements.
  // Fit on all: mean 2.5 -> e = {1.5, 0.25, -1/6, -0.375};
  //   |e| sorted {1/6, 0.25, 0.375, 1.5}: median (0.25 + 0.375)/2 = 0.3125, p95 = max = 1.5;
  //   signed sorted {-0.375, -1/6, 0.25, 1.5}: bias (-1/6 + 0.25)/2 = 1/24.
  // Leave-one-out (folds = n = 4, any seed): point i is predicted by the mean of the other three:
  //   1: (2+3+4)/3 = 3     -> e = (3 - 1)/1 = 2
  //   2: (1+3+4)/3 = 8/3   -> e = (8/3 - 2)/2 = 1/3
  //   3: (1+2+4)/3 = 7/3   -> e = (7/3 - 3)/3 = -2/9
  //   4: (1+2+3)/3 = 2     -> e = (2 - 4)/4 = -1/2
  //   |e| sorted {2/9, 1/3, 1/2, 2}: median (1/3 + 1/2)/2 = 5/12; p95 (rank ceil(3.8) = 4) = max = 2;
  //   signed sorted {-1/2, -2/9, 1/3, 2}: bias (-2/9 + 1/3)/2 = 1/18.
  const std::vector<double> y = {1.0, 2.0, 3.0, 4.0};
  const std::function<double(std::span<const std::size_t>)> fit = [&](std::span<const std::size_t> train) {
    double sum = 0.0;
    for (const std::size_t i : train) sum += y[i];
    return sum / static_cast<double>(train.size());
  };
  const std::function<double(const double&, std::size_t)> predict = [](const double& mean, std::size_t) {
    return mean;
  };
  for (const std::uint64_t seed : {0u, 1u, 12345u}) {
    INFO("seed " << seed);
    const ess::CrossValidated cv = ess::cross_validate<double>(y, 4, seed, fit, predict);
    CHECK(cv.folds == 4);
    CHECK(cv.fit.median_abs == rel(0.3125));
    CHECK(cv.fit.p95_abs == rel(1.5));
    CHECK(cv.fit.max_abs == rel(1.5));
    CHECK(cv.fit.bias == rel(1.0 / 24.0));
    CHECK(cv.cross_validated.median_abs == rel(5.0 / 12.0));
    CHECK(cv.cross_validated.p95_abs == rel(2.0));
    CHECK(cv.cross_validated.max_abs == rel(2.0));
    CHECK(cv.cross_validated.bias == rel(1.0 / 18.0));
  }
}

TEST_CASE("cross_validate with groups holds whole groups out, by hand", "[fit]") {
  // measured {1, 1, 3, 3} in groups {0, 0, 1, 1}, 2 folds, the mean model:
  // group 0 held out -> trained on {3, 3} -> predicts 3 for measured 1: e = +2 (twice)
  // group 1 held out -> trained on {1, 1} -> predicts 1 for measured 3: e = -2/3 (twice)
  // |e| sorted {2/3, 2/3, 2, 2}: median 4/3, max 2; signed sorted {-2/3, -2/3, 2, 2}: bias 2/3.
  // (A plain 2-fold split could put a 1 and a 3 in each training set and would give other numbers.)
  const std::vector<double> y = {1.0, 1.0, 3.0, 3.0};
  const std::vector<std::size_t> groups = {0, 0, 1, 1};
  std::vector<std::vector<std::size_t>> trained_on;
  const std::function<double(std::span<const std::size_t>)> fit = [&](std::span<const std::size_t> train) {
    trained_on.emplace_back(train.begin(), train.end());
    double sum = 0.0;
    for (const std::size_t i : train) sum += y[i];
    return sum / static_cast<double>(train.size());
  };
  const std::function<double(const double&, std::size_t)> predict = [](const double& mean, std::size_t) {
    return mean;
  };
  const ess::CrossValidated cv = ess::cross_validate<double>(y, 2, 9, fit, predict, groups);
  CHECK(cv.cross_validated.median_abs == rel(4.0 / 3.0));
  CHECK(cv.cross_validated.max_abs == rel(2.0));
  CHECK(cv.cross_validated.bias == rel(2.0 / 3.0));
  // One fit on every point, then one per fold, each on exactly one whole group.
  REQUIRE(trained_on.size() == 3);
  CHECK(trained_on[0] == std::vector<std::size_t>{0, 1, 2, 3});
  for (std::size_t f = 1; f < 3; ++f) {
    REQUIRE(trained_on[f].size() == 2);
    CHECK(groups[trained_on[f][0]] == groups[trained_on[f][1]]);
  }
  CHECK(groups[trained_on[1][0]] != groups[trained_on[2][0]]);
}

// --- synthetic recovery: data generated by each model with known parameters ------------------------
//
// The test GPU (tests/models/test_hardware.h): bf16/fp16 peak 100 TFLOP/s, fp8 200, HBM 1 TB/s;
// PCIe h2d 50 GB/s, d2h 40 GB/s, latency 1 us, call overheads 2 us (h2d) and 3 us (d2h), gather
// efficiencies 0.5 and 0.75; NVLink 400 GB/s + 2 us; all-reduce 400 GB/s bus + 10 us; all-to-all
// 200 GB/s + 20 us; 8 GPUs per node.

namespace {

using ess::CopyDirection;
using ess::DType;

// GEMM points from gemm() itself on `hw`: four weight shapes, m = 1, 2, 4, ..., 4096.
std::vector<ess::GemmPoint> gemm_points(const ess::Hardware& hw, DType dtype) {
  const std::int64_t weights[][2] = {{4096, 4096}, {12288, 4096}, {4096, 11008}, {1024, 1024}};
  std::vector<ess::GemmPoint> points;
  for (const auto& w : weights) {
    for (std::int64_t m = 1; m <= 4096; m *= 2) {
      const ess::GemmShape shape{m, w[0], w[1], dtype};
      points.push_back({shape, ess::gemm(shape, hw).time.value()});
    }
  }
  return points;
}

}  // namespace

TEST_CASE("fit_gemm recovers the predictions and efficiencies of known roofline parameters", "[fit][gemm]") {
  ess::Hardware truth = ess::test::test_hardware();
  // Known parameters: compute 0.7 with a 2 GFLOP ramp, memory 0.6 with a 3 MB ramp, 4 us overhead,
  // roofs combined as a 2-norm near the ridge point.
  truth.kernels.gemm = {.compute_efficiency = 0.7,
                        .compute_ramp = ess::Flops(2e9),
                        .memory_efficiency = 0.6,
                        .memory_ramp = ess::Bytes(3e6),
                        .kernel_overhead = ess::Seconds(4e-6),
                        .transition = 2.0};
  const auto points = gemm_points(truth, DType::bf16);
  REQUIRE(points.size() == 4 * 13);
  // Fitted on a Hardware whose gemm parameters are something else entirely: the fit must not read them.
  const ess::Hardware base = ess::test::test_hardware();
  const ess::RooflineParams fitted = ess::fit_gemm(points, {}, base);
  INFO("fitted: ce " << fitted.compute_efficiency << ", ramp " << fitted.compute_ramp.value() << " FLOP, me "
                     << fitted.memory_efficiency << ", ramp " << fitted.memory_ramp.value() << " B, overhead "
                     << fitted.kernel_overhead.value() << " s");
  // The slopes are identifiable: 1/(peak ce) from the compute-bound points, 1/(bw me) from the
  // memory-bound ones. (The ramps and overhead are not: each regime sees only ramp/rate + overhead.)
  CHECK(fitted.compute_efficiency == Approx(0.7).epsilon(0.01));
  CHECK(fitted.memory_efficiency == Approx(0.6).epsilon(0.01));
  // So is the transition: the points near the ridge see both roofs.
  CHECK(fitted.transition == Approx(2.0).epsilon(0.01));
  ess::Hardware refit = base;
  refit.kernels.gemm = fitted;
  double worst = 0.0;
  for (const auto& p : points) {
    const double predicted = ess::gemm(p.shape, refit).time.value();
    worst = std::max(worst, std::abs(predicted / p.seconds - 1.0));
  }
  INFO("worst relative error of the refitted predictions " << worst);
  CHECK(worst < 1e-6);
}

TEST_CASE("fit_gemm fits only the points in `use` and needs at least 6 of them", "[fit][gemm][errors]") {
  ess::Hardware truth = ess::test::test_hardware();
  truth.kernels.gemm.transition = 4.0;  // a smooth roofline, which the fit can represent exactly
  const auto points = gemm_points(truth, DType::fp16);
  // Corrupt every point outside `use` by 10x: a fit that read them would be far off.
  std::vector<ess::GemmPoint> corrupted = points;
  std::vector<std::size_t> use;
  for (std::size_t i = 0; i < corrupted.size(); ++i) {
    if (i % 2 == 0) {
      use.push_back(i);
    } else {
      corrupted[i].seconds *= 10.0;
    }
  }
  const ess::RooflineParams fitted = ess::fit_gemm(corrupted, use, truth);
  ess::Hardware refit = truth;
  refit.kernels.gemm = fitted;
  for (const std::size_t i : use) {
    CHECK(ess::gemm(points[i].shape, refit).time.value() == Approx(points[i].seconds).epsilon(1e-6));
  }
  const std::vector<std::size_t> five = {0, 1, 2, 3, 4};
  CHECK_THROWS_AS(ess::fit_gemm(points, five, truth), FitError);
  CHECK_THROWS_WITH(ess::fit_gemm(std::span(points).first(5), {}, truth), Contains("got 5"));
  // fp8 points on a GPU without fp8 tensor cores cannot be fitted.
  const auto fp8 = gemm_points(truth, DType::fp8);
  CHECK_THROWS_AS(ess::fit_gemm(fp8, {}, ess::test::test_hardware_without_fp8()), ess::UnsupportedError);
  // A non-positive measured time is a bad input.
  std::vector<ess::GemmPoint> bad = points;
  bad[3].seconds = 0.0;
  CHECK_THROWS_AS(ess::fit_gemm(bad, {}, truth), ess::InputError);
}

namespace {

std::vector<ess::NormPoint> norm_points(const ess::Hardware& hw) {
  std::vector<ess::NormPoint> points;
  for (const std::int64_t tokens : {1, 16, 256, 4096}) {
    for (const std::int64_t hidden : {1024, 4096, 7168}) {
      const ess::NormShape shape{tokens, hidden, DType::bf16, ess::NormKind::rms};
      points.push_back({shape, ess::norm(shape, hw).time.value()});
    }
  }
  return points;
}

}  // namespace

TEST_CASE("fit_memory_bound recovers efficiency and overhead of data generated with memory_ramp 0",
          "[fit][norm]") {
  ess::Hardware truth = ess::test::test_hardware();
  truth.kernels.memory_bound.memory_efficiency = 0.4;
  truth.kernels.memory_bound.memory_ramp = ess::Bytes(0.0);
  truth.kernels.memory_bound.kernel_overhead = ess::Seconds(3e-6);
  const auto points = norm_points(truth);
  // Hand check of one point: tokens 16, hidden 4096, bf16 RMSNorm:
  //   bytes = 2*16*4096*2 + 4096*2 = 262,144 + 8,192 = 270,336 B; time = 3 us + 270,336 / 4e11 = 3.67584 us
  CHECK(points[4].seconds == Approx(3.67584e-6).epsilon(1e-12));
  const ess::RooflineParams fitted = ess::fit_memory_bound(points, {}, ess::test::test_hardware());
  CHECK(fitted.memory_efficiency == Approx(0.4).epsilon(1e-9));
  CHECK(fitted.memory_ramp.value() == 0.0);
  CHECK(fitted.kernel_overhead.value() == Approx(3e-6).epsilon(1e-9));
  // The compute side is the base's (norms count no FLOP): test_hardware's memory_bound has 1.0, 0.
  CHECK(fitted.compute_efficiency == 1.0);
  CHECK(fitted.compute_ramp.value() == 0.0);
}

TEST_CASE("fit_memory_bound reads a memory ramp as part of the overhead", "[fit][norm]") {
  // test_hardware: memory_bound efficiency 0.5 (5e11 B/s), ramp 1e5 B, overhead 1 us.
  // time = 1 us + (bytes + 1e5) / 5e11 = (1 us + 1e5/5e11 = 1.2 us) + bytes / 5e11: the fit sets the
  // ramp to 0 and reads 1.2 us as the overhead, with the same efficiency 0.5.
  const ess::Hardware hw = ess::test::test_hardware();
  const ess::RooflineParams fitted = ess::fit_memory_bound(norm_points(hw), {}, hw);
  CHECK(fitted.memory_efficiency == Approx(0.5).epsilon(1e-9));
  CHECK(fitted.memory_ramp.value() == 0.0);
  CHECK(fitted.kernel_overhead.value() == Approx(1.2e-6).epsilon(1e-9));
}

TEST_CASE("fit_memory_bound rejects data faster than the datasheet HBM bandwidth", "[fit][norm][errors]") {
  // time = 1 us + bytes / 1.25 TB/s on a 1 TB/s GPU: 125% of the datasheet bandwidth.
  const ess::Hardware hw = ess::test::test_hardware();
  auto points = norm_points(hw);
  for (auto& p : points) p.seconds = 1e-6 + ess::norm(p.shape, hw).bytes.value() / 1.25e12;
  CHECK_THROWS_AS(ess::fit_memory_bound(points, {}, hw), FitError);
  CHECK_THROWS_WITH(ess::fit_memory_bound(points, {}, hw), Contains("125% of the datasheet HBM bandwidth"));
  // 90% passes (efficiency 0.9).
  for (auto& p : points) p.seconds = 1e-6 + ess::norm(p.shape, hw).bytes.value() / 0.9e12;
  CHECK(ess::fit_memory_bound(points, {}, hw).memory_efficiency == Approx(0.9).epsilon(1e-9));
  // Exactly 100% of the datasheet bandwidth (efficiency 1, which hardware.kernels.memory_bound
  // accepts) passes, although least squares gives 1 / efficiency a rounding error under 1.
  for (auto& p : points) p.seconds = 1e-6 + ess::norm(p.shape, hw).bytes.value() / 1e12;
  CHECK(ess::fit_memory_bound(points, {}, hw).memory_efficiency == Approx(1.0).epsilon(1e-9));
}

TEST_CASE("fit_memory_bound needs 2 points of different sizes", "[fit][norm][errors]") {
  const ess::Hardware hw = ess::test::test_hardware();
  const auto points = norm_points(hw);
  const std::vector<std::size_t> one = {0};
  CHECK_THROWS_WITH(ess::fit_memory_bound(points, one, hw), Contains("got 1"));
  // Two measurements of the same shape: [1, bytes] columns are proportional.
  std::vector<ess::NormPoint> same = {points[5], points[5]};
  same[1].seconds *= 1.1;
  CHECK_THROWS_AS(ess::fit_memory_bound(same, {}, hw), FitError);
}

namespace {

// Copies generated by copy_time: single copies of 4 KB, 1 MB and 64 MB, and 656-byte rows copied
// one call per row (64 and 1024 rows), in both directions.
std::vector<ess::CopyPoint> copy_points(const ess::PcieSpec& pcie, bool h2d, bool d2h) {
  std::vector<ess::CopyPoint> points;
  for (const CopyDirection dir : {CopyDirection::h2d, CopyDirection::d2h}) {
    if ((dir == CopyDirection::h2d && !h2d) || (dir == CopyDirection::d2h && !d2h)) continue;
    for (const double bytes : {4096.0, 1048576.0, 67108864.0}) {
      points.push_back({dir, bytes, 1, ess::copy_time(dir, ess::Bytes(bytes), 1, pcie).value()});
    }
    for (const std::int64_t rows : {64, 1024}) {
      const double bytes = 656.0 * static_cast<double>(rows);
      points.push_back({dir, bytes, rows, ess::copy_time(dir, ess::Bytes(bytes), rows, pcie).value()});
    }
  }
  return points;
}

// A PCIe spec with every fitted field wrong, and distinctive values in the fields no fit touches.
ess::PcieSpec wrong_pcie() {
  ess::PcieSpec p = ess::test::test_hardware().pcie;
  p.h2d_bandwidth = ess::BytesPerSecond(1e9);
  p.d2h_bandwidth = ess::BytesPerSecond(2e9);
  p.latency = ess::Seconds(9e-6);
  p.h2d_call_overhead = ess::Seconds(8e-6);
  p.d2h_call_overhead = ess::Seconds(7e-6);
  p.gather_sm_fraction = 0.33;
  p.generation = 4;
  return p;
}

}  // namespace

TEST_CASE("fit_pcie_copies recovers bandwidths, latency and call overheads of both directions", "[fit][copy]") {
  const ess::PcieSpec truth = ess::test::test_hardware().pcie;
  const auto points = copy_points(truth, true, true);
  // Hand check: 64 rows of 656 B d2h, one call each: 64 x 3 us + 1 us + 41,984 B / 40 GB/s
  //   = 192 + 1 + 1.0496 = 194.0496 us
  CHECK(points[8].seconds == Approx(194.0496e-6).epsilon(1e-12));
  const ess::PcieSpec fitted = ess::fit_pcie_copies(points, {}, wrong_pcie());
  CHECK(fitted.h2d_bandwidth.value() == Approx(50e9).epsilon(1e-6));
  CHECK(fitted.d2h_bandwidth.value() == Approx(40e9).epsilon(1e-6));
  CHECK(fitted.latency.value() == Approx(1e-6).epsilon(1e-6));
  CHECK(fitted.h2d_call_overhead.value() == Approx(2e-6).epsilon(1e-6));
  CHECK(fitted.d2h_call_overhead.value() == Approx(3e-6).epsilon(1e-6));
  // Fields the copy fit does not cover stay the base's.
  CHECK(fitted.gather_sm_fraction == 0.33);
  CHECK(fitted.generation == 4);
}

TEST_CASE("fit_pcie_copies keeps the base values of a direction without points", "[fit][copy]") {
  const ess::PcieSpec truth = ess::test::test_hardware().pcie;
  const auto points = copy_points(truth, true, false);
  const ess::PcieSpec fitted = ess::fit_pcie_copies(points, {}, wrong_pcie());
  CHECK(fitted.h2d_bandwidth.value() == Approx(50e9).epsilon(1e-6));
  CHECK(fitted.h2d_call_overhead.value() == Approx(2e-6).epsilon(1e-6));
  CHECK(fitted.latency.value() == Approx(1e-6).epsilon(1e-6));
  CHECK(fitted.d2h_bandwidth.value() == 2e9);  // wrong_pcie's, untouched
  CHECK(fitted.d2h_call_overhead.value() == 7e-6);
}

TEST_CASE("fit_pcie_copies rejects points that cannot separate the terms", "[fit][copy][errors]") {
  const ess::PcieSpec truth = ess::test::test_hardware().pcie;
  // Single copies only (calls = 1 everywhere): the call-overhead column equals the latency column,
  // so the latency is not fitted: it stays base's, and the overhead and bandwidth are recovered.
  std::vector<ess::CopyPoint> single;
  for (const double bytes : {4096.0, 1048576.0, 67108864.0}) {
    const double t = ess::copy_time(CopyDirection::h2d, ess::Bytes(bytes), 1, truth).value();
    single.push_back({CopyDirection::h2d, bytes, 1, t});
  }
  CHECK_FALSE(ess::copy_fit_sets_latency(single, {}));
  ess::PcieSpec wrong = truth;
  wrong.h2d_call_overhead = ess::Seconds(9e-6);
  wrong.h2d_bandwidth = ess::BytesPerSecond(1e9);
  const ess::PcieSpec fitted = ess::fit_pcie_copies(single, {}, wrong);
  CHECK(fitted.latency.value() == truth.latency.value());
  CHECK(fitted.h2d_call_overhead.value() == Approx(truth.h2d_call_overhead.value()).epsilon(1e-6));
  CHECK(fitted.h2d_bandwidth.value() == Approx(truth.h2d_bandwidth.value()).epsilon(1e-6));
  // Fewer points than the 2 columns left for one direction.
  const std::vector<std::size_t> one = {0};
  CHECK_THROWS_WITH(ess::fit_pcie_copies(single, one, truth), Contains("at least 2 copy points, got 1"));
  // A copy shorter than the base latency it must include is not a copy of this link.
  std::vector<ess::CopyPoint> too_fast = single;
  too_fast[0].seconds = 0.5e-6;  // below the 1 us latency
  CHECK_THROWS_AS(ess::fit_pcie_copies(too_fast, {}, truth), FitError);
  // calls < 1 is a bad input.
  auto bad = copy_points(truth, true, false);
  bad[0].calls = 0;
  CHECK_THROWS_AS(ess::fit_pcie_copies(bad, {}, truth), ess::InputError);
  // Times that fall with size: no per-byte cost.
  std::vector<ess::CopyPoint> falling = {{CopyDirection::d2h, 1e3, 1, 30e-6},
                                         {CopyDirection::d2h, 1e6, 1, 20e-6},
                                         {CopyDirection::d2h, 1e3, 16, 60e-6},
                                         {CopyDirection::d2h, 1e6, 16, 50e-6}};
  CHECK_THROWS_WITH(ess::fit_pcie_copies(falling, {}, truth), Contains("d2h copies: the fit found no per-byte cost"));
}

TEST_CASE("fit_gather_efficiency recovers each direction's efficiency", "[fit][copy]") {
  const ess::PcieSpec truth = ess::test::test_hardware().pcie;  // efficiencies 0.5 and 0.75
  std::vector<ess::GatherPoint> points;
  for (const CopyDirection dir : {CopyDirection::h2d, CopyDirection::d2h}) {
    for (const double rows : {64.0, 2048.0, 65536.0}) {
      const double bytes = 656.0 * rows;
      points.push_back({dir, bytes, ess::gather_time(dir, ess::Bytes(bytes), truth).value()});
    }
  }
  // Hand check: 2048 rows h2d = 1,343,488 B at 50 GB/s x 0.5 = 25 GB/s: 1 us + 53.73952 us = 54.73952 us
  CHECK(points[1].seconds == Approx(54.73952e-6).epsilon(1e-12));
  ess::PcieSpec base = truth;
  base.gather_h2d_efficiency = 1.0;
  base.gather_d2h_efficiency = 1.0;
  const ess::PcieSpec fitted = ess::fit_gather_efficiency(points, {}, base);
  CHECK(fitted.gather_h2d_efficiency == Approx(0.5).epsilon(1e-9));
  CHECK(fitted.gather_d2h_efficiency == Approx(0.75).epsilon(1e-9));
  // Only h2d points: d2h keeps the base's value.
  const std::vector<std::size_t> h2d_only = {0, 1, 2};
  const ess::PcieSpec half = ess::fit_gather_efficiency(points, h2d_only, base);
  CHECK(half.gather_h2d_efficiency == Approx(0.5).epsilon(1e-9));
  CHECK(half.gather_d2h_efficiency == 1.0);
}

TEST_CASE("fit_gather_efficiency rejects an efficiency above 100% of the copy bandwidth", "[fit][copy][errors]") {
  // h2d gathers at 75 GB/s on a 50 GB/s link: 150%.
  const ess::PcieSpec base = ess::test::test_hardware().pcie;
  std::vector<ess::GatherPoint> points;
  for (const double bytes : {1e5, 1e6, 1e7}) points.push_back({CopyDirection::h2d, bytes, 1e-6 + bytes / 75e9});
  CHECK_THROWS_AS(ess::fit_gather_efficiency(points, {}, base), FitError);
  CHECK_THROWS_WITH(ess::fit_gather_efficiency(points, {}, base), Contains("150%"));
  points[0].bytes = 0.0;
  CHECK_THROWS_AS(ess::fit_gather_efficiency(points, {}, base), ess::InputError);
}

TEST_CASE("fit_gather_sm_fraction is the clamped median of 1 - alone/with", "[fit][copy]") {
  // 1 - 1/1.25 = 0.2, 1 - 1/2 = 0.5, 1 - 3/4 = 0.25: sorted {0.2, 0.25, 0.5} -> median 0.25.
  const std::vector<ess::InterferencePoint> three = {{1.0, 1.25}, {1.0, 2.0}, {3.0, 4.0}};
  CHECK(ess::fit_gather_sm_fraction(three, {}) == Approx(0.25).epsilon(1e-12));
  // An even count: {0.2, 0.5} (points 0 and 1) -> (0.2 + 0.5) / 2 = 0.35.
  const std::vector<std::size_t> first_two = {0, 1};
  CHECK(ess::fit_gather_sm_fraction(three, first_two) == Approx(0.35).epsilon(1e-12));
  // 1 - 1/100 = 0.99 is clamped to 0.95; a kernel faster beside the gather (1 - 2/1 = -1) to 0.
  const std::vector<ess::InterferencePoint> slow = {{1.0, 100.0}};
  CHECK(ess::fit_gather_sm_fraction(slow, {}) == 0.95);
  const std::vector<ess::InterferencePoint> fast = {{2.0, 1.0}};
  CHECK(ess::fit_gather_sm_fraction(fast, {}) == 0.0);
  const std::vector<ess::InterferencePoint> none;
  CHECK_THROWS_AS(ess::fit_gather_sm_fraction(none, {}), FitError);
  const std::vector<ess::InterferencePoint> zero = {{0.0, 1.0}};
  CHECK_THROWS_AS(ess::fit_gather_sm_fraction(zero, {}), ess::InputError);
}

TEST_CASE("fit_allreduce, fit_alltoall and fit_p2p recover alpha and beta", "[fit][collective]") {
  const ess::Hardware hw = ess::test::test_hardware();
  std::vector<ess::CollectivePoint> allreduce;
  std::vector<ess::CollectivePoint> alltoall;
  std::vector<ess::CollectivePoint> p2p;
  for (const int gpus : {2, 4, 8}) {
    for (const double bytes : {1e3, 1e6, 64e6}) {
      allreduce.push_back({gpus, bytes, ess::allreduce_time(gpus, ess::Bytes(bytes), hw).value()});
      alltoall.push_back({gpus, bytes, ess::alltoall_time(gpus, ess::Bytes(bytes), hw).value()});
    }
  }
  for (const double bytes : {1e3, 1e6, 64e6}) {
    p2p.push_back({2, bytes, ess::p2p_time(ess::Bytes(bytes), hw.nvlink).value()});
  }
  // Hand check: all-reduce over 4 GPUs of 1 MB = 10 us + 2 (3/4) 1e6 / 400e9 = 10 + 3.75 = 13.75 us
  CHECK(allreduce[4].seconds == Approx(13.75e-6).epsilon(1e-12));
  // all-to-all over 8 GPUs of 64 MB = 20 us + (7/8) 64e6 / 200e9 = 20 + 280 = 300 us
  CHECK(alltoall[8].seconds == Approx(300e-6).epsilon(1e-12));
  const ess::AlphaBeta ar = ess::fit_allreduce(allreduce, {});
  CHECK(ar.latency.value() == Approx(10e-6).epsilon(1e-9));
  CHECK(ar.bandwidth.value() == Approx(400e9).epsilon(1e-9));
  const ess::AlphaBeta a2a = ess::fit_alltoall(alltoall, {});
  CHECK(a2a.latency.value() == Approx(20e-6).epsilon(1e-9));
  CHECK(a2a.bandwidth.value() == Approx(200e9).epsilon(1e-9));
  const ess::AlphaBeta pp = ess::fit_p2p(p2p, {});
  CHECK(pp.latency.value() == Approx(2e-6).epsilon(1e-9));
  CHECK(pp.bandwidth.value() == Approx(400e9).epsilon(1e-9));
  // The traffic factors differ: all-reduce data read as all-to-all imply twice the bandwidth.
  const ess::AlphaBeta swapped = ess::fit_alltoall(allreduce, {});
  CHECK(swapped.bandwidth.value() == Approx(200e9).epsilon(1e-9));
}

TEST_CASE("the collective fits reject too few points, gpus < 2 and no per-byte cost", "[fit][collective][errors]") {
  const std::vector<ess::CollectivePoint> one = {{2, 1e6, 1e-5}};
  CHECK_THROWS_WITH(ess::fit_allreduce(one, {}), Contains("all-reduce: need at least 2 points, got 1"));
  const std::vector<ess::CollectivePoint> solo = {{1, 1e3, 1e-5}, {1, 1e6, 2e-5}};
  CHECK_THROWS_AS(ess::fit_alltoall(solo, {}), ess::InputError);
  // Same traffic at every point: the two columns are proportional.
  const std::vector<ess::CollectivePoint> same = {{2, 1e6, 1e-5}, {2, 1e6, 1.2e-5}, {2, 1e6, 0.9e-5}};
  CHECK_THROWS_AS(ess::fit_p2p(same, {}), FitError);
  // Times that fall with size: the per-byte term is pinned to 0.
  const std::vector<ess::CollectivePoint> falling = {{2, 1e3, 20e-6}, {2, 1e6, 10e-6}};
  CHECK_THROWS_WITH(ess::fit_p2p(falling, {}), Contains("P2P: the fit found no per-byte cost"));
}

// --- reproducibility on every CPU: physical floors and the multi-start choice ---------------------

TEST_CASE("zero_below writes a value under its physical floor as exactly 0 and keeps the rest", "[fit]") {
  // 1 ns and 1 byte (models/fit.h): a 0.5 ns overhead is noise, 2 ns is kept as it is.
  CHECK(ess::zero_below(0.5e-9, ess::kTimeFloorSeconds) == 0.0);
  CHECK(ess::zero_below(1e-31, ess::kTimeFloorSeconds) == 0.0);
  CHECK(ess::zero_below(2e-9, ess::kTimeFloorSeconds) == 2e-9);
  CHECK(ess::zero_below(1.806e-13, ess::kRampFloorBytes) == 0.0);
  CHECK(ess::zero_below(1.0, ess::kRampFloorBytes) == 1.0);
  CHECK(ess::zero_below(0.0, ess::kRampFloorFlops) == 0.0);
}

TEST_CASE("first_near_best takes the earliest cost within 1e-9 relative of the lowest", "[fit]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // 10 + 1e-9 is within 1e-9 x 10 = 1e-8 of the lowest (10): the same minimum, and it came first.
  CHECK(ess::first_near_best(std::vector<double>{12.0, 10.0 + 1e-9, 10.0}) == 1);
  // 10 + 1e-7 is not: the strictly lower start wins.
  CHECK(ess::first_near_best(std::vector<double>{12.0, 10.0 + 1e-7, 10.0}) == 2);
  // Non-finite costs (diverged starts) never win; none finite: -1.
  CHECK(ess::first_near_best(std::vector<double>{nan, inf, 3.0, 4.0}) == 2);
  CHECK(ess::first_near_best(std::vector<double>{inf, nan}) == -1);
  CHECK(ess::first_near_best(std::vector<double>{}) == -1);
}

TEST_CASE("fit_gemm writes the parameters data without them cannot see as exactly 0", "[fit][gemm]") {
  // Data generated with no overhead, no memory ramp and no compute ramp: the fit drives those
  // towards 0, where libm noise would leave them at 1e-31 s or 1e-13 B on one CPU and elsewhere on
  // another; below the physical floors they must be exactly 0.
  ess::Hardware truth = ess::test::test_hardware();
  truth.kernels.gemm = {.compute_efficiency = 0.7,
                        .compute_ramp = ess::Flops(0.0),
                        .memory_efficiency = 0.6,
                        .memory_ramp = ess::Bytes(0.0),
                        .kernel_overhead = ess::Seconds(0.0),
                        .transition = 2.0};
  const auto points = gemm_points(truth, DType::bf16);
  const ess::RooflineParams fitted = ess::fit_gemm(points, {}, ess::test::test_hardware());
  INFO("fitted: compute ramp " << fitted.compute_ramp.value() << " FLOP, memory ramp " << fitted.memory_ramp.value()
                               << " B, overhead " << fitted.kernel_overhead.value() << " s");
  CHECK(fitted.kernel_overhead.value() == 0.0);
  CHECK(fitted.memory_ramp.value() == 0.0);
  CHECK(fitted.compute_ramp.value() == 0.0);
  // The determined parameters are still recovered.
  CHECK(fitted.compute_efficiency == Approx(0.7).epsilon(0.01));
  CHECK(fitted.memory_efficiency == Approx(0.6).epsilon(0.01));
}

TEST_CASE("fit_gemm keeps an overhead and ramps above their floors", "[fit][gemm]") {
  // The floors must not eat real values: 4 us, 3 MB and 2 GFLOP are far above 1 ns, 1 B, 1 FLOP.
  ess::Hardware truth = ess::test::test_hardware();
  truth.kernels.gemm = {.compute_efficiency = 0.7,
                        .compute_ramp = ess::Flops(2e9),
                        .memory_efficiency = 0.6,
                        .memory_ramp = ess::Bytes(3e6),
                        .kernel_overhead = ess::Seconds(4e-6),
                        .transition = 2.0};
  const ess::RooflineParams fitted = ess::fit_gemm(gemm_points(truth, DType::bf16), {}, ess::test::test_hardware());
  CHECK(fitted.kernel_overhead.value() > 1e-7);
  CHECK(fitted.memory_ramp.value() + fitted.compute_ramp.value() > 1e3);
}

TEST_CASE("the alpha-beta fits write a latency under 1 ns as 0", "[fit][collective]") {
  // P2P points of exactly bytes / 400 GB/s with no latency: the fit's latency is 0, not a rounding
  // residue.
  std::vector<ess::CollectivePoint> points;
  for (const double bytes : {4096.0, 65536.0, 1048576.0, 16777216.0}) points.push_back({2, bytes, bytes / 400e9});
  const ess::AlphaBeta ab = ess::fit_p2p(points, {});
  CHECK(ab.latency.value() == 0.0);
  CHECK(ab.bandwidth.value() == Approx(400e9).epsilon(1e-9));
}

TEST_CASE("the alpha-beta fits refuse a per-byte cost too small for a finite bandwidth", "[fit][collective][errors]") {
  // 1e308 bytes in 1 ms: seconds per byte ~1e-311 (a denormal), whose inverse overflows to infinity.
  // A profile with an infinite bandwidth must never be written: FitError instead.
  const std::vector<ess::CollectivePoint> points = {{2, 1e308, 1e-3}, {2, 0.5e308, 0.6e-3}, {2, 0.25e308, 0.55e-3}};
  CHECK_THROWS_AS(ess::fit_p2p(points, {}), FitError);
}

// --- DeepSeek kernel classes ------------------------------------------------------------------

TEST_CASE("expert all-to-all: the engine's port formula, derived by hand", "[fit][collective]") {
  ess::Hardware hw = ess::test::test_hardware();  // NVLink 400 GB/s x 0.5, NIC 50 GB/s x 1, 20 us, NIC +5 us
  // EP 8 on 8-GPU nodes: 7/8 of 8 MB over the NVLink port: 20 us + 7 MB / 200 GB/s = 55 us.
  CHECK(ess::expert_alltoall_time({8, 8, 8e6, 1.0}, hw).value() == Approx(55e-6).epsilon(1e-12));
  // EP 32: 7/32 of 8 MB over NVLink (20 + 8.75 us), 24/32 over the NIC (25 + 120 us): the NIC's 145 us.
  CHECK(ess::expert_alltoall_time({32, 8, 8e6, 1.0}, hw).value() == Approx(145e-6).epsilon(1e-12));
  // EP 4 inside a node of 8: 3/4 over NVLink.
  CHECK(ess::expert_alltoall_time({4, 8, 8e6, 1.0}, hw).value() == Approx(50e-6).epsilon(1e-12));
  CHECK_THROWS_AS(ess::expert_alltoall_time({12, 8, 8e6, 1.0}, hw), ess::InputError);
  CHECK_THROWS_AS(ess::expert_alltoall_time({1, 8, 8e6, 1.0}, hw), ess::InputError);
}

TEST_CASE("expert all-to-all fit recovers the efficiencies and latency that generated the points", "[fit][collective]") {
  ess::Hardware truth = ess::test::test_hardware();
  truth.collectives.alltoall_nvlink_efficiency = 0.73;
  truth.collectives.alltoall_network_efficiency = 0.89;
  truth.collectives.alltoall_latency = ess::Seconds(29e-6);
  std::vector<ess::ExpertAlltoallPoint> points;
  for (const int ep : {8, 16, 32, 64, 128, 256}) {
    for (const double bytes : {128.0 * 8 * 7408, 128.0 * 8 * 14336}) {
      ess::ExpertAlltoallPoint p{ep, 8, bytes, 0.0};
      p.seconds = ess::expert_alltoall_time(p, truth).value();
      points.push_back(p);
    }
  }
  ess::Hardware start = ess::test::test_hardware();  // 0.5, 1.0, 20 us
  const ess::AlltoallFit f = ess::fit_expert_alltoall(points, {}, start);
  CHECK(f.nvlink_efficiency == Approx(0.73).epsilon(1e-4));
  CHECK(f.network_efficiency == Approx(0.89).epsilon(1e-4));
  CHECK(f.latency.value() == Approx(29e-6).epsilon(1e-4));
  // Only points inside one node: the network efficiency is not determined and stays start's.
  const std::vector<std::size_t> one_node = {0, 1};
  std::vector<ess::ExpertAlltoallPoint> intra = {points[0], points[1], {4, 8, 1e6, 0.0}};
  intra[2].seconds = ess::expert_alltoall_time(intra[2], truth).value();
  const ess::AlltoallFit g = ess::fit_expert_alltoall(intra, {}, start);
  CHECK(g.network_efficiency == start.collectives.alltoall_network_efficiency);
  CHECK(g.nvlink_efficiency == Approx(0.73).epsilon(1e-4));
  CHECK_THROWS_AS(ess::fit_expert_alltoall(points, one_node, start), FitError);  // 2 points, 3 parameters
}

TEST_CASE("sparse attention fit: efficiency and overhead from two compute-bound points", "[fit][attention]") {
  ess::Hardware hw = ess::test::test_hardware();  // bf16 peak 100 TFLOP/s
  const ess::MlaShape shape{.requests = 128, .queries_per_request = 2, .heads = 128, .qk_dim = 576, .v_dim = 512,
                            .entry_bytes = ess::Bytes(656.0)};
  // Truth: 40% of the peak plus 30 us. FLOP = 2 x 256 x 128 x topk x 1088.
  const auto seconds = [](double topk) { return 30e-6 + 2.0 * 256 * 128 * topk * 1088 / (0.4 * 100e12); };
  const std::vector<ess::SparseMlaPoint> points = {{shape, 2048, seconds(2048)}, {shape, 32768, seconds(32768)}};
  const ess::RooflineParams p = ess::fit_sparse_attention(points, {}, hw);
  CHECK(p.compute_efficiency == Approx(0.4).epsilon(1e-9));
  CHECK(p.kernel_overhead.value() == Approx(30e-6).epsilon(1e-6));
  // One point: the overhead stays the base's (the test hardware's 3 us), the efficiency takes the rest.
  const std::vector<std::size_t> first = {0};
  const ess::RooflineParams q = ess::fit_sparse_attention(points, first, hw);
  CHECK(q.kernel_overhead.value() == hw.kernels.sparse_attention.kernel_overhead.value());
  CHECK(q.compute_efficiency == Approx(2.0 * 256 * 128 * 2048 * 1088 / 100e12 / (seconds(2048) - 3e-6)).epsilon(1e-9));
  // Faster than the peak: not a kernel of this GPU.
  const std::vector<ess::SparseMlaPoint> too_fast = {{shape, 2048, 1e-6}, {shape, 32768, 2e-6}};
  CHECK_THROWS_AS(ess::fit_sparse_attention(too_fast, {}, hw), FitError);
}

TEST_CASE("dense attention fit: each point bound by one roof, both efficiencies and the overhead", "[fit][attention]") {
  // A Hopper-like ridge: bf16 400 TFLOP/s over HBM 1 TB/s; attention starts at 0.4, 0.8, 3 us.
  ess::Hardware hw = ess::test::test_hardware();
  hw.gpu.peak_compute.bf16 = ess::FlopsPerSecond(400e12);
  // Truth: 70% of the BF16 peak, 85% of HBM, 5 us; FlashMLA shapes (BF16 cache, 64-row tiles).
  ess::Hardware truth = hw;
  truth.kernels.attention.compute_efficiency = 0.7;
  truth.kernels.attention.memory_efficiency = 0.85;
  truth.kernels.attention.kernel_overhead = ess::Seconds(5e-6);
  const auto shape = [](std::int64_t sq, std::int64_t heads) {
    ess::MlaShape s{128, sq, heads, 576, 512, ess::Bytes(1152.0)};
    s.row_tile = 64;
    return s;
  };
  std::vector<ess::DenseMlaPoint> points;
  for (const auto& [sq, heads, context] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {1, 16, 4096}, {1, 16, 8192}, {2, 128, 4096}, {4, 128, 4096}, {8, 64, 8192}}) {
    const ess::MlaShape s = shape(sq, heads);
    points.push_back({s, context, ess::dense_mla_attention(s, context, truth).time.value()});
  }
  // At this ridge (329 FLOP/B at the true efficiencies) h_q 16 at s_q 1 (64 padded rows, 121 FLOP/B)
  // is memory-bound, h_q 128 at s_q >= 2 (483 FLOP/B and up) compute-bound.
  CHECK(ess::dense_mla_attention(points[0].shape, 4096, truth).bound == ess::Bound::memory);
  CHECK(ess::dense_mla_attention(points[3].shape, 4096, truth).bound == ess::Bound::compute);
  const ess::RooflineParams p = ess::fit_dense_attention(points, {}, hw);
  CHECK(p.compute_efficiency == Approx(0.7).epsilon(1e-9));
  CHECK(p.memory_efficiency == Approx(0.85).epsilon(1e-9));
  CHECK(p.kernel_overhead.value() == Approx(5e-6).epsilon(1e-6));
  // Compute-bound points only: the memory efficiency stays the base's.
  const std::vector<std::size_t> compute_only = {2, 3, 4};
  const ess::RooflineParams c = ess::fit_dense_attention(points, compute_only, hw);
  CHECK(c.compute_efficiency == Approx(0.7).epsilon(1e-9));
  CHECK(c.memory_efficiency == hw.kernels.attention.memory_efficiency);
  // Faster than the roofs: an error, not an efficiency above 1.
  std::vector<ess::DenseMlaPoint> too_fast = points;
  for (auto& pt : too_fast) pt.seconds *= 0.3;
  CHECK_THROWS_AS(ess::fit_dense_attention(too_fast, {}, hw), FitError);
  CHECK_THROWS_AS(ess::fit_dense_attention({}, {}, hw), FitError);
}

TEST_CASE("dense attention from published rates: rate over the datasheet roof", "[fit][attention]") {
  ess::Hardware hw = ess::test::test_hardware();  // bf16 100 TFLOP/s, HBM 1 TB/s
  const std::vector<ess::KernelRatePoint> rates = {{false, 900e9}, {true, 60e12}};
  const ess::RooflineParams p = ess::attention_from_rates(rates, {}, hw);
  CHECK(p.memory_efficiency == Approx(0.9).epsilon(1e-12));
  CHECK(p.compute_efficiency == Approx(0.6).epsilon(1e-12));
  CHECK(p.kernel_overhead.value() == hw.kernels.attention.kernel_overhead.value());  // untouched
  const std::vector<ess::KernelRatePoint> over = {{true, 120e12}};
  CHECK_THROWS_WITH(ess::attention_from_rates(over, {}, hw), Contains("over 100%"));
}

TEST_CASE("grouped GEMM fit needs 6 points and fits through the padded grouped model", "[fit][gemm]") {
  const ess::Hardware hw = ess::test::test_hardware();
  std::vector<ess::GroupedGemmPoint> points;
  for (const std::int64_t groups : {1, 2, 4, 8}) {
    for (const std::int64_t rows : {8, 64, 512, 4096}) {
      const ess::GroupedGemmShape s{groups, groups * rows, 4096, 7168, ess::DType::fp8};
      points.push_back({s, ess::grouped_gemm(s, hw).time.value()});
    }
  }
  const ess::RooflineParams p = ess::fit_grouped_gemm(points, {}, hw);
  // Points generated by the model itself are fitted to within a small fraction.
  for (const auto& pt : points) {
    ess::Hardware fitted = hw;
    fitted.kernels.grouped_gemm = p;
    CHECK(ess::grouped_gemm(pt.shape, fitted).time.value() == Approx(pt.seconds).epsilon(0.02));
  }
  const std::vector<std::size_t> five = {0, 1, 2, 3, 4};
  CHECK_THROWS_WITH(ess::fit_grouped_gemm(points, five, hw), Contains("need at least 6 grouped GEMM points, got 5"));
}

TEST_CASE("prefill attention fit: recovers the efficiency and the keys per row that made the points", "[fit][attention]") {
  ess::Hardware hw = ess::test::test_hardware();
  hw.kernels.prefill_attention = hw.kernels.attention;
  ess::Hardware truth = hw;
  truth.kernels.prefill_attention.compute_efficiency = 0.65;
  truth.kernels.prefill_attention_row_keys = 280.0;
  std::vector<ess::PrefillAttentionPoint> points;
  for (const std::int64_t seqlen : {512, 1024, 4096, 16384}) {
    const std::int64_t batch = 16384 / seqlen;
    const double s = static_cast<double>(seqlen);
    const ess::PrefillAttentionShape shape{batch * seqlen, static_cast<double>(batch) * s * (s + 1.0) / 2.0,
                                           batch * seqlen, 16, 16, 128, 128, ess::DType::bf16};
    points.push_back({shape, ess::prefill_attention(shape, truth).time.value()});
  }
  double row_keys = -1.0;
  const ess::RooflineParams p = ess::fit_prefill_attention(points, {}, hw, row_keys);
  CHECK(p.compute_efficiency == Approx(0.65).epsilon(1e-9));
  CHECK(row_keys == Approx(280.0).epsilon(1e-9));
  CHECK(p.kernel_overhead.value() == hw.kernels.prefill_attention.kernel_overhead.value());
  // One point: the efficiency alone, with the base's keys per row.
  hw.kernels.prefill_attention_row_keys = 280.0;
  const std::vector<std::size_t> one = {2};
  row_keys = -1.0;
  const ess::RooflineParams q = ess::fit_prefill_attention(points, one, hw, row_keys);
  CHECK(q.compute_efficiency == Approx(0.65).epsilon(1e-9));
  CHECK(row_keys == 280.0);
  // Faster than the peak: an error, not an efficiency above 1.
  std::vector<ess::PrefillAttentionPoint> too_fast = points;
  for (auto& pt : too_fast) pt.seconds *= 0.2;
  CHECK_THROWS_AS(ess::fit_prefill_attention(too_fast, {}, hw, row_keys), FitError);
  CHECK_THROWS_AS(ess::fit_prefill_attention({}, {}, hw, row_keys), FitError);
}
