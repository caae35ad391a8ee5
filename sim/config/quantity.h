// Quantities with units in configuration text: "55GB/s", "1.5us", "141GB", "989TFLOP/s", "2/s", "700W".
// Rates take "/s", "/min" and "/h"; powers "W", "kW" and "mW".
//
// Decimal prefixes are powers of 1000 and binary prefixes (Ki, Mi, Gi, Ti) powers of 1024, for
// bytes and bandwidths alike: "1GB" = 1e9 B, "1GiB" = 2^30 B. Units are case-sensitive ("ms" is
// milliseconds, "Ms" is an error). Bits are written out ("400Gbit/s"); "Gb/s" is rejected as
// ambiguous.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ess {

// `per_second` is an event rate ("2/s": requests per second); `watts` an electrical power.
enum class Dimension { bytes, seconds, bytes_per_second, flops_per_second, per_second, watts };

// "a size", "a duration", "a bandwidth", "a compute rate", "a rate", "a power".
[[nodiscard]] std::string_view describe(Dimension d);
// An example value for error messages: "141GB", "1.5us", "55GB/s", "989TFLOP/s", "2/s", "700W".
[[nodiscard]] std::string_view example(Dimension d);
// Every accepted unit spelling of a dimension, in a fixed order.
[[nodiscard]] const std::vector<std::string>& unit_names(Dimension d);

struct ParsedQuantity {
  std::optional<double> value;  // in base units (B, s, B/s, FLOP/s); empty on error
  std::string error;            // why it failed, with a suggestion where one exists
};

// Parses "<number><optional spaces><unit>". The number may carry a sign, a fraction and an
// exponent; range checks (e.g. > 0) are the caller's, so "-5GB/s" parses to -5e9.
[[nodiscard]] ParsedQuantity parse_quantity(std::string_view text, Dimension d);

// "90%" -> 0.9; nullopt unless the text is a finite number followed by '%'.
[[nodiscard]] std::optional<double> parse_percentage(std::string_view text);

// Formats a base-unit value with the largest decimal prefix that keeps the number >= 1, using the
// shortest digits that parse back to exactly the same double (so formatting round-trips).
[[nodiscard]] std::string format_quantity(double value, Dimension d);

// A wall-clock duration for people, rounded: "45 s", "12 min", "3.5 h" (minutes from 120 s,
// hours from 2 h). Used by the resource limits and the sweep's ETA.
[[nodiscard]] std::string rounded_duration(double seconds);

// Shortest decimal text that parses back to exactly `v` ("0.1", "1e-07", "1.41e+11").
[[nodiscard]] std::string shortest_number(double v);

}  // namespace ess
