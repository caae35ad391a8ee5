#include "sim/config/json_text.h"

#include <set>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

struct Frame {
  bool is_object = false;
  std::set<std::string> keys;
  std::string current_key;
  long index = -1;  // current element of an array
};

std::string frame_pointer(const std::vector<Frame>& frames, std::size_t count) {
  std::string p;
  for (std::size_t i = 0; i < count; ++i) {
    const Frame& f = frames[i];
    p = f.is_object ? pointer_append(p, f.current_key) : pointer_append(p, std::to_string(f.index));
  }
  return p;
}

// Line and column (both 1-based, the column counted in UTF-8 characters) of the character at
// 1-based byte position `byte`, where nlohmann stopped.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t column = 1;
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // not a UTF-8 continuation byte
      ++column;
    }
  }
  return {line, column};
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag and, for syntax errors,
// without its own "parse error at line 1, column 2: " (we report the position ourselves).
std::string strip_prefix(const std::string& what) {
  std::string m = what;
  if (!m.empty() && m.front() == '[') {
    if (const auto close = m.find("] "); close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error", 0) == 0) {
    if (const auto colon = m.find(": "); colon != std::string::npos) m = m.substr(colon + 2);
  }
  return m;
}

}  // namespace

std::string pointer_append(const std::string& pointer, std::string_view token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string describe_json(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return std::string("the boolean ") + (value.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::string: return "the string " + value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "the number " + value.dump();
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    default: return "a " + std::string(value.type_name());
  }
}

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  std::vector<Frame> frames;
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (!frames.empty() && !frames.back().is_object) ++frames.back().index;
        if (frames.size() >= kMaxJsonDepth) {
          throw ConfigError(origin, frame_pointer(frames, frames.size()),
                            "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                " levels (no ess-sim input needs more than a few)");
        }
        frames.push_back(Frame{event == E::object_start, {}, {}, -1});
        break;
      case E::key: {
        Frame& f = frames.back();
        const auto key = parsed.get<std::string>();
        if (!f.keys.insert(key).second) {
          throw ConfigError(origin, pointer_append(frame_pointer(frames, frames.size() - 1), key),
                            "duplicate key \"" + key + "\" (each key may appear once per object)");
        }
        f.current_key = key;
        break;
      }
      case E::value:
        if (!frames.empty() && !frames.back().is_object) ++frames.back().index;
        break;
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte);
    throw ConfigError(origin, "",
                      "invalid JSON at line " + std::to_string(line) + ", column " +
                          std::to_string(column) + ": " + strip_prefix(e.what()));
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but still unreadable input, e.g. a number too large for a double
    // (out_of_range.406). nlohmann gives no position for these.
    throw ConfigError(origin, "", "invalid JSON: " + strip_prefix(e.what()));
  }
}

std::string read_text_file(const std::filesystem::path& path) {
  std::string text;
  const ReadProblem problem = read_whole_file(path, text);
  if (problem == ReadProblem::none) return text;
  throw ConfigError(path.string(), "", describe(problem));
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

}  // namespace ess
