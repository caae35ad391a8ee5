// Strict, typed reading of one JSON object of a configuration document.
//
// Every field is read through an ObjectReader, which
//  - unwraps values written with provenance, {"value": "4.8TB/s", "source": "datasheet"};
//  - checks type, unit and range and throws ConfigError naming the origin, the JSON pointer and
//    what was expected;
//  - rejects keys nobody asked for, with a "did you mean" (call finish() last);
//  - records the resolved value and its source into an output document, so `ess-sim check` can
//    print exactly what the simulator will use and where each number came from. That output is
//    itself a valid scenario (values are formatted so they parse back to the same double).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/units.h"
#include "sim/config/quantity.h"

namespace ess {

// Where each part of a merged document came from: the origin of a pointer is that of its longest
// registered prefix (a --set of /hardware/gpu/count overrides the preset of /hardware).
class Origins {
 public:
  explicit Origins(std::string root_origin);
  void set(const std::string& pointer, std::string origin);
  [[nodiscard]] const std::string& at(const std::string& pointer) const;

 private:
  std::map<std::string, std::string> by_pointer_;
};

// Range a number must lie in; the message names it ("> 0", "in [1, 64]").
struct Range {
  double min = 0.0;
  double max = 0.0;
  bool min_inclusive = true;
  bool max_inclusive = true;
  bool has_min = false;
  bool has_max = false;

  static Range positive() { return {0.0, 0.0, false, true, true, false}; }
  static Range non_negative() { return {0.0, 0.0, true, true, true, false}; }
  static Range at_least(double lo) { return {lo, 0.0, true, true, true, false}; }
  static Range closed(double lo, double hi) { return {lo, hi, true, true, true, true}; }
  static Range left_open(double lo, double hi) { return {lo, hi, false, true, true, true}; }
  static Range any() { return {}; }

  [[nodiscard]] bool contains(double v) const;
  // "in [1, 64]", "> 0", "a finite number" (for "must be ...").
  [[nodiscard]] std::string describe() const;
  // " in [1, 64]", " > 0" or "" (for "expected an integer ...").
  [[nodiscard]] std::string qualifier() const;
};

class ObjectReader {
 public:
  // `value` must be an object (else ConfigError). `pointer` is its JSON pointer in the document.
  ObjectReader(const nlohmann::json& value, std::string pointer, const Origins& origins);
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  // What was read, each leaf as {"value": ..., "source": ...}, in reading order. A child's part
  // is complete in its parent once the child's finish() ran.
  [[nodiscard]] const nlohmann::ordered_json& resolved() const { return resolved_; }

  [[nodiscard]] const std::string& pointer() const { return pointer_; }
  [[nodiscard]] bool has(std::string_view key) const;
  // The text of `key` inside the object `object_key` (a plain string or {"value": "..."}), read
  // without consuming or recording it: for choosing how to read other keys before that object is
  // read. nullopt when absent or not text.
  [[nodiscard]] std::optional<std::string> peek_text(std::string_view object_key, std::string_view key) const;

  // Required fields: a missing key is an error.
  Seconds seconds(std::string_view key, Range range);
  Bytes bytes(std::string_view key, Range range);
  BytesPerSecond bandwidth(std::string_view key, Range range);
  FlopsPerSecond compute_rate(std::string_view key, Range range);
  Watts power(std::string_view key, Range range);  // "700W"
  double rate(std::string_view key, Range range);  // events per second: "2/s", "120/min"
  Flops flops(std::string_view key, Range range);  // a FLOP count: plain number
  std::int64_t integer(std::string_view key, Range range);
  double number(std::string_view key, Range range);  // also accepts "90%"
  std::string text(std::string_view key);
  // One of `choices`; anything else is an error with a "did you mean".
  std::string choice(std::string_view key, const std::vector<std::string>& choices);

  // Optional fields: absent or null gives nullopt (recorded as null in the resolved output).
  std::optional<FlopsPerSecond> optional_compute_rate(std::string_view key, Range range);
  std::optional<std::string> optional_text(std::string_view key);
  std::optional<double> optional_number(std::string_view key, Range range);

  // Fields with a documented default, recorded with source "default".
  std::int64_t integer_or(std::string_view key, Range range, std::int64_t fallback);
  double number_or(std::string_view key, Range range, double fallback);
  std::string choice_or(std::string_view key, const std::vector<std::string>& choices,
                        const std::string& fallback);

  // A nested object; required. The child's resolved values land in resolved()[key] when the
  // child's finish() runs; the child must not outlive this reader.
  ObjectReader object(std::string_view key);
  // A nested object whose fields all have defaults: absent reads as {}.
  ObjectReader object_or_empty(std::string_view key);
  [[nodiscard]] bool has_object(std::string_view key) const;

  // "missing required key "k"" plus a hint when a present key looks like a typo of it.
  // `noun` names what is missing: "key", "object".
  [[nodiscard]] std::string missing(std::string_view key, std::string_view noun = "key") const;

  // Throws for the first key present but never asked for (sorted order, deterministic), then
  // hands the resolved values to the parent reader.
  void finish();

  // An error about `key` of this object (or the object itself when key is empty).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

  // Records a computed (derived) value in the resolved output, e.g. a default that depends on
  // other fields. Marks the key as consumed.
  void record(std::string_view key, const nlohmann::ordered_json& value, const std::string& source);

  // Raw access for fields with a custom form (e.g. "max" or an integer); marks the key consumed.
  // Returns nullptr when absent. `source` receives the provenance.
  const nlohmann::json* take(std::string_view key, std::string& source);

 private:
  double quantity(std::string_view key, Dimension d, Range range);
  // An optional field absent or null: consumed and recorded as null (true); present: false.
  bool absent_recorded(std::string_view key);
  void check_range(std::string_view key, double v, Range range) const;
  [[nodiscard]] std::string child_pointer(std::string_view key) const;

  ObjectReader(const nlohmann::json& value, std::string pointer, const Origins& origins,
               ObjectReader* parent, std::string key_in_parent);

  const nlohmann::json& value_;
  std::string pointer_;
  const Origins& origins_;
  ObjectReader* parent_ = nullptr;
  std::string key_in_parent_;
  nlohmann::ordered_json resolved_ = nlohmann::ordered_json::object();
  std::set<std::string, std::less<>> asked_;
};

}  // namespace ess
