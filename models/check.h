// Argument checks shared by the cost models: each throws ess::InputError (the values come from a
// hardware profile, a scenario, measurements or a `cost` argument) with a message
// "<where>: <field> must be <condition> (got <value>)". The negated comparisons reject NaN too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ess::check {

// Up to 6 significant digits ("2e-06", not std::to_string's "0.000002").
[[nodiscard]] std::string number(double v);

void at_least(std::string_view where, std::string_view field, std::int64_t value, std::int64_t min);
void positive(std::string_view where, std::string_view field, double value, std::string_view unit);
void non_negative(std::string_view where, std::string_view field, double value, std::string_view unit);
// An efficiency: in (0, 1].
void fraction(std::string_view where, std::string_view field, double value);

}  // namespace ess::check
