#include "sim/config/quantity.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "models/units.h"
#include "sim/config/did_you_mean.h"

namespace ess {

namespace {

// One unit: value in base units = number x multiplier / divisor. Sub-units divide by an exact
// power of ten ("0.82us" = 0.82 / 1e6) so that every spelling of a value rounds the same way.
struct Unit {
  std::string_view name;
  double multiplier;
  double divisor = 1.0;
  [[nodiscard]] constexpr double factor() const { return multiplier / divisor; }
};

constexpr double kBitsPerByte = 8.0;

constexpr std::array kByteUnits = {
    Unit{"B", 1.0},      Unit{"kB", kKilo}, Unit{"KB", kKilo},   Unit{"MB", kMega},
    Unit{"GB", kGiga},   Unit{"TB", kTera}, Unit{"PB", kPeta},   Unit{"KiB", kKibi},
    Unit{"MiB", kMebi},  Unit{"GiB", kGibi}, Unit{"TiB", kTebi},
};

constexpr std::array kTimeUnits = {
    Unit{"s", 1.0}, Unit{"ms", 1.0, 1e3}, Unit{"us", 1.0, 1e6}, Unit{"\xC2\xB5s", 1.0, 1e6}, Unit{"ns", 1.0, 1e9},
};

constexpr std::array kBandwidthUnits = {
    Unit{"B/s", 1.0},      Unit{"kB/s", kKilo},   Unit{"KB/s", kKilo},   Unit{"MB/s", kMega},
    Unit{"GB/s", kGiga},   Unit{"TB/s", kTera},   Unit{"KiB/s", kKibi},  Unit{"MiB/s", kMebi},
    Unit{"GiB/s", kGibi},  Unit{"TiB/s", kTebi},  Unit{"bit/s", 1.0, kBitsPerByte},
    Unit{"kbit/s", kKilo, kBitsPerByte},        Unit{"Mbit/s", kMega, kBitsPerByte},
    Unit{"Gbit/s", kGiga, kBitsPerByte},        Unit{"Tbit/s", kTera, kBitsPerByte},
};

constexpr std::array kComputeUnits = {
    Unit{"FLOP/s", 1.0},     Unit{"GFLOP/s", kGiga}, Unit{"TFLOP/s", kTera}, Unit{"PFLOP/s", kPeta},
    Unit{"FLOPS", 1.0},      Unit{"GFLOPS", kGiga},  Unit{"TFLOPS", kTera},  Unit{"PFLOPS", kPeta},
};

std::span<const Unit> units_of(Dimension d) {
  switch (d) {
    case Dimension::bytes: return kByteUnits;
    case Dimension::seconds: return kTimeUnits;
    case Dimension::bytes_per_second: return kBandwidthUnits;
    case Dimension::flops_per_second: return kComputeUnits;
  }
  return {};
}

// Units tried when formatting, in order of preference on ties; every one is also parsed.
std::span<const Unit> format_units(Dimension d) {
  static constexpr std::array bytes = {Unit{"B", 1.0},     Unit{"kB", kKilo},  Unit{"MB", kMega},
                                       Unit{"GB", kGiga},  Unit{"TB", kTera},  Unit{"PB", kPeta},
                                       Unit{"KiB", kKibi}, Unit{"MiB", kMebi}, Unit{"GiB", kGibi},
                                       Unit{"TiB", kTebi}};
  static constexpr std::array time = {Unit{"s", 1.0}, Unit{"ms", 1.0, 1e3}, Unit{"us", 1.0, 1e6}, Unit{"ns", 1.0, 1e9}};
  static constexpr std::array bandwidth = {Unit{"B/s", 1.0},      Unit{"kB/s", kKilo},   Unit{"MB/s", kMega},
                                           Unit{"GB/s", kGiga},   Unit{"TB/s", kTera},   Unit{"KiB/s", kKibi},
                                           Unit{"MiB/s", kMebi},  Unit{"GiB/s", kGibi},  Unit{"TiB/s", kTebi}};
  static constexpr std::array compute = {Unit{"FLOP/s", 1.0}, Unit{"GFLOP/s", kGiga}, Unit{"TFLOP/s", kTera},
                                         Unit{"PFLOP/s", kPeta}};
  switch (d) {
    case Dimension::bytes: return bytes;
    case Dimension::seconds: return time;
    case Dimension::bytes_per_second: return bandwidth;
    case Dimension::flops_per_second: return compute;
  }
  return {};
}

// The fewest significant digits (1..17) of `x` that parse back to exactly `target` once
// in `unit`; empty when none does.
std::string round_trip_digits(double x, const Unit& unit, double target, Dimension d) {
  std::string with_exponent;  // used only when no plain spelling is exact
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
  }
  return "a quantity";
}

std::string_view example(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "141GB";
    case Dimension::seconds: return "1.5us";
    case Dimension::bytes_per_second: return "55GB/s";
    case Dimension::flops_per_second: return "989TFLOP/s";
  }
  return "";
}

const std::vector<std::string>& unit_names(Dimension d) {
  static const auto build = [](Dimension dim) {
    std::vector<std::string> names;
    for (const auto& u : units_of(dim)) names.emplace_back(u.name);
    return names;
  };
  static const std::array<std::vector<std::string>, 4> all = {
      build(Dimension::bytes), build(Dimension::seconds), build(Dimension::bytes_per_second),
      build(Dimension::flops_per_second)};
  return all[static_cast<std::size_t>(d)];
}

ParsedQuantity parse_quantity(std::string_view text, Dimension d) {
  const std::string expected = std::string("expected ") + std::string(describe(d)) + " such as \"" +
                               std::string(example(d)) + "\"";
  const std::string s = trim(text);
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+') ++first;  // from_chars rejects a leading '+'
  double number = 0.0;
  const auto [end, ec] = std::from_chars(first, last, number, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    return {std::nullopt, expected + "; the number in \"" + s + "\" is out of range"};
  }
  if (ec != std::errc() || end == first) {
    return {std::nullopt, expected + ", got \"" + s + "\" (it must start with a number)"};
  }
  const std::string unit = trim(std::string_view(end, static_cast<std::size_t>(last - end)));
  if (unit.empty()) {
    return {std::nullopt, expected + ", got \"" + s + "\" (the unit is missing)"};
  }
  for (const auto& u : units_of(d)) {
    if (u.name == unit) {
      const double value = number * u.multiplier / u.divisor;
      if (!std::isfinite(value)) return {std::nullopt, expected + "; \"" + s + "\" is out of range"};
      return {value, {}};
    }
  }
  if (d == Dimension::bytes_per_second && unit.size() >= 3 && unit.substr(unit.size() - 3) == "b/s") {
    return {std::nullopt, "\"" + s + "\" is ambiguous: write bytes as \"GB/s\" or bits as \"Gbit/s\""};
  }
  // Perhaps a unit of another dimension ("55GB" where a bandwidth was expected).
  for (Dimension other : {Dimension::bytes, Dimension::seconds, Dimension::bytes_per_second,
                          Dimension::flops_per_second}) {
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
    const double x = value * u.divisor / u.multiplier;
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
  if (best.empty()) best = shortest_number(value) + std::string(format_units(d).front().name);
  return best;
}

}  // namespace ess
