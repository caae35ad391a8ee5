// Fitting tools shared by every cost model's calibration (models/*_fit.h): relative-error
// summaries, relative least squares (Eigen), a Levenberg-Marquardt solver for the models that are
// not linear in their parameters, and deterministic k-fold cross-validation.
//
// Every fit minimises RELATIVE error: kernel times span five orders of magnitude (2 us to 300 ms),
// and an absolute least-squares fit would ignore every small kernel. The error we report is the
// same quantity: (predicted - measured) / measured.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "sim/base/error.h"

namespace ess {

// Thrown when the data cannot determine a model (too few points, a singular system, a parameter
// that the data drive out of its physical range). The message says which and why.
class FitError : public InputError {
 public:
  using InputError::InputError;
};

// The maps the Levenberg-Marquardt fits use to keep an efficiency in (0, 1) while its unknown
// ranges over the reals: efficiency = logistic(u), u = logit(efficiency).
[[nodiscard]] inline double logistic(double u) { return 1.0 / (1.0 + std::exp(-u)); }
[[nodiscard]] inline double logit(double e) { return std::log(e / (1.0 - e)); }

// The median (the mean of the middle two for an even count). Throws InternalError if empty.
[[nodiscard]] double median(std::vector<double> v);

// Relative errors e_i = (predicted_i - measured_i) / measured_i of one model over a set of points.
struct ErrorSummary {
  std::size_t points = 0;
  double median_abs = 0.0;  // median |e|
  double p95_abs = 0.0;     // 95th percentile of |e| (nearest rank: the ceil(0.95 n)-th smallest)
  double max_abs = 0.0;     // max |e|
  double bias = 0.0;        // median e (signed): > 0 means the model predicts too slow
};

// Summarises the relative errors. Both spans have the same size >= 1, every measured value is > 0
// and every prediction finite (throws InputError for a measured value <= 0, InternalError
// otherwise: the callers pair the spans and a non-finite prediction is a broken model).
[[nodiscard]] ErrorSummary summarize_errors(std::span<const double> predicted, std::span<const double> measured);

// Minimises sum_i ((A x)_i / y_i - 1)^2 over x >= 0 (every column of A is a non-negative physical
// term: a latency, a time per byte), by Lawson and Hanson's active-set NNLS. y_i > 0.
// Throws FitError if A has fewer rows than columns or the system is rank deficient.
[[nodiscard]] Eigen::VectorXd relative_nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& y);

// The points a fit uses: `use`, or every one of the n points when `use` is empty. Throws
// InternalError naming `what` for an index >= n.
[[nodiscard]] std::vector<std::size_t> selected_points(std::span<const std::size_t> use, std::size_t n,
                                                       const char* what);

// Physical floors of fitted values. A parameter the data do not determine (a GEMM overhead hidden
// under the roofs, a ramp too small to matter) drifts towards zero during a fit, and where it stops
// depends on the last bits of exp/log/pow, which differ between CPUs (glibc picks a variant per
// CPU). A value below its floor has no measurable effect on any prediction, so the fits write it
// as exactly 0, and a profile comes out the same on every machine.
// Times (kernel overheads, latencies, call overheads): 1 ns, about one GPU clock cycle (1-2 GHz)
// and 500x below the resolution of the CUDA events that measured them (~0.5 us).
inline constexpr double kTimeFloorSeconds = 1e-9;
// Roofline ramps: 1 byte of memory traffic, 1 FLOP of work (no kernel does less).
inline constexpr double kRampFloorBytes = 1.0;
inline constexpr double kRampFloorFlops = 1.0;

// `value` if it is at least `floor`, else exactly 0 (for non-negative fitted values).
[[nodiscard]] inline double zero_below(double value, double floor) { return value >= floor ? value : 0.0; }

// Choosing among the minima of a multi-start fit: the first start whose cost is within this
// relative distance of the lowest wins. Starts that reach the same minimum end with costs that
// differ in their last digits (the stopping rule, CPU-specific libm results), and taking the
// strictly lowest would let those digits pick a different start on another machine; minima that
// differ by less than 1e-9 of the cost predict the same times to far better than the measurements'
// 1-5% spread.
inline constexpr double kSameMinimumRelative = 1e-9;

// Index of the first cost within kSameMinimumRelative of the lowest finite cost, or -1 when no
// cost is finite.
[[nodiscard]] int first_near_best(std::span<const double> costs);

struct LmResult {
  Eigen::VectorXd x;  // parameters at the minimum found
  double cost = 0.0;  // 0.5 sum r_i^2 there
  int iterations = 0;
};

// Levenberg-Marquardt on a residual function r(x) (forward-difference Jacobian). Deterministic:
// the same start gives the same result. Stops when the relative cost decrease of an accepted step
// falls under 1e-12, when the damping exceeds 1e12, or after `max_iterations`.
[[nodiscard]] LmResult levenberg_marquardt(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& residuals,
                                           Eigen::VectorXd x0, int max_iterations = 200);

// Fold of each of n points, 0..folds-1: a seeded shuffle (xoshiro-free splitmix64, so that models/
// needs no other library) dealt round-robin, so fold sizes differ by at most one.
// Throws InternalError unless 2 <= folds <= n (callers bound folds by the points).
[[nodiscard]] std::vector<int> kfold_assignment(std::size_t n, int folds, std::uint64_t seed);

// The same with whole groups held out together (e.g. every m of one GEMM weight shape), so that
// the error is that of a group the fit has never seen. groups[i] is point i's group id; the number
// of distinct groups must be >= folds.
[[nodiscard]] std::vector<int> grouped_kfold_assignment(std::span<const std::size_t> groups, int folds,
                                                        std::uint64_t seed);

// A model's fit and its k-fold cross-validated error: for each fold, fit on the other folds and
// predict the held-out points; the summary is over every point's held-out prediction, so it is
// the error to expect on shapes the fit has not seen.
struct CrossValidated {
  ErrorSummary fit;              // residuals of the fit on all points
  ErrorSummary cross_validated;  // held-out predictions, every point once
  int folds = 0;
};

// fit(train indices) -> an opaque fitted model; predict(model, i) -> predicted seconds of point i.
// `measured` holds every point's measured seconds.
// `groups`: empty for plain k-fold, else one group id per point (grouped_kfold_assignment).
template <class Model>
CrossValidated cross_validate(std::span<const double> measured, int folds, std::uint64_t seed,
                              const std::function<Model(std::span<const std::size_t>)>& fit,
                              const std::function<double(const Model&, std::size_t)>& predict,
                              std::span<const std::size_t> groups = {}) {
  const std::size_t n = measured.size();
  CrossValidated out;
  out.folds = folds;
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  const Model full = fit(all);
  std::vector<double> predicted(n);
  for (std::size_t i = 0; i < n; ++i) predicted[i] = predict(full, i);
  out.fit = summarize_errors(predicted, measured);

  const std::vector<int> fold = groups.empty() ? kfold_assignment(n, folds, seed)
                                               : grouped_kfold_assignment(groups, folds, seed);
  std::vector<double> held_out(n);
  for (int f = 0; f < folds; ++f) {
    std::vector<std::size_t> train;
    for (std::size_t i = 0; i < n; ++i) {
      if (fold[i] != f) train.push_back(i);
    }
    const Model m = fit(train);
    for (std::size_t i = 0; i < n; ++i) {
      if (fold[i] == f) held_out[i] = predict(m, i);
    }
  }
  out.cross_validated = summarize_errors(held_out, measured);
  return out;
}

}  // namespace ess
