#include "sim/config/reader.h"

#include <cmath>
#include <limits>
#include <span>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"

namespace ess {

Origins::Origins(std::string root_origin) { by_pointer_[""] = std::move(root_origin); }

void Origins::set(const std::string& pointer, std::string origin) { by_pointer_[pointer] = std::move(origin); }

const std::string& Origins::at(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    if (const auto it = by_pointer_.find(p); it != by_pointer_.end()) return it->second;
    if (p.empty()) break;
    p.erase(p.rfind('/'));
  }
  return by_pointer_.at("");
}

bool Range::contains(double v) const {
  if (!std::isfinite(v)) return false;
  if (has_min && (min_inclusive ? v < min : v <= min)) return false;
  if (has_max && (max_inclusive ? v > max : v >= max)) return false;
  return true;
}

namespace {
// Integral values as integers ("1000000", not "1e+06"), others as the shortest exact decimal.
std::string plain_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return shortest_number(v);
}
}  // namespace

std::string Range::describe() const {
  const std::string q = qualifier();
  return q.empty() ? "a finite number" : q.substr(1);
}

std::string Range::qualifier() const {
  if (has_min && has_max) {
    return std::string(" in ") + (min_inclusive ? "[" : "(") + plain_number(min) + ", " + plain_number(max) +
           (max_inclusive ? "]" : ")");
  }
  if (has_min) return std::string(min_inclusive ? " >= " : " > ") + plain_number(min);
  if (has_max) return std::string(max_inclusive ? " <= " : " < ") + plain_number(max);
  return "";
}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string pointer, const Origins& origins)
    : ObjectReader(value, std::move(pointer), origins, nullptr, {}) {}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string pointer, const Origins& origins,
                           ObjectReader* parent, std::string key_in_parent)
    : value_(value),
      pointer_(std::move(pointer)),
      origins_(origins),
      parent_(parent),
      key_in_parent_(std::move(key_in_parent)) {
  if (!value_.is_object()) fail("", "expected an object, got " + describe_json(value_));
}

std::string ObjectReader::child_pointer(std::string_view key) const { return pointer_append(pointer_, key); }

void ObjectReader::fail(std::string_view key, const std::string& message) const {
  const std::string p = key.empty() ? pointer_ : child_pointer(key);
  throw ConfigError(origins_.at(p), p, message);
}

bool ObjectReader::has(std::string_view key) const {
  const auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return false;
  // {"value": null, "source": ...} (as `check` prints an absent optional section) is absent too.
  if (it->is_object() && it->contains("value") && it->at("value").is_null()) return false;
  return true;
}

