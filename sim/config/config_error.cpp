#include "sim/config/config_error.h"

#include <utility>

namespace ess {

namespace {
std::string format(const std::string& origin, const std::string& pointer, const std::string& message) {
  std::string out = origin;
  if (!pointer.empty()) out += ": at " + pointer;
  out += ": " + message;
  return out;
}
}  // namespace

ConfigError::ConfigError(std::string origin, std::string pointer, std::string message)
    : InputError(format(origin, pointer, message)),
      origin_(std::move(origin)),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

}  // namespace ess
