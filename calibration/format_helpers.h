// What the measurement format readers share (format_*.cpp): the physical bounds every input is
// checked against, the --gpu filter, and the checks of the hand-typed DeepSeek transcriptions
// (a published figure against the arithmetic its header states, the newest README version of a
// shape). Each bound's reason is written beside it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "calibration/csv_table.h"
#include "calibration/measurements.h"

namespace ess::measurement {

// Tokens of one kernel (GEMM m, norm rows): 2^24 = 16.8M, 16x a one-million-token prefill.
inline constexpr IntRange kTokens{1, std::int64_t{1} << 24, "tokens"};
// Features of one layer (GEMM n and k, hidden and FFN sizes): 2^22 = 4.2M, 16x the widest layer
// of any model (a 256k-token vocabulary projection).
inline constexpr IntRange kFeatures{1, std::int64_t{1} << 22, "features"};
// Attention heads of a model: 2^16 (real models have 8 to 128).
inline constexpr IntRange kHeads{1, std::int64_t{1} << 16, "heads"};
// GPUs taking part in a collective, a tensor-parallel group or a node: 2^16, more than any job.
// A collective needs at least 2; a node or a TP group may be 1.
inline constexpr IntRange kGpus{1, std::int64_t{1} << 16, "GPUs"};
inline constexpr IntRange kCollectiveGpus{2, std::int64_t{1} << 16, "GPUs"};
inline constexpr IntRange kDeviceIndex{0, (std::int64_t{1} << 16) - 1, "device index"};
// Bytes of one copy, gather or collective buffer: 2^40 = 1 TiB, 7x an H200's HBM (141 GB) and more
// than any pinned host buffer.
inline constexpr IntRange kBytes{1, std::int64_t{1} << 40, "bytes"};
// Rows of one gather (656-byte rows: 2^32 rows would already be 2.8 TB) and calls per repetition.
inline constexpr IntRange kRows{1, std::int64_t{1} << 32, "rows"};
inline constexpr IntRange kCalls{0, std::int64_t{1} << 32, "calls"};

// a x b, or nothing when the product does not fit in an int64.
inline std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return std::nullopt;
  return p;
}

// `s` in lower case (ASCII).
std::string lower(std::string s);

// Whether a row measured on `gpu` passes the --gpu filter (a case-insensitive substring).
bool gpu_matches(const std::string& gpu, const ReadOptions& o);
// Whether a row measured on `gpu` passes the --gpu filter; a row that does not is counted as skipped.
bool keep_gpu(const std::string& gpu, const ReadOptions& o, MeasurementInput& in);
// The members of `s`, comma-separated.
std::string joined(const std::set<std::string>& s);
// The one GPU of a table's rows (by its gpu column), after the --gpu filter.
void one_gpu(const std::set<std::string>& gpus, MeasurementInput& in);

// --- DeepSeek transcriptions (calibration/data/public/deepseek/) --------------------------------
//
// Hand-typed tables of published numbers: each row is checked against the arithmetic its header
// states (a TFLOPS figure against its derived time, a GB/s figure against its bytes), so a typing
// error is an error here rather than a bad point in a fit.

// Kernels in one grouped GEMM (MoE experts on one GPU): 2^16, far above any model's experts.
inline constexpr IntRange kGroups{1, std::int64_t{1} << 16, "groups"};
// Published rates: up to 1e6 TFLOP/s and 1e6 GB/s, far above any GPU (a unit error otherwise).
inline constexpr double kMaxTflops = 1e6;
inline constexpr double kMaxGbps = 1e6;
// A derived column must agree with the figure it was derived from to within this fraction: the
// published figures have 3-4 significant digits (rounding: at most 0.5% of 100-999).
inline constexpr double kDerivedTolerance = 0.01;
// A GB/s figure of 2-3 significant digits (DeepEP prints 39-158 GB/s) rounds by up to 1.3%.
inline constexpr double kRoundedRateTolerance = 0.03;

// A number > 0 and <= max, from a cell.
double positive_number(const CsvTable& t, const CsvRow& r, std::size_t col, double max, const char* unit);
// A time derived from a rate, within [kMinSeconds, kMaxSeconds].
double checked_time(const CsvTable& t, const CsvRow& r, std::size_t col, double seconds);
// `derived` must agree with `expected` within `tolerance` (relative).
void check_agrees(const CsvTable& t, const CsvRow& r, std::size_t col, double derived, double expected,
                  double tolerance, const std::string& what);
// One of `allowed`, else an error with a "did you mean".
std::string choice(const CsvTable& t, const CsvRow& r, std::size_t col, const std::vector<std::string>& allowed);

// The README versions of a table, in file order, each in one block of rows; a version that
// reappears after another began is an error (the newest-version rule needs the order).
class VersionBlocks {
 public:
  void see(const CsvTable& t, const CsvRow& r, std::size_t col) {
    const std::string& v = t.text(r, col);
    if (v.empty()) t.fail(r, col, "expected the README commit of the row, got an empty cell");
    if (!order_.empty() && order_.back() == v) return;
    if (std::find(order_.begin(), order_.end(), v) != order_.end()) {
      t.fail(r, col, "version " + shown(v) + " reappears after " + shown(order_.back()) +
                         ": list each README version as one block of rows, oldest first");
    }
    order_.push_back(v);
  }
  [[nodiscard]] std::string text() const {
    std::string s;
    for (const auto& v : order_) s += (s.empty() ? "" : ", ") + v;
    return s;
  }

 private:
  std::vector<std::string> order_;
};

// Keeps, for each key, the row read last (the newest README version); counts the others.
template <class Key, class Row>
class Newest {
 public:
  void add(const Key& k, Row row) {
    const auto [it, fresh] = index_.emplace(k, rows_.size());
    if (fresh) {
      rows_.push_back(std::move(row));
    } else {
      rows_[it->second] = std::move(row);
      ++superseded_;
    }
  }
  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }
  [[nodiscard]] std::size_t superseded() const { return superseded_; }

 private:
  std::map<Key, std::size_t> index_;
  std::vector<Row> rows_;
  std::size_t superseded_ = 0;
};

// Appends the rows `newest` kept to `to` and counts them as used by `model`.
template <class Key, class Row>
void use_newest(const Newest<Key, Row>& newest, std::vector<Row>& to, const char* model, MeasurementInput& in) {
  for (const auto& p : newest.rows()) to.push_back(p);
  if (!newest.rows().empty()) in.used[model] = newest.rows().size();
}

inline constexpr const char* kSuperseded = "rows superseded by a later README version of the same shape (the newest is used)";

}  // namespace ess::measurement
