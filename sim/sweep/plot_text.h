// Text helpers of the sweep charts (sim/sweep/plot_*.cpp): numbers as gnuplot reads them, lists,
// gnuplot's quoted strings and file-name parts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess::plot {

using Json = nlohmann::json;
using Record = nlohmann::ordered_json;

// The shortest text that reads back as `v` to 10 significant digits ("%.10g").
[[nodiscard]] std::string num(double v);
[[nodiscard]] std::string join(const std::vector<std::string>& parts, const std::string& sep);
// "a", "a and b", "a, b and c".
[[nodiscard]] std::string and_list(const std::vector<std::string>& items);
// One line of text: control characters (a newline in a JSON string) become spaces.
[[nodiscard]] std::string one_line(std::string s);
// A gnuplot single-quoted string: nothing is special inside but the quote, written twice.
[[nodiscard]] std::string quote(const std::string& s);
// A string value as itself, any other JSON value as its compact JSON.
[[nodiscard]] std::string scalar_text(const Json& v);
// A file name part: letters, digits and . _ + = - kept, anything else '_'.
[[nodiscard]] std::string file_part(const std::string& text);

}  // namespace ess::plot
