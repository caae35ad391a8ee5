#include "sim/config/profile.h"

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"

namespace ess {

bool names_a_file(std::string_view hardware) {
  return hardware.find('/') != std::string_view::npos ||
         (hardware.size() > 5 && hardware.substr(hardware.size() - 5) == ".json");
}

nlohmann::json profile_hardware(std::string_view text, const std::string& origin) {
  nlohmann::json doc = parse_json_text(text, origin);
  if (!doc.is_object()) throw ConfigError(origin, "", "a hardware profile is a JSON object, got " + describe_json(doc));
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || schema->get<std::string>() != kProfileSchema) {
    throw ConfigError(origin, "/schema",
                      "not a hardware profile (expected \"schema\": \"" + std::string(kProfileSchema) +
                          "\", as `ess-sim calibrate` writes; a hardware preset is named without a path, e.g. "
                          "\"h200-sxm\")");
  }
  const auto hw = doc.find("hardware");
  if (hw == doc.end() || !hw->is_object()) {
    throw ConfigError(origin, "/hardware", "a hardware profile needs a \"hardware\" object");
  }
  return *hw;
}

nlohmann::json read_profile_hardware(const std::string& path) {
  return profile_hardware(read_text_file(path), "profile " + path);
}

}  // namespace ess
