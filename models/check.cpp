#include "models/check.h"

#include <sstream>
#include <stdexcept>

#include "sim/base/error.h"

namespace ess::check {

namespace {
std::string prefix(std::string_view where, std::string_view field) {
  return where.empty() ? std::string(field) : std::string(where) + ": " + std::string(field);
}
std::string with_unit(double v, std::string_view unit) {
  return unit.empty() ? number(v) : number(v) + " " + std::string(unit);
}
}  // namespace

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void at_least(std::string_view where, std::string_view field, std::int64_t value, std::int64_t min) {
  if (value < min) {
    throw InputError(prefix(where, field) + " must be >= " + std::to_string(min) + " (got " +
                     std::to_string(value) + ")");
  }
}

void positive(std::string_view where, std::string_view field, double value, std::string_view unit) {
  if (!(value > 0.0)) {
    throw InputError(prefix(where, field) + " must be > 0" + (unit.empty() ? "" : " ") + std::string(unit) +
                     " (got " + with_unit(value, unit) + ")");
  }
}

void non_negative(std::string_view where, std::string_view field, double value, std::string_view unit) {
  if (!(value >= 0.0)) {
    throw InputError(prefix(where, field) + " must be >= 0" + (unit.empty() ? "" : " ") +
                     std::string(unit) + " (got " + with_unit(value, unit) + ")");
  }
}

void fraction(std::string_view where, std::string_view field, double value) {
  if (!(value > 0.0 && value <= 1.0)) {
    throw InputError(prefix(where, field) + " must be in (0, 1] (got " + number(value) + ")");
  }
}

}  // namespace ess::check
