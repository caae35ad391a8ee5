// Reading untrusted JSON documents (scenarios, presets, profiles, measurements, traces): precise
// syntax errors (line and column) and duplicate keys rejected (nlohmann::json would silently keep
// the last one), in time linear in the text (traces hold millions of events).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ess {

// Deepest nesting of objects and arrays accepted. Real inputs nest a handful of levels; the
// limit keeps recursive code downstream (preset merging, validation) off the end of the stack.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text`; `origin` names it in errors (a path, "built-in preset ...", "--set ...").
// Throws ConfigError on a syntax error or a number beyond the double range ("invalid JSON at
// line 3, column 7: ..."), a duplicate key (with its JSON pointer) or nesting deeper than
// kMaxJsonDepth; nothing else for any input.
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
