// Request traces in the formats users have (sim/config/serving_config.h kTraceFormats): each
// format's parser, one registry line each. Every parser checks what every trace must be: arrival
// times finite, >= 0 and non-decreasing; prompt and output lengths integers in [1, 2^31]. A bad
// row is a ConfigError naming the file, the line and the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/serving/arrivals.h"

namespace ess {

struct TraceFormat {
  // The requests of `text`, arriving before `duration` seconds; `origin` names the file in errors.
  using Parse = std::vector<Request> (*)(std::string_view text, const std::string& origin, double duration);
  std::string_view name;  // kTraceFormats' name
  Parse parse;
};

// Every format of kTraceFormats, in its order.
[[nodiscard]] const std::vector<TraceFormat>& trace_formats();

// The requests of a trace in `format`; InternalError for an unknown format (the scenario loader
// refuses those first).
[[nodiscard]] std::vector<Request> parse_trace(std::string_view format, std::string_view text, const std::string& origin,
                                               double duration);

}  // namespace ess
