#include "sim/offload/policy_params.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/base/error.h"

namespace ess {

namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

bool PolicyParam::admits(double value) const {
  if (!std::isfinite(value)) return false;
  const bool above = low_open ? value > low : value >= low;
  const bool below = high_open ? value < high : value <= high;
  return above && below;
}

std::string PolicyParam::range() const {
  return std::string(low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) + (high_open ? ")" : "]");
}

std::string PolicyParam::option() const {
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

void PolicyValues::set(std::string_view name, double value) {
  for (auto& [n, v] : values_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  values_.emplace_back(std::string(name), value);
}

double PolicyValues::of(const PolicyParam& param) const {
  for (const auto& [n, v] : values_) {
    if (n == param.name) return v;
  }
  return param.default_value;
}

void check_values(std::span<const PolicyParam* const> declared, const PolicyValues& values, std::string_view what) {
  for (const auto& [given_name, value] : values.given()) {
    // A named reference: clang 14 does not implement C++20's lambda capture of structured bindings.
    const std::string& name = given_name;
    const auto it = std::find_if(declared.begin(), declared.end(), [&](const PolicyParam* p) { return p->name == name; });
    if (it == declared.end()) {
      std::string names;
      for (const PolicyParam* p : declared) names += (names.empty() ? "" : ", ") + std::string(p->name);
      throw InternalError(std::string(what) + " has no parameter " + name + (names.empty() ? "" : "; declared: " + names));
    }
    if (!(*it)->admits(value)) {
      throw InternalError(std::string(what) + " " + name + " must be in " + (*it)->range() + ", got " + number_text(value));
    }
  }
}

}  // namespace ess
