// CSV tables of measurements (RFC 4180) and the bounds every reader checks cells against: shared
// by the measurement readers (measurements.cpp) and the fits that read their own tables
// (routing_fit.cpp).
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/measurements.h"
#include "sim/config/did_you_mean.h"

namespace ess::measurement {

// --- Physical bounds of what a measurement may report --------------------------------------------
//
// Each bound is far outside any real microbenchmark, so no real measurement is refused, but a
// corrupted cell, a unit error or an integer that overflowed in the tool that wrote it is. They
// also keep every product the readers and models form (rows x row_bytes, 2 m n k FLOP) far from
// the int64 and double limits.

// A measured time: at least one GPU clock cycle (0.5-1 ns at 1-2 GHz; CUDA events resolve about
// 0.5 us, so nothing real is shorter), at most an hour (a microbenchmark repetition takes
// microseconds to seconds; an hour is a unit error, e.g. microseconds read as milliseconds).
constexpr double kMinSeconds = 1e-9;
constexpr double kMaxSeconds = 3600.0;

// An integer a measurement may hold, with what it counts (for messages).
struct IntRange {
  std::int64_t min;
  std::int64_t max;
  const char* what;
};

// "an integer from 1 to 16 (tokens)".
[[nodiscard]] std::string range_text(const IntRange& r);
// A cell or value for a message: at most 40 bytes, control and non-ASCII bytes as \xNN, so that
// binary input cannot garble the terminal or make the message megabytes long.
[[nodiscard]] std::string shown(std::string_view s);

// --- CSV (RFC 4180: quoted fields, "" inside quotes) --------------------------------------------

struct CsvRow {
  std::size_t line = 0;
  std::vector<std::string> fields;
};

// The rows of `text` (comment lines before the header skipped); `path` names it in errors.
[[nodiscard]] std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path);

