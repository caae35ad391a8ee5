#include "sim/serving/trace_formats.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sim/base/error.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/serving_config.h"

namespace ess {

namespace {

constexpr double kMaxTraceTokens = 2147483648.0;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const auto comma = line.find(',');
    out.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return out;
}

// The text's lines, numbered from 1, without their line ends; blank lines and '#' comments skipped.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    const std::string_view line = trim(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    f(line_no, line);
  }
}

// Collects the rows of a trace with the checks every format shares.
class TraceRows {
 public:
  TraceRows(const std::string& origin, double duration) : origin_(origin), duration_(duration) {}

  [[noreturn]] void fail(std::size_t line, const std::string& message) const {
    throw ConfigError(origin_, "", "line " + std::to_string(line) + ": " + message);
  }
  // `arrival` in seconds, as the file states it (`shown`, for messages).
  void add(std::size_t line, double arrival, const std::string& shown, std::int64_t prompt, std::int64_t output) {
    if (!std::isfinite(arrival) || arrival < 0.0) fail(line, "the arrival time must be >= 0, got " + shown);
    if (arrival < last_) {
      fail(line, "arrival times must not decrease: " + shown + " comes after " + last_shown_ + " (sort the trace by time)");
    }
    last_ = arrival;
    last_shown_ = shown;
    if (arrival >= duration_) return;
    Request r;
    r.id = static_cast<std::int64_t>(out_.size());
    r.arrival = arrival;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    out_.push_back(r);
  }
  std::vector<Request> take() { return std::move(out_); }

 private:
  const std::string& origin_;
  double duration_;
  double last_ = 0.0;
  std::string last_shown_ = "0";
  std::vector<Request> out_;
};

// A token count cell: an integer in [1, 2^31].
std::int64_t tokens(const TraceRows& rows, std::size_t line, std::string_view name, std::string_view cell) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || p != cell.data() + cell.size() || v < 1 || static_cast<double>(v) > kMaxTraceTokens) {
    rows.fail(line, std::string(name) + " must be an integer in [1, 2147483648], got \"" + std::string(cell) + "\"");
  }
  return v;
}

double number(const TraceRows& rows, std::size_t line, std::string_view name, std::string_view cell) {
  double v = 0.0;
  const auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (ec != std::errc() || p != cell.data() + cell.size()) {
    rows.fail(line, std::string(name) + " must be a number, got \"" + std::string(cell) + "\"");
  }
  return v;
}

// A CSV trace whose header is exactly `header`; `row` turns the cells of a line into a request.
template <typename Row>
std::vector<Request> csv(std::string_view text, const std::string& origin, double duration,
                         const std::vector<std::string_view>& header, Row&& row) {
  TraceRows rows(origin, duration);
  std::string expected;
  for (const auto h : header) expected += (expected.empty() ? "" : ",") + std::string(h);
  bool seen_header = false;
  for_each_line(text, [&](std::size_t line, std::string_view l) {
    const auto cells = split(l);
    if (!seen_header) {
      if (cells != header) rows.fail(line, "expected the header \"" + expected + "\", got \"" + std::string(l) + "\"");
      seen_header = true;
      return;
    }
    if (cells.size() != header.size()) {
      rows.fail(line, "expected " + std::to_string(header.size()) + " comma-separated values (" + expected + "), got " +
                          std::to_string(cells.size()));
    }
    row(rows, line, cells);
  });
  if (!seen_header) throw ConfigError(origin, "", "empty trace: expected the header \"" + expected + "\"");
  return rows.take();
}

std::vector<Request> parse_ess_csv(std::string_view text, const std::string& origin, double duration) {
  return csv(text, origin, duration, {"arrival_s", "prompt_tokens", "output_tokens"},
             [](TraceRows& rows, std::size_t line, const std::vector<std::string_view>& c) {
               const double t = number(rows, line, "arrival_s", c[0]);
               rows.add(line, t, std::string(c[0]) + " s", tokens(rows, line, "prompt_tokens", c[1]),
                        tokens(rows, line, "output_tokens", c[2]));
             });
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// "2023-11-16 18:15:46.6805900" -> seconds since 1970 (UTC, as the traces state none).
bool parse_datetime(std::string_view s, double& out) {
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') {
    return false;
  }
  const auto field = [&](std::size_t at, std::size_t len, int& v) {
    const auto [p, ec] = std::from_chars(s.data() + at, s.data() + at + len, v);
    return ec == std::errc() && p == s.data() + at + len;
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!field(0, 4, y) || !field(5, 2, mo) || !field(8, 2, d) || !field(11, 2, h) || !field(14, 2, mi) || !field(17, 2, sec)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  double frac = 0.0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return false;
    for (std::size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
    }
    // At most 15 fraction digits (the ones after that are below a double's precision here):
    // std::stod of a long run of zeros and a digit would underflow and throw std::out_of_range.
    frac = std::stod("0" + std::string(s.substr(19, 16)));
  }
  out = static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
        h * 3600.0 + mi * 60.0 + sec + frac;
  return true;
}