std::optional<std::string> ObjectReader::peek_text(std::string_view object_key, std::string_view key) const {
  const auto o = value_.find(object_key);
  if (o == value_.end() || !o->is_object()) return std::nullopt;
  const auto it = o->find(key);
  if (it == o->end()) return std::nullopt;
  const nlohmann::json& v = it->is_object() && it->contains("value") ? it->at("value") : *it;
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

bool ObjectReader::has_object(std::string_view key) const {
  const auto it = value_.find(key);
  return it != value_.end() && it->is_object();
}

const nlohmann::json* ObjectReader::take(std::string_view key, std::string& source) {
  asked_.emplace(key);
  const auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  source = origins_.at(child_pointer(key));
  if (it->is_object() && it->contains("value")) {
    for (const auto& [k, v] : it->items()) {
      if (k != "value" && k != "source") {
        fail(key, "a value with provenance has only \"value\" and \"source\", got unknown key \"" + k + "\"");
      }
    }
    source = origins_.at(pointer_append(child_pointer(key), "value"));
    if (const auto s = it->find("source"); s != it->end()) {
      if (!s->is_string()) fail(key, "\"source\" must be a string, got " + describe_json(*s));
      source = s->get<std::string>();
    }
    return &it->at("value");
  }
  return &*it;
}

void ObjectReader::record(std::string_view key, const nlohmann::ordered_json& value, const std::string& source) {
  asked_.emplace(key);
  resolved_[std::string(key)] = nlohmann::ordered_json{{"value", value}, {"source", source}};
}

void ObjectReader::check_range(std::string_view key, double v, Range range) const {
  if (!range.contains(v)) fail(key, "must be " + range.describe() + ", got " + plain_number(v));
}

std::string ObjectReader::missing(std::string_view key, std::string_view noun) const {
  std::string message = "missing required " + std::string(noun) + " \"" + std::string(key) + "\"";
  for (const auto& [present, v] : value_.items()) {
    if (asked_.contains(present)) continue;
    const std::string wanted(key);
    if (closest_match(present, std::span<const std::string>(&wanted, 1))) {
      message += " (found \"" + present + "\": did you mean \"" + wanted + "\"?)";
      break;
    }
  }
  return message;
}

double ObjectReader::quantity(std::string_view key, Dimension d, Range range) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  const std::string expected = std::string(describe(d)) + " such as \"" + std::string(example(d)) + "\"";
  if (j == nullptr || j->is_null()) fail(key, missing(key) + ": expected " + expected);
  if (!j->is_string()) {
    fail(key, "expected " + expected + " (a string with a unit), got " + describe_json(*j));
  }
  const auto parsed = parse_quantity(j->get<std::string>(), d);
  if (!parsed.value) fail(key, parsed.error);
  const double v = *parsed.value;
  if (!range.contains(v)) {
    // Bounds in the quantity's own units: "in [1MB/s, 1PB/s]", "> 0s".
    std::string bounds;
    if (range.has_min && range.has_max) {
      bounds = std::string("in ") + (range.min_inclusive ? "[" : "(") + format_quantity(range.min, d) + ", " +
               format_quantity(range.max, d) + (range.max_inclusive ? "]" : ")");
    } else if (range.has_min) {
      bounds = std::string(range.min_inclusive ? ">= " : "> ") + format_quantity(range.min, d);
    } else if (range.has_max) {
      bounds = std::string(range.max_inclusive ? "<= " : "< ") + format_quantity(range.max, d);
    } else {
      bounds = range.describe();
    }
    fail(key, "must be " + bounds + ", got \"" + j->get<std::string>() + "\"");
  }
  record(key, format_quantity(v, d), source);
  return v;
}

Seconds ObjectReader::seconds(std::string_view key, Range range) {
  return Seconds(quantity(key, Dimension::seconds, range));
}
Bytes ObjectReader::bytes(std::string_view key, Range range) { return Bytes(quantity(key, Dimension::bytes, range)); }
BytesPerSecond ObjectReader::bandwidth(std::string_view key, Range range) {
  return BytesPerSecond(quantity(key, Dimension::bytes_per_second, range));
}
FlopsPerSecond ObjectReader::compute_rate(std::string_view key, Range range) {
  return FlopsPerSecond(quantity(key, Dimension::flops_per_second, range));
}

Watts ObjectReader::power(std::string_view key, Range range) { return Watts(quantity(key, Dimension::watts, range)); }
double ObjectReader::rate(std::string_view key, Range range) { return quantity(key, Dimension::per_second, range); }

bool ObjectReader::absent_recorded(std::string_view key) {
  if (has(key)) return false;
  std::string source;
  const nlohmann::json* j = take(key, source);
  record(key, nullptr, j == nullptr ? "absent" : source);
  return true;
}

std::optional<FlopsPerSecond> ObjectReader::optional_compute_rate(std::string_view key, Range range) {
  if (absent_recorded(key)) return std::nullopt;
  return compute_rate(key, range);
}

std::optional<double> ObjectReader::optional_number(std::string_view key, Range range) {
  if (absent_recorded(key)) return std::nullopt;
  return number(key, range);
}

std::int64_t ObjectReader::integer(std::string_view key, Range range) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  if (j == nullptr || j->is_null()) fail(key, missing(key) + ": expected an integer" + range.qualifier());
  if (j->is_number_unsigned() && j->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, "expected an integer" + range.qualifier() + ", got " + j->dump() + " (too large)");
  }
  if (!j->is_number_integer()) fail(key, "expected an integer" + range.qualifier() + ", got " + describe_json(*j));
  const auto v = j->get<std::int64_t>();
  check_range(key, static_cast<double>(v), range);
  record(key, v, source);
  return v;
}

