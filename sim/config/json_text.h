// Reading JSON documents for configuration: precise syntax errors (line and column) and
// duplicate keys rejected (nlohmann::json would silently keep the last one).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ess {

// Parses `text`; `origin` names it in errors (a path, "built-in preset ...", "--set ...").
// Throws ConfigError on a syntax error ("line 3, column 7: ...") or a duplicate key (with its
// JSON pointer).
[[nodiscard]] nlohmann::json parse_json_text(std::string_view text, const std::string& origin);

// The bytes of a file; ConfigError (naming the path) when it is missing, a directory or unreadable.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);

// Reads and parses a file; ConfigError when it cannot be read.
[[nodiscard]] nlohmann::json read_json_file(const std::filesystem::path& path);

// Appends one reference token to a JSON pointer, escaping '~' and '/' (RFC 6901).
[[nodiscard]] std::string pointer_append(const std::string& pointer, std::string_view token);

// Short description of a JSON value's type for messages: "a string", "the number 55", ...
[[nodiscard]] std::string describe_json(const nlohmann::json& value);

}  // namespace ess