std::vector<Request> parse_azure_csv(std::string_view text, const std::string& origin, double duration) {
  bool first = true;
  double t0 = 0.0;
  double previous = 0.0;
  std::string previous_text;
  return csv(text, origin, duration, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
             [&](TraceRows& rows, std::size_t line, const std::vector<std::string_view>& c) {
               double t = 0.0;
               if (!parse_datetime(c[0], t)) {
                 rows.fail(line, "TIMESTAMP must be a date and time \"YYYY-MM-DD HH:MM:SS[.fraction]\", got \"" +
                                     std::string(c[0]) + "\"");
               }
               if (first) t0 = t;
               if (!first && t < previous) {
                 rows.fail(line, "arrival times must not decrease: " + std::string(c[0]) + " comes after " + previous_text +
                                     " (sort the trace by time)");
               }
               first = false;
               previous = t;
               previous_text = std::string(c[0]);
               // Relative to the first request.
               rows.add(line, t - t0, std::string(c[0]),
                        tokens(rows, line, "ContextTokens", c[1]), tokens(rows, line, "GeneratedTokens", c[2]));
             });
}

std::vector<Request> parse_mooncake_jsonl(std::string_view text, const std::string& origin, double duration) {
  TraceRows rows(origin, duration);
  const std::vector<std::string> known = {"timestamp", "input_length", "output_length", "hash_ids"};
  bool any = false;
  for_each_line(text, [&](std::size_t line, std::string_view l) {
    any = true;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(l);
    } catch (const nlohmann::json::out_of_range& e) {
      // A number beyond a double ("input_length": 1e400): bad input, not an internal error.
      rows.fail(line, std::string("a number out of range: ") + e.what());
    } catch (const nlohmann::json::exception& e) {
      rows.fail(line, std::string("not a JSON object: ") + e.what());
    }
    if (!j.is_object()) rows.fail(line, "expected a JSON object, got " + j.dump().substr(0, 40));
    for (const auto& [key, value] : j.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        rows.fail(line, "unknown key \"" + key + "\"" + did_you_mean(key, known) +
                            " (a Mooncake trace line has timestamp, input_length, output_length, hash_ids)");
      }
    }
    const auto integer = [&](const char* key) -> std::int64_t {
      if (!j.contains(key)) rows.fail(line, std::string("missing \"") + key + "\"");
      const auto& v = j[key];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || static_cast<double>(v.get<std::int64_t>()) > kMaxTraceTokens) {
        rows.fail(line, std::string(key) + " must be an integer in [1, 2147483648], got " + v.dump().substr(0, 40));
      }
      return v.get<std::int64_t>();
    };
    if (!j.contains("timestamp")) rows.fail(line, "missing \"timestamp\" (milliseconds since the first request)");
    if (!j["timestamp"].is_number()) rows.fail(line, "timestamp must be a number of milliseconds, got " + j["timestamp"].dump().substr(0, 40));
    if (j.contains("hash_ids") && !j["hash_ids"].is_array()) rows.fail(line, "hash_ids must be an array of block hashes");
    const double ms = j["timestamp"].get<double>();
    rows.add(line, ms * 1e-3, j["timestamp"].dump() + " ms", integer("input_length"), integer("output_length"));
  });
  if (!any) throw ConfigError(origin, "", "empty trace: expected one JSON object per line");
  return rows.take();
}

}  // namespace

const std::vector<TraceFormat>& trace_formats() {
  // A parser for each of the loader's formats, by its index there: the names are written once
  // (kTraceFormats), and a format without a parser, or a parser without a format, does not compile.
  static constexpr TraceFormat::Parse kParsers[] = {&parse_ess_csv, &parse_mooncake_jsonl, &parse_azure_csv};
  static_assert(std::size(kParsers) == std::size(kTraceFormats), "a parser for each of kTraceFormats, in its order");
  static const std::vector<TraceFormat> formats = [] {
    std::vector<TraceFormat> f;
    for (std::size_t i = 0; i < std::size(kParsers); ++i) f.push_back({kTraceFormats[i].name, kParsers[i]});
    return f;
  }();
  return formats;
}

std::vector<Request> parse_trace(std::string_view format, std::string_view text, const std::string& origin, double duration) {
  // A UTF-8 byte-order mark (spreadsheet exports write one) is not part of the first header cell.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  for (const auto& f : trace_formats()) {
    if (f.name == format) return f.parse(text, origin, duration);
  }
  throw InternalError("parse_trace: unknown trace format \"" + std::string(format) + "\"");
}

}  // namespace ess
