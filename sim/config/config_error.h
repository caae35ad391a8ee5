// User errors in scenario files, presets and command-line overrides.
//
// A ConfigError is bad input, never a bug: it names where the value came from (a file, a built-in
// preset or a --set argument), the JSON pointer inside it (e.g. /hardware/pcie/h2d_bandwidth) and
// what was expected. The CLI prints it and exits with code 2; library code never exits.
#pragma once

#include <stdexcept>
#include <string>

#include "sim/base/error.h"

namespace ess {

class ConfigError : public InputError {
 public:
  // origin: "scenarios/x.json", "built-in preset hardware/h200-sxm", "--set a.b=c";
  // pointer: RFC 6901 JSON pointer, empty for the whole document.
  ConfigError(std::string origin, std::string pointer, std::string message);

  [[nodiscard]] const std::string& origin() const { return origin_; }
  [[nodiscard]] const std::string& pointer() const { return pointer_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::string origin_;
  std::string pointer_;
  std::string message_;
};

}  // namespace ess