std::int64_t ObjectReader::integer_or(std::string_view key, Range range, std::int64_t fallback) {
  if (has(key)) return integer(key, range);
  asked_.emplace(key);
  record(key, fallback, "default");
  return fallback;
}

Flops ObjectReader::flops(std::string_view key, Range range) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  if (j == nullptr || j->is_null()) fail(key, missing(key) + ": expected a FLOP count (a number)");
  if (!j->is_number()) fail(key, "expected a FLOP count (a plain number such as 1e9), got " + describe_json(*j));
  const double v = j->get<double>();
  check_range(key, v, range);
  record(key, v, source);
  return Flops(v);
}

double ObjectReader::number(std::string_view key, Range range) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  if (j == nullptr || j->is_null()) fail(key, missing(key) + ": expected a number" + range.qualifier());
  double v = 0.0;
  if (j->is_number()) {
    v = j->get<double>();
  } else if (j->is_string() && parse_percentage(j->get<std::string>())) {
    v = *parse_percentage(j->get<std::string>());
  } else if (j->is_string()) {
    fail(key, "expected a number" + range.qualifier() + " or a percentage such as \"90%\", got " + describe_json(*j));
  } else {
    fail(key, "expected a number" + range.qualifier() + ", got " + describe_json(*j));
  }
  check_range(key, v, range);
  record(key, v, source);
  return v;
}

double ObjectReader::number_or(std::string_view key, Range range, double fallback) {
  if (has(key)) return number(key, range);
  asked_.emplace(key);
  record(key, fallback, "default");
  return fallback;
}

std::string ObjectReader::text(std::string_view key) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  if (j == nullptr || j->is_null()) fail(key, missing(key) + ": expected a string");
  if (!j->is_string()) fail(key, "expected a string, got " + describe_json(*j));
  record(key, j->get<std::string>(), source);
  return j->get<std::string>();
}

std::optional<std::string> ObjectReader::optional_text(std::string_view key) {
  if (!has(key)) {
    asked_.emplace(key);
    return std::nullopt;
  }
  return text(key);
}

std::string ObjectReader::choice(std::string_view key, const std::vector<std::string>& choices) {
  std::string source;
  const nlohmann::json* j = take(key, source);
  if (j == nullptr || j->is_null()) {
    fail(key, missing(key) + ": expected one of " + quoted_list(choices));
  }
  if (!j->is_string()) fail(key, "expected one of " + quoted_list(choices) + ", got " + describe_json(*j));
  const auto s = j->get<std::string>();
  for (const auto& c : choices) {
    if (c == s) {
      record(key, s, source);
      return s;
    }
  }
  fail(key, "expected one of " + quoted_list(choices) + ", got \"" + s + "\"" + did_you_mean(s, choices));
}

std::string ObjectReader::choice_or(std::string_view key, const std::vector<std::string>& choices,
                                    const std::string& fallback) {
  if (has(key)) return choice(key, choices);
  asked_.emplace(key);
  record(key, fallback, "default");
  return fallback;
}

ObjectReader ObjectReader::object(std::string_view key) {
  asked_.emplace(key);
  const auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) {
    fail(key, missing(key, "object"));
  }
  resolved_[std::string(key)] = nlohmann::ordered_json::object();  // keeps reading order
  return ObjectReader(*it, child_pointer(key), origins_, this, std::string(key));
}

ObjectReader ObjectReader::object_or_empty(std::string_view key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (has(key)) return object(key);
  asked_.emplace(key);
  resolved_[std::string(key)] = nlohmann::ordered_json::object();
  return ObjectReader(empty, child_pointer(key), origins_, this, std::string(key));
}

void ObjectReader::finish() {
  std::vector<std::string> known(asked_.begin(), asked_.end());
  for (const auto& [key, v] : value_.items()) {
    if (asked_.contains(key)) continue;
    std::string message = "unknown key \"" + key + "\"" + did_you_mean(key, known);
    message += known.empty() ? "; this object takes no keys" : "; known keys here: " + quoted_list(known);
    fail(key, message);
  }
  if (parent_ != nullptr) parent_->resolved_[key_in_parent_] = resolved_;
}

}  // namespace ess
