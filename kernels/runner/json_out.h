// The little JSON ess-runner writes by hand (the GPU machine has no JSON library): strings with
// correct escaping, and numbers printed with %.17g so that a double survives the round trip.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ess::runner {

// `text` as a quoted JSON string: '"' and '\' escaped, \b \f \n \r \t by name, the other control
// characters below 0x20 as \u00XX. Valid UTF-8 passes through unchanged; each byte of an invalid
// sequence (a GPU name or path need not be UTF-8) becomes U+FFFD, so the output is always valid.
[[nodiscard]] std::string json_string(std::string_view text);

// A finite double with %.17g (C locale): 0.5 -> "0.5", 0.1 -> "0.10000000000000001", 1e21 ->
// "1e+21". JSON has no NaN or infinity: those throw std::invalid_argument.
[[nodiscard]] std::string json_number(double value);

}  // namespace ess::runner
