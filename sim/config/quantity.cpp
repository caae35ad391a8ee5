#include "sim/config/quantity.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "sim/config/did_you_mean.h"

namespace ess {

namespace {

// One unit: value in base units = number x 10^decimal_exponent x 2^binary_exponent. The power of
// ten is applied to the decimal text before it is converted, so "4.1GB" is the double nearest to
// 4.1e9 (one rounding, not two), and every spelling of a value rounds the same way.
// Rates per minute and per hour (not powers of ten) carry a multiplier applied after the exponents.
struct Unit {
  std::string_view name;
  int decimal_exponent = 0;
  int binary_exponent = 0;
  double multiplier = 1.0;
  [[nodiscard]] double factor() const { return std::ldexp(std::pow(10.0, decimal_exponent), binary_exponent) * multiplier; }
};

constexpr double kSecondsPerMinute = 60.0;
constexpr double kSecondsPerHour = 3600.0;

constexpr int kBitsPerByteLog2 = 3;  // 8 bits per byte: bit units divide by 2^3

constexpr std::array kByteUnits = {
    Unit{"B", 0},        Unit{"kB", 3},       Unit{"KB", 3},       Unit{"MB", 6},       Unit{"GB", 9},
    Unit{"TB", 12},      Unit{"PB", 15},      Unit{"KiB", 0, 10},  Unit{"MiB", 0, 20},  Unit{"GiB", 0, 30},
    Unit{"TiB", 0, 40},  Unit{"PiB", 0, 50},
};

// Micro may be written "us", with the micro sign U+00B5 or with the Greek mu U+03BC.
constexpr std::array kTimeUnits = {
    Unit{"s", 0}, Unit{"ms", -3}, Unit{"us", -6}, Unit{"\xC2\xB5s", -6}, Unit{"\xCE\xBCs", -6}, Unit{"ns", -9},
};

// Events per unit of time: requests per second ("2/s"), per minute, per hour.
constexpr std::array kRateUnits = {
    Unit{"/s", 0}, Unit{"/min", 0, 0, 1.0 / kSecondsPerMinute}, Unit{"/h", 0, 0, 1.0 / kSecondsPerHour},
};

constexpr std::array kPowerUnits = {Unit{"W", 0}, Unit{"kW", 3}, Unit{"mW", -3}};

constexpr std::array kBandwidthUnits = {
    Unit{"B/s", 0},          Unit{"kB/s", 3},         Unit{"KB/s", 3},          Unit{"MB/s", 6},
    Unit{"GB/s", 9},         Unit{"TB/s", 12},        Unit{"PB/s", 15},         Unit{"KiB/s", 0, 10},
    Unit{"MiB/s", 0, 20},    Unit{"GiB/s", 0, 30},    Unit{"TiB/s", 0, 40},     Unit{"bit/s", 0, -kBitsPerByteLog2},
    Unit{"kbit/s", 3, -kBitsPerByteLog2},             Unit{"Mbit/s", 6, -kBitsPerByteLog2},
    Unit{"Gbit/s", 9, -kBitsPerByteLog2},             Unit{"Tbit/s", 12, -kBitsPerByteLog2},
};

constexpr std::array kComputeUnits = {
    Unit{"FLOP/s", 0}, Unit{"GFLOP/s", 9}, Unit{"TFLOP/s", 12}, Unit{"PFLOP/s", 15},
    Unit{"FLOPS", 0},  Unit{"GFLOPS", 9},  Unit{"TFLOPS", 12},  Unit{"PFLOPS", 15},
};

std::span<const Unit> units_of(Dimension d) {
  switch (d) {
    case Dimension::bytes: return kByteUnits;
    case Dimension::seconds: return kTimeUnits;
    case Dimension::bytes_per_second: return kBandwidthUnits;
    case Dimension::flops_per_second: return kComputeUnits;
    case Dimension::per_second: return kRateUnits;
    case Dimension::watts: return kPowerUnits;
  }
  return {};
}

// Units tried when formatting, in order of preference on ties; every one is also parsed.
std::span<const Unit> format_units(Dimension d) {
  static constexpr std::array bytes = {Unit{"B", 0},       Unit{"kB", 3},       Unit{"MB", 6},
                                       Unit{"GB", 9},      Unit{"TB", 12},      Unit{"PB", 15},
                                       Unit{"KiB", 0, 10}, Unit{"MiB", 0, 20}, Unit{"GiB", 0, 30},
                                       Unit{"TiB", 0, 40}};
  static constexpr std::array time = {Unit{"s", 0}, Unit{"ms", -3}, Unit{"us", -6}, Unit{"ns", -9}};
  static constexpr std::array bandwidth = {Unit{"B/s", 0},       Unit{"kB/s", 3},       Unit{"MB/s", 6},
                                           Unit{"GB/s", 9},      Unit{"TB/s", 12},      Unit{"KiB/s", 0, 10},
                                           Unit{"MiB/s", 0, 20}, Unit{"GiB/s", 0, 30}, Unit{"TiB/s", 0, 40}};
  static constexpr std::array compute = {Unit{"FLOP/s", 0}, Unit{"GFLOP/s", 9}, Unit{"TFLOP/s", 12},
                                         Unit{"PFLOP/s", 15}};
  static constexpr std::array rate = {Unit{"/s", 0}};
  static constexpr std::array power = {Unit{"W", 0}, Unit{"kW", 3}};
  switch (d) {
    case Dimension::bytes: return bytes;
    case Dimension::seconds: return time;
    case Dimension::bytes_per_second: return bandwidth;
    case Dimension::flops_per_second: return compute;
    case Dimension::per_second: return rate;
    case Dimension::watts: return power;
  }
  return {};
}

// number_text (a valid decimal, e.g. "4.1", "-2e3") x 10^decimal_exponent x 2^binary_exponent,
// rounded once; nullopt when out of the double range.
std::optional<double> scale(std::string_view number_text, const Unit& u) {
  std::string mantissa(number_text);
  long long exponent = 0;
  if (const auto e = mantissa.find_first_of("eE"); e != std::string::npos) {
    const char* first = mantissa.data() + e + 1;
    const char* last = mantissa.data() + mantissa.size();
    if (first != last && *first == '+') ++first;
    const auto [end, ec] = std::from_chars(first, last, exponent);
    if (ec != std::errc() || end != last) return std::nullopt;
    mantissa.resize(e);
  }
  const std::string scaled = mantissa + "e" + std::to_string(exponent + u.decimal_exponent);
  double v = 0.0;
  const auto [end, ec] = std::from_chars(scaled.data(), scaled.data() + scaled.size(), v);
  if (ec != std::errc() || end != scaled.data() + scaled.size()) return std::nullopt;
  v = std::ldexp(v, u.binary_exponent) * u.multiplier;
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// The fewest significant digits (1..17) of `x` that, written with `unit`, parse back to exactly
// `target`; plain notation preferred over exponents; empty when none does.
std::string round_trip_digits(double x, const Unit& unit, double target, Dimension d) {
  std::string with_exponent;
  for (int precision = 1; precision <= 17; ++precision) {
    std::array<char, 64> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::general, precision);
    if (ec != std::errc()) return {};
    std::string text(buf.data(), end);
    text += unit.name;
    const auto back = parse_quantity(text, d);
    if (!back.value || *back.value != target) continue;
    if (text.find('e') == std::string::npos) return text;
    if (with_exponent.empty()) with_exponent = text;
  }
  return with_exponent;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::string_view describe(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "a size";
    case Dimension::seconds: return "a duration";
    case Dimension::bytes_per_second: return "a bandwidth";
    case Dimension::flops_per_second: return "a compute rate";
    case Dimension::per_second: return "a rate";
    case Dimension::watts: return "a power";
  }
  return "a quantity";
}

std::string_view example(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "141GB";
    case Dimension::seconds: return "1.5us";
    case Dimension::bytes_per_second: return "55GB/s";
    case Dimension::flops_per_second: return "989TFLOP/s";
    case Dimension::per_second: return "2/s";
    case Dimension::watts: return "700W";
  }
  return "";
}

const std::vector<std::string>& unit_names(Dimension d) {
  static const auto build = [](Dimension dim) {
    std::vector<std::string> names;
    for (const auto& u : units_of(dim)) names.emplace_back(u.name);
    return names;
  };
  static const std::array<std::vector<std::string>, 6> all = {
      build(Dimension::bytes),      build(Dimension::seconds),    build(Dimension::bytes_per_second),
      build(Dimension::flops_per_second), build(Dimension::per_second), build(Dimension::watts)};
  return all[static_cast<std::size_t>(d)];
}

ParsedQuantity parse_quantity(std::string_view text, Dimension d) {
  const std::string expected = std::string("expected ") + std::string(describe(d)) + " such as \"" +
                               std::string(example(d)) + "\"";
  const std::string s = trim(text);
  const char* first = s.data();
  const char* last = s.data() + s.size();
  // from_chars rejects a leading '+'; accept one, but not "+-5".
  if (first != last && *first == '+' && (first + 1 == last || (first[1] != '-' && first[1] != '+'))) ++first;
  double number = 0.0;
  const auto [end, ec] = std::from_chars(first, last, number, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    return {std::nullopt, expected + "; the number in \"" + s + "\" is out of range"};
  }
  if (ec != std::errc() || end == first) {
    return {std::nullopt, expected + ", got \"" + s + "\" (it must start with a number)"};
  }
  if (!std::isfinite(number)) return {std::nullopt, expected + ", got \"" + s + "\" (the number must be finite)"};
  const std::string_view number_text(first, static_cast<std::size_t>(end - first));
  const std::string unit = trim(std::string_view(end, static_cast<std::size_t>(last - end)));
  if (unit.empty()) {
    return {std::nullopt, expected + ", got \"" + s + "\" (the unit is missing)"};
  }
  for (const auto& u : units_of(d)) {
    if (u.name == unit) {
      const auto value = scale(number_text, u);
      if (!value) return {std::nullopt, expected + "; \"" + s + "\" is out of range"};
      return {*value, {}};
    }
  }
  const auto has_unit = [&](const std::string& name) {
    const auto& names = unit_names(d);
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const auto ends_with = [&](std::string_view suffix) {
    return unit.size() >= suffix.size() && unit.compare(unit.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (d == Dimension::bytes_per_second && (ends_with("b/s") || ends_with("bps"))) {
    // "100Mb/s", "400Gbps": bits or bytes? Name both spellings with the prefix the user typed.
    const std::string prefix = unit.substr(0, unit.size() - 3);
    const std::string bytes = prefix + "B/s";
    const std::string bits = prefix + "bit/s";
    std::string hint;
    if (has_unit(bytes)) hint += "bytes as \"" + bytes + "\"";
    if (has_unit(bits)) hint += std::string(hint.empty() ? "" : " or ") + "bits as \"" + bits + "\"";
    if (hint.empty()) hint = "bytes as \"GB/s\" or bits as \"Gbit/s\"";
    return {std::nullopt, "\"" + s + "\" is ambiguous: write " + hint};
  }
  if (d == Dimension::seconds && (unit == "min" || unit == "h" || unit == "hr" || unit == "d")) {
    return {std::nullopt, expected + ", got \"" + s + "\": minutes, hours and days are not accepted; write seconds (\"300s\")"};
  }
  // Perhaps a unit of another dimension ("55GB" where a bandwidth was expected).
  for (Dimension other : {Dimension::bytes, Dimension::seconds, Dimension::bytes_per_second,
                          Dimension::flops_per_second, Dimension::per_second, Dimension::watts}) {
    if (other == d) continue;
    for (const auto& u : units_of(other)) {
      if (u.name == unit) {
        return {std::nullopt, expected + ", got \"" + s + "\", which is " +
                                  std::string(describe(other))};
      }
    }
  }
  return {std::nullopt, expected + ", got \"" + s + "\": unknown unit \"" + unit + "\"" +
                            did_you_mean(unit, unit_names(d)) + "; units: " + quoted_list(unit_names(d))};
}

std::optional<double> parse_percentage(std::string_view text) {
  const std::string s = trim(text);
  if (s.empty() || s.back() != '%') return std::nullopt;
  double v = 0.0;
  const char* first = s.data();
  const char* last = s.data() + s.size() - 1;
  if (first != last && *first == '+' && first + 1 != last && first[1] != '-' && first[1] != '+') ++first;
  const auto [end, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec != std::errc() || end == first) return std::nullopt;
  // Everything between the number and '%' must be blank.
  for (const char* p = end; p != last; ++p) {
    if (!is_space(*p)) return std::nullopt;
  }
  if (!std::isfinite(v)) return std::nullopt;
  return v / 100.0;
}

std::string shortest_number(double v) {
  std::array<char, 64> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc()) return "nan";
  return std::string(buf.data(), end);
}

std::string format_quantity(double value, Dimension d) {
  // The shortest exact spelling over the units that keep the number >= 0.1 ("143771MiB" rather
  // than "150.754820096GB", "2039GB/s" rather than "2.039TB/s").
  std::string best;
  double best_cost = 0.0;
  for (const auto& u : format_units(d)) {
    const double x = value / u.factor();
    if (value != 0.0 && std::fabs(x) < 0.1 && u.factor() != 1.0) continue;
    const std::string text = round_trip_digits(x, u, value, d);
    // Exponent notation ("5e+10B/s") only when nothing else is exact; on equal length prefer a
    // number in [1, 1000) ("55.43GB/s" over "55430MB/s").
    const double cost = static_cast<double>(text.size()) + (text.find('e') != std::string::npos ? 100.0 : 0.0) +
                        (std::fabs(x) >= 1.0 && std::fabs(x) < 1000.0 ? 0.0 : 0.5);
    if (!text.empty() && (best.empty() || cost < best_cost)) {
      best = text;
      best_cost = cost;
    }
    if (value == 0.0) break;
  }
  if (best.empty()) best = shortest_number(value) + std::string(format_units(d).front().name);  // non-finite
  return best;
}

std::string rounded_duration(double seconds) {
  char buf[64];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  }
  return buf;
}

}  // namespace ess
