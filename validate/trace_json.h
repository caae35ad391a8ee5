// JSON text of traces and category maps to a document, in time linear in the text.
//
// The same checks as ess::parse_json_text (sim/config/json_text.h: syntax errors with line and
// column, duplicate keys with their JSON pointer, nesting deeper than kMaxJsonDepth, numbers beyond
// the double range), but built on nlohmann's SAX interface: parse_json_text uses nlohmann's
// callback parser, which scans the enclosing array for discarded values at the end of every object
// (nlohmann 3.11.2, json_sax_dom_callback_parser::end_object), i.e. O(n^2) time on a trace of n
// events: 200k events took 7 minutes. Kineto traces hold millions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ess {

// Throws TraceError naming `origin` and the position (line, column) or JSON pointer.
[[nodiscard]] nlohmann::json parse_trace_json(std::string_view text, const std::string& origin);

}  // namespace ess