// A CSV table whose header names each column once and whose rows all have the header's width.
class CsvTable {
 public:
  CsvTable(std::vector<CsvRow> rows, std::string path) : path_(std::move(path)) {
    header_line_ = rows.front().line;
    header_ = std::move(rows.front().fields);
    rows.erase(rows.begin());
    rows_ = std::move(rows);
    for (std::size_t i = 0; i < header_.size(); ++i) {
      const auto [it, fresh] = columns_.emplace(header_[i], i);
      if (!fresh) {
        throw MeasurementError(path_, "line " + std::to_string(header_line_) + ", column " + std::to_string(i + 1),
                               "duplicate column \"" + shown(header_[i]) + "\" (also column " +
                                   std::to_string(it->second + 1) + "): which one holds the data is ambiguous");
      }
    }
  }
  [[nodiscard]] bool has(const std::string& column) const { return columns_.count(column) > 0; }
  // Every column must be one the format defines (`known`): an unknown one is a misspelling, a
  // different export or a mix of two tables, never something to ignore. Then every row must have
  // the header's width. Each reader calls this before reading a cell.
  void require_known(const std::vector<std::string>& known, const std::string& format) const {
    const std::set<std::string> allowed(known.begin(), known.end());
    for (std::size_t i = 0; i < header_.size(); ++i) {
      if (allowed.count(header_[i]) == 0) {
        throw MeasurementError(path_, "line " + std::to_string(header_line_) + ", column " + std::to_string(i + 1),
                               "unknown column \"" + shown(header_[i]) + "\" for a " + format + " table" +
                                   did_you_mean(header_[i], known));
      }
    }
    for (const CsvRow& r : rows_) {
      if (r.fields.size() != header_.size()) {
        throw MeasurementError(path_, "line " + std::to_string(r.line),
                               "has " + std::to_string(r.fields.size()) + " fields, the header has " +
                                   std::to_string(header_.size()));
      }
    }
  }
  [[nodiscard]] std::size_t column(const std::string& name) const {
    const auto it = columns_.find(name);
    if (it == columns_.end()) {
      throw MeasurementError(path_, "line " + std::to_string(header_line_), "missing column \"" + name + "\"" + did_you_mean(name, header_));
    }
    return it->second;
  }
  [[nodiscard]] const std::vector<CsvRow>& rows() const { return rows_; }
  // The header's line in the file (comment lines may precede it).
  [[nodiscard]] std::size_t header_line() const { return header_line_; }
  [[nodiscard]] const std::string& text(const CsvRow& r, std::size_t col) const { return r.fields[col]; }
  // "line 3, column 57" (1-based, as an editor shows them).
  [[nodiscard]] static std::string where(const CsvRow& r, std::size_t col) {
    return "line " + std::to_string(r.line) + ", column " + std::to_string(col + 1);
  }
  [[nodiscard]] static std::string where(const CsvRow& r) { return "line " + std::to_string(r.line); }
  [[noreturn]] void fail(const CsvRow& r, std::size_t col, const std::string& message) const {
    throw MeasurementError(path_, where(r, col), "\"" + shown(header_[col]) + "\": " + message);
  }
  // A finite decimal number.
  [[nodiscard]] double number(const CsvRow& r, std::size_t col) const {
    const std::string& s = text(r, col);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
      fail(r, col, "expected a number, got \"" + shown(s) + "\"");
    }
    return v;
  }
  // An integer in `range`: decimal digits, or an integral decimal such as "4096.0" (pandas writes
  // integer columns so when another row lacks a value).
  [[nodiscard]] std::int64_t integer(const CsvRow& r, std::size_t col, const IntRange& range) const {
    const std::string& s = text(r, col);
    std::int64_t i = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec == std::errc() && end == s.data() + s.size()) {
      if (i >= range.min && i <= range.max) return i;
    } else if (ec != std::errc::result_out_of_range) {
      double v = 0.0;
      const auto [dend, dec] = std::from_chars(s.data(), s.data() + s.size(), v);
      // The bounds are below 2^53, so a double in range converts exactly.
      if (dec == std::errc() && dend == s.data() + s.size() && v == std::floor(v) &&
          v >= static_cast<double>(range.min) && v <= static_cast<double>(range.max)) {
        return static_cast<std::int64_t>(v);
      }
    }
    fail(r, col, "expected " + range_text(range) + ", got \"" + shown(s) + "\"");
  }
  // The columns among `names` that the table has (the optional ones a format defines).
  [[nodiscard]] std::vector<std::size_t> present(const std::vector<std::string>& names) const {
    std::vector<std::size_t> cols;
    for (const auto& n : names) {
      if (const auto it = columns_.find(n); it != columns_.end()) cols.push_back(it->second);
    }
    return cols;
  }
  // Cells no fit uses must still be what their column says: finite numbers >= 0 (statistics of
  // times, indices), so that a corrupted file is not half read.
  void check_non_negative(const CsvRow& r, const std::vector<std::size_t>& cols) const {
    for (const std::size_t col : cols) {
      if (!(number(r, col) >= 0.0)) fail(r, col, "expected a number >= 0, got \"" + shown(text(r, col)) + "\"");
    }
  }
  // A time in milliseconds, returned in seconds, within [kMinSeconds, kMaxSeconds].
  [[nodiscard]] double seconds_from_ms(const CsvRow& r, std::size_t col) const {
    const double s = number(r, col) * 1e-3;
    if (!(s >= kMinSeconds && s <= kMaxSeconds)) {
      fail(r, col, "expected a time > 0 between 1 ns and 1 hour (1e-06 to 3.6e+06 ms), got \"" + shown(text(r, col)) +
                       "\" ms");
    }
    return s;
  }

 private:
  std::string path_;
  std::size_t header_line_ = 1;
  std::vector<std::string> header_;
  std::vector<CsvRow> rows_;
  std::map<std::string, std::size_t> columns_;
};

}  // namespace ess::measurement
