// Numeric parameters a policy declares on its registry line, and the values a configuration gives
// them. The policy's own file declares each parameter once (name, summary, default, range); the
// scenario loader reads every declared parameter as cache.<name>, ess-runner takes it as
// --<name with '-' for '_'>, `ess-sim policies` lists it, and the policy reads its value with
// PolicyValues::of(). Adding a parameter to a policy touches only that policy's file.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ess {

struct PolicyParam {
  std::string_view name;     // cache.<name> in a scenario (snake_case)
  std::string_view summary;  // one line for the docs and `ess-sim policies`
  double default_value = 0.0;
  // The value lies between low and high, each bound open or closed: (0, 1] is {0, true, 1, false}.
  double low = 0.0;
  bool low_open = false;
  double high = 0.0;
  bool high_open = false;

  // Finite and within the bounds.
  [[nodiscard]] bool admits(double value) const;
  // "(0, 1]"
  [[nodiscard]] std::string range() const;
  // The command-line spelling: "heat-decay" for heat_decay.
  [[nodiscard]] std::string option() const;
};

// Values given to declared parameters, by name, in the order first given.
class PolicyValues {
 public:
  // Gives `name` a value (replacing an earlier one).
  void set(std::string_view name, double value);
  // The value given to `param`, else its default.
  [[nodiscard]] double of(const PolicyParam& param) const;
  [[nodiscard]] const std::vector<std::pair<std::string, double>>& given() const { return values_; }
  friend bool operator==(const PolicyValues&, const PolicyValues&) = default;

 private:
  std::vector<std::pair<std::string, double>> values_;
};

// Every parameter the lines of `registry` declare, each name once (the first declaration; two
// policies may share a parameter), in registry order.
template <typename Line>
[[nodiscard]] std::vector<const PolicyParam*> declared_params(std::span<const Line> registry) {
  std::vector<const PolicyParam*> out;
  for (const Line& line : registry) {
    for (const PolicyParam& p : line.params) {
      bool seen = false;
      for (const PolicyParam* q : out) seen = seen || q->name == p.name;
      if (!seen) out.push_back(&p);
    }
  }
  return out;
}

// Throws InternalError (the values come from a checked configuration) when a value of `values`
// names no parameter in `declared` or lies outside its range; `what` prefixes the message
// ("pool heat_decay must be in (0, 1], got 2").
void check_values(std::span<const PolicyParam* const> declared, const PolicyValues& values, std::string_view what);

}  // namespace ess
