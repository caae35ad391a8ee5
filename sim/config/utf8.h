// UTF-8 checks for text that reaches JSON output (scenario values, file names in messages):
// nlohmann::json refuses to write invalid UTF-8, so it is caught where it enters.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ess {

// Byte offset of the first byte that does not start or continue a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF); nullopt if all is valid.
[[nodiscard]] std::optional<std::size_t> invalid_utf8_at(std::string_view text);

// `text` with every byte of an invalid sequence written as \xNN, for messages.
[[nodiscard]] std::string printable(std::string_view text);

}  // namespace ess
