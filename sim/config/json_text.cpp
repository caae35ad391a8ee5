#include "sim/config/json_text.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

// Line and column (both 1-based, the column counted in UTF-8 characters) of the 0-based byte
// offset `byte`.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t column = 1;
  const std::size_t end = std::min(byte, text.size());
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

// Builds the document as nlohmann's own DOM parser does, with the checks added, on nlohmann's SAX
// interface. Not nlohmann's callback parser (json::parse with a callback): in nlohmann 3.11.2 it
// scans the enclosing array for discarded values at the end of every object
// (json_sax_dom_callback_parser::end_object), O(n^2) on an array of n objects: a trace of 200k
// events took minutes. Here each event costs O(log keys) (the object's std::map) and a pointer is
// built only for an error, so a parse is O(n log n) at worst.
class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  nlohmann::json& result() { return root_; }

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(nlohmann::json::binary(std::move(v))); }

  bool start_object(std::size_t /*elements*/) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t /*elements*/) override { return open(nlohmann::json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    auto& object = f.value->get_ref<nlohmann::json::object_t&>();
    if (object.contains(k)) {
      throw ConfigError(origin_, pointer_append(pointer(frames_.size() - 1), k),
                        "duplicate key \"" + k + "\" (each key may appear once per object)");
    }
    f.key = k;
    f.pending = &object[k];
    return true;
  }

  // Syntax errors, and numbers beyond the double range (nlohmann's out_of_range.406).
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    // `position` counts the bytes read, the offending one included.
    const auto [line, column] = line_column(text_, position > 0 ? position - 1 : 0);
    throw ConfigError(origin_, "",
                      "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                          strip_prefix(e.what()));
  }

 private:
  struct Frame {
    nlohmann::json* value = nullptr;
    nlohmann::json* pending = nullptr;  // objects: the member the next value fills
    std::string key;                    // objects: the current key
    std::size_t index = 0;              // arrays: elements so far
  };

  // The JSON pointer of the value being read in frame `count` - 1 (all frames below `count`).
  std::string pointer(std::size_t count) const {
    std::string p;
    for (std::size_t i = 0; i < count; ++i) {
      const Frame& f = frames_[i];
      p = f.value->is_object() ? pointer_append(p, f.key) : pointer_append(p, std::to_string(f.index == 0 ? 0 : f.index - 1));
    }
    return p;
  }

  // Where the next value goes: the root, the pending object member, or a new array element.
  nlohmann::json* slot() {
    if (frames_.empty()) return &root_;
    Frame& f = frames_.back();
    if (f.value->is_object()) return f.pending;
    auto& array = f.value->get_ref<nlohmann::json::array_t&>();
    array.emplace_back();
    ++f.index;
    return &array.back();
  }

  template <typename T>
  bool put(T&& v) {
    *slot() = nlohmann::json(std::forward<T>(v));
    return true;
  }

  bool open(nlohmann::json container) {
    nlohmann::json* target = slot();
    if (frames_.size() >= kMaxJsonDepth) {
      throw ConfigError(origin_, pointer(frames_.size()),
                        "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                            " levels (no ess-sim input needs more than a few)");
    }
    *target = std::move(container);
    // Pointers into the parent stay valid: a std::map never moves its nodes, and an array's
    // elements are only appended to while it is the innermost frame.
    frames_.push_back(Frame{target, nullptr, {}, 0});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::string& origin_;
  nlohmann::json root_;
  std::vector<Frame> frames_;
};

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
  Builder builder(text, origin);
  nlohmann::json::sax_parse(text.begin(), text.end(), &builder);
  return std::move(builder.result());
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
